// Package retry builds the message a broker stores for
// CONSUMER_SEND_MSG_BACK (36): a consumer gives a message back after a
// failed consumption, and it goes to the group's retry topic (delayed) or,
// once retried too often, to the group's dead-letter topic. Pure logic:
// the broker looks the original up, creates the target topic, applies the
// delay (schedule.ToSchedule) and puts the message.
package retry

import (
	"errors"
	"strconv"

	"github.com/openrmq/rocketmq-operator/pkg/message"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// Topic prefixes and defaults (Java MixAll, SubscriptionGroupConfig).
const (
	RetryTopicPrefix      = protocol.RetryGroupTopicPrefix
	DLQTopicPrefix        = protocol.DLQGroupTopicPrefix
	DefaultRetryMaxTimes  = 16 // SubscriptionGroupConfig.retryMaxTimes
	DefaultRetryQueueNums = 1  // SubscriptionGroupConfig.retryQueueNums
	DLQQueueNums          = 1  // MixAll.DLQ_NUMS_PER_GROUP
	TopicPerm             = 6  // PERM_READ|PERM_WRITE, for both topics
	firstDelayLevel       = 3  // level of the first retry (10 s)
)

// ErrNoGroup reports an empty consumer group.
var ErrNoGroup = errors.New("retry: empty consumer group")

// RetryTopic is the retry topic of a consumer group.
func RetryTopic(group string) string { return RetryTopicPrefix + group }

// DLQTopic is the dead-letter topic of a consumer group.
func DLQTopic(group string) string { return DLQTopicPrefix + group }

// Request holds what CONSUMER_SEND_MSG_BACK and the group config say.
type Request struct {
	Group      string
	DelayLevel int32 // header delayLevel: 0 = broker decides, < 0 = straight to the DLQ
	// MaxReconsumeTimes is the header's maxReconsumeTimes; nil when absent
	// or when the request version is older than V3_4_9 (Java ignores it
	// then). It overrides the group's RetryMaxTimes.
	MaxReconsumeTimes *int32
	// Group config (SubscriptionGroupConfig); zero values mean the defaults.
	RetryMaxTimes  int32
	RetryQueueNums int32 // 0 means DefaultRetryQueueNums
	RetryDisabled  bool  // the group's retryQueueNums is <= 0: the message is dropped
}

// Result is what the broker must store.
type Result struct {
	// Drop: the group has no retry queues; answer SUCCESS, store nothing.
	Drop bool
	// DLQ: Message goes to the dead-letter topic.
	DLQ bool
	// Topic to create if missing, with QueueNums queues and perm TopicPerm.
	Topic     string
	QueueNums int32
	// Message to put (its QueueID chosen among QueueNums by pick). For the
	// retry topic it carries the DELAY level: run schedule.ToSchedule on it
	// before PutMessage.
	Message *message.Message
}

// Build computes the send-back message for orig (the message looked up by
// the header's commitlog offset). pick(n) chooses a queue in [0, n); nil
// picks 0.
func Build(orig *message.MessageExt, req Request, pick func(n int32) int32) (*Result, error) {
	if req.Group == "" {
		return nil, ErrNoGroup
	}
	if req.RetryDisabled {
		return &Result{Drop: true}, nil
	}
	if pick == nil {
		pick = func(int32) int32 { return 0 }
	}
	queues := req.RetryQueueNums
	if queues <= 0 {
		queues = DefaultRetryQueueNums
	}
	maxTimes := req.RetryMaxTimes
	if maxTimes <= 0 {
		maxTimes = DefaultRetryMaxTimes
	}
	if req.MaxReconsumeTimes != nil {
		maxTimes = *req.MaxReconsumeTimes
	}

	props := message.DecodeProperties(orig.Properties)
	if props.Get(message.PropertyRetryTopic) == "" {
		props.Set(message.PropertyRetryTopic, orig.Topic)
	}
	props.Set(message.PropertyWaitStoreMsgOK, "false")
	if props.Get(message.PropertyOriginMessageID) == "" {
		// Java uses the looked-up message's msgId, which on the broker is
		// the offsetMsgId.
		props.Set(message.PropertyOriginMessageID, orig.OffsetMsgID())
	}

	res := &Result{Topic: RetryTopic(req.Group), QueueNums: queues}
	if orig.ReconsumeTimes >= maxTimes || req.DelayLevel < 0 {
		res.DLQ, res.Topic, res.QueueNums = true, DLQTopic(req.Group), DLQQueueNums
		props.Delete(message.PropertyDelayTimeLevel)
	} else {
		level := req.DelayLevel
		if level == 0 {
			level = firstDelayLevel + orig.ReconsumeTimes
		}
		props.Set(message.PropertyDelayTimeLevel, strconv.Itoa(int(level)))
	}
	p, err := props.Encode()
	if err != nil {
		return nil, err
	}
	qid := pick(res.QueueNums)
	if qid < 0 || qid >= res.QueueNums {
		qid = 0
	}
	res.Message = &message.Message{
		Topic: res.Topic, QueueID: qid, Flag: orig.Flag, SysFlag: orig.SysFlag, Body: orig.Body,
		Properties: p, BornTimestamp: orig.BornTimestamp, BornHost: orig.BornHost,
		ReconsumeTimes: orig.ReconsumeTimes + 1,
	}
	return res, nil
}
