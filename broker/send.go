package broker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/broker/metadata"
	"github.com/openrmq/rocketmq-operator/broker/retry"
	"github.com/openrmq/rocketmq-operator/broker/schedule"
	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/broker/transaction"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/names"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// sendHeader is SendMessageRequestHeader. SEND_MESSAGE_V2 and batches carry the same
// fields under single-letter names (sendV2Letters).
type sendHeader struct {
	ProducerGroup         string `rmq:"producerGroup,required"`
	Topic                 string `rmq:"topic,required"`
	DefaultTopic          string `rmq:"defaultTopic,required"`
	DefaultTopicQueueNums int32  `rmq:"defaultTopicQueueNums,required"`
	QueueID               int32  `rmq:"queueId,required"`
	SysFlag               int32  `rmq:"sysFlag,required"`
	BornTimestamp         int64  `rmq:"bornTimestamp,required"`
	Flag                  int32  `rmq:"flag,required"`
	Properties            string `rmq:"properties"`
	ReconsumeTimes        int32  `rmq:"reconsumeTimes"`
	UnitMode              bool   `rmq:"unitMode"`
	Batch                 bool   `rmq:"batch"`
	MaxReconsumeTimes     *int32 `rmq:"maxReconsumeTimes"`
}

// sendV2Letters decodes a send's header as SendMessageRequestHeaderV2 carries it: each
// field under a single letter; batches and SEND_REPLY_MESSAGE_V2 use them too.
var sendV2Letters = remoting.NewRenamedHeader(sendHeader{}, map[string]string{
	"producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d",
	"queueId": "e", "sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i",
	"reconsumeTimes": "j", "unitMode": "k", "maxReconsumeTimes": "l", "batch": "m", "bname": "n",
})

func decodeSendHeader(req *remoting.Command) (*sendHeader, error) {
	h := &sendHeader{}
	_, v1Names := req.LookupField("topic")
	v2 := req.Code == remoting.SendMessageV2 || req.Code == remoting.SendBatchMessage || req.Code == remoting.SendReplyMessageV2
	var err error
	if v2 && !v1Names {
		err = sendV2Letters.Decode(req, h)
	} else {
		err = remoting.DecodeHeader(req, h)
	}
	if err != nil {
		return nil, err
	}
	return h, nil
}

// propertyCluster is Java's MessageConst.PROPERTY_CLUSTER: the cluster that stored a
// message, stamped on what producers send.
const propertyCluster = "CLUSTER"

// Response header fields of a send.
const (
	fieldMsgID       = "msgId"
	fieldQueueID     = "queueId"
	fieldQueueOffset = "queueOffset"
	defaultRegion    = "DefaultRegion"
)

// notAllowedSendTopics are written by the broker only (Java's TopicValidator).
var notAllowedSendTopics = map[string]bool{
	protocol.ScheduleTopic: true, protocol.TransHalfTopic: true, protocol.TransOpHalfTopic: true,
	protocol.CheckpointTopic: true,
}

func (b *Broker) handleSend(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	h, err := decodeSendHeader(req)
	if err != nil {
		return nil, err
	}
	c := b.cfg.Get()
	if resp := brokerWriteRefusal(req, &c); resp != nil {
		return resp, nil
	}
	if resp := b.refuseWhenBusy(req, &c); resp != nil {
		return resp, nil
	}
	if b.refusesWrites(&c) {
		// 4.9.7's store refuses puts on a slave (PutMessageStatus.SERVICE_NOT_AVAILABLE).
		return req.NewResponse(remoting.ServiceNotAvailable, "service not available now: the broker is a slave, messages are put to the master"), nil
	}
	if resp, err := b.checkSendTarget(conn, req, h); resp != nil || err != nil {
		return resp, err
	}
	born := conn.RemoteAddrPort()

	var msgs []*message.Message
	if req.Code == remoting.SendBatchMessage {
		if strings.HasPrefix(h.Topic, protocol.RetryGroupTopicPrefix) {
			return req.NewResponse(remoting.MessageIllegal, "batch request does not support retry group "+h.Topic), nil
		}
		items, err := message.DecodeBatch(req.Body)
		if err != nil {
			return req.NewResponse(remoting.MessageIllegal, err.Error()), nil
		}
		if len(items) == 0 {
			return req.NewResponse(remoting.MessageIllegal, "empty batch"), nil
		}
		for _, it := range items {
			m := &message.Message{Topic: h.Topic, QueueID: h.QueueID, Flag: it.Flag, SysFlag: h.SysFlag,
				Body: it.Body, Properties: it.Properties, BornTimestamp: h.BornTimestamp, BornHost: born}
			if resp := b.checkMessage(req, m, c.MaxMessageSize); resp != nil {
				return resp, nil
			}
			if d := m.Property(message.PropertyDelayTimeLevel); d != "" && d != "0" {
				return req.NewResponse(remoting.MessageIllegal, "batch messages do not support delay levels"), nil
			}
			m.Properties = message.AppendProperty(m.Properties, propertyCluster, c.BrokerClusterName)
			msgs = append(msgs, m)
		}
	} else {
		m := &message.Message{Topic: h.Topic, QueueID: h.QueueID, Flag: h.Flag, SysFlag: h.SysFlag,
			Body: req.Body, Properties: h.Properties, BornTimestamp: h.BornTimestamp, BornHost: born,
			ReconsumeTimes: h.ReconsumeTimes}
		if resp := b.checkMessage(req, m, c.MaxMessageSize); resp != nil {
			return resp, nil
		}
		if resp, err := b.redirectMessage(req, &c, h, m); resp != nil || err != nil {
			return resp, err
		}
		m.Properties = message.AppendProperty(m.Properties, propertyCluster, c.BrokerClusterName)
		msgs = append(msgs, m)
	}

	putStart := b.metrics.putStart()
	res, durable, err := b.puts.append(msgs, putSend)
	if err != nil {
		return putErrorResponse(req, err), nil
	}
	b.metrics.sent(h.Topic, sendMessageType(h.Topic, msgs[0]), res.MsgCount, res.Size)
	resp := req.NewResponse(remoting.Success, "")
	resp.SetField(fieldMsgID, strings.Join(res.MsgIDs, ","))
	// The queue the producer chose, even when the message was redirected (Java does so).
	resp.SetField(fieldQueueID, strconv.Itoa(int(h.QueueID)))
	resp.SetField(fieldQueueOffset, strconv.FormatInt(res.QueueOffset, 10))
	resp.SetField(message.PropertyMsgRegion, defaultRegion)
	resp.SetField(message.PropertyTraceSwitch, "true")
	waitSlave := b.syncMasterWait(&c, h.Properties)
	if c.FlushDiskType != store.SyncFlush && !waitSlave {
		durable.Wait() // returns at once
		b.metrics.stored(putStart)
		return resp, nil
	}
	// Wait for the group commit and/or the slave off the send pool, as Java 4.9's async
	// put does: a worker held per waiting send would cap throughput at the pool size.
	flushed := func(st store.PutStatus) {
		if st == store.PutFlushDiskTimeout {
			resp.Code = remoting.FlushDiskTimeout
			resp.Remark = "flush disk timeout"
		}
		b.metrics.stored(putStart)
	}
	if !waitSlave {
		// Answered from the group commit's notification: no goroutine per waiting send.
		answer := b.server.ReplyDeferred(conn, req)
		durable.Notify(func(st store.PutStatus) {
			flushed(st)
			answer(resp)
		})
		return nil, nil
	}
	// As in Java, the slave's answer decides over the flush's, and the slave's time
	// (slaveTimeout) runs from the append, alongside the flush.
	end := res.PhysicalOffset + int64(res.Size)
	timeout := c.SlaveTimeout // not c in the closure: c would escape, a copy per send
	start := time.Now()
	b.server.ReplyLater(conn, req, func() *remoting.Command {
		flushed(durable.Wait())
		ctx, cancel := context.WithDeadline(context.Background(), start.Add(timeout))
		b.waitSlave(ctx, end, resp)
		cancel()
		return resp
	})
	return nil, nil
}

// brokerWriteRefusal refuses a send when brokerPermission is not writeable.
func brokerWriteRefusal(req *remoting.Command, c *config.Config) *remoting.Command {
	if !protocol.IsWriteable(c.BrokerPermission) {
		return req.NewResponse(remoting.NoPermission, fmt.Sprintf("the broker[%s] sending message is forbidden", c.BrokerIP1))
	}
	return nil
}

// checkSendTarget runs Java's msgCheck on h's topic and queue: a legal, sendable topic
// (created when the default topic allows), writeable, and a queue id in range. It picks
// a random queue when h.QueueID < 0.
func (b *Broker) checkSendTarget(conn *remoting.Conn, req *remoting.Command, h *sendHeader) (*remoting.Command, error) {
	if err := names.Topic(h.Topic); err != nil {
		return nil, err
	}
	if notAllowedSendTopics[h.Topic] {
		return req.NewResponse(remoting.NoPermission, fmt.Sprintf("Sending message to topic[%s] is forbidden.", h.Topic)), nil
	}
	tc, ok := b.topics.Get(h.Topic)
	if !ok {
		var err error
		if strings.HasPrefix(h.Topic, protocol.RetryGroupTopicPrefix) {
			tc, err = b.topics.Ensure(h.Topic, 1, protocol.PermRead|protocol.PermWrite, 0)
		} else {
			var created bool
			tc, created, err = b.topics.CreateForSend(h.Topic, h.DefaultTopic, int(h.DefaultTopicQueueNums), 0)
			if created {
				b.log.Info("topic auto-created", "topic", h.Topic, "queues", tc.WriteQueueNums, "producer", conn.RemoteAddr())
			}
		}
		if err != nil {
			if errors.Is(err, metadata.ErrTopicNotExist) {
				return req.NewResponse(remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist, apply first please!", h.Topic)), nil
			}
			return nil, err
		}
	}
	if !protocol.IsWriteable(tc.Perm) {
		return req.NewResponse(remoting.NoPermission, fmt.Sprintf("the topic[%s] sending message is forbidden", h.Topic)), nil
	}
	if h.QueueID >= int32(max(tc.WriteQueueNums, tc.ReadQueueNums)) {
		return req.NewResponse(remoting.SystemError, fmt.Sprintf("request queueId[%d] is illegal, %s Producer: %s",
			h.QueueID, tc.TopicName, conn.RemoteAddr())), nil
	}
	if h.QueueID < 0 {
		h.QueueID = int32(rand.IntN(max(tc.WriteQueueNums, 1)))
	}
	return nil, nil
}

// checkMessage refuses what the record format or the size limit cannot take.
func (b *Broker) checkMessage(req *remoting.Command, m *message.Message, maxSize int) *remoting.Command {
	if len(m.Body) > maxSize {
		return req.NewResponse(remoting.MessageIllegal, fmt.Sprintf("the message body size over max value, MAX: %d", maxSize))
	}
	if err := m.Check(); err != nil {
		return req.NewResponse(remoting.MessageIllegal, err.Error())
	}
	return nil
}

// redirectMessage applies what the broker does to special single messages: retries past
// their limit go to the DLQ, transaction half messages to RMQ_SYS_TRANS_HALF_TOPIC
// (package transaction), delayed messages to SCHEDULE_TOPIC_XXXX (package schedule).
func (b *Broker) redirectMessage(req *remoting.Command, c *config.Config, h *sendHeader, m *message.Message) (*remoting.Command, error) {
	if strings.HasPrefix(m.Topic, protocol.RetryGroupTopicPrefix) {
		group := strings.TrimPrefix(m.Topic, protocol.RetryGroupTopicPrefix)
		gc, ok, err := b.groups.GetOrCreate(group, c.AutoCreateSubscriptionGroup)
		if err != nil {
			return nil, err
		}
		if !ok {
			return req.NewResponse(remoting.SubscriptionNotExist, "subscription group not exist, "+group), nil
		}
		maxTimes := int32(gc.RetryMaxTimes)
		if h.MaxReconsumeTimes != nil && req.Version >= versionV3_4_9 {
			maxTimes = *h.MaxReconsumeTimes
		}
		// Java's handleRetryAndDLQ: a client that could not send a message back sends it
		// here itself with reconsumeTimes already incremented, and it is dead once that
		// reaches the limit (the same >= as CONSUMER_SEND_MSG_BACK's).
		if h.ReconsumeTimes >= maxTimes {
			dlq := retry.DLQTopic(group)
			if _, err := b.topics.Ensure(dlq, retry.DLQQueueNums, retry.TopicPerm, 0); err != nil {
				return nil, err
			}
			b.metrics.toDLQ(group, m, m.Topic)
			m.Topic, m.QueueID = dlq, 0
			// Dead now, not later: the DELAY the client set for the next retry goes
			// (Java's setDelayTimeLevel(0)), or the message would be scheduled instead.
			p, err := message.DeleteProperty(m.Properties, message.PropertyDelayTimeLevel)
			if err != nil {
				return req.NewResponse(remoting.MessageIllegal, err.Error()), nil
			}
			m.Properties = p
		}
	}
	if transaction.IsPrepared(m) {
		if c.RejectTransactionMessage {
			return req.NewResponse(remoting.NoPermission, fmt.Sprintf("the broker[%s] sending transaction message is forbidden", c.BrokerIP1)), nil
		}
		if err := transaction.ToHalf(m); err != nil {
			return req.NewResponse(remoting.MessageIllegal, err.Error()), nil
		}
		return nil, nil
	}
	if _, err := schedule.ToSchedule(m, b.store.MaxDelayLevel()); err != nil {
		return req.NewResponse(remoting.MessageIllegal, err.Error()), nil
	}
	return nil, nil
}

func putErrorResponse(req *remoting.Command, err error) *remoting.Command {
	switch {
	case errors.Is(err, store.ErrMessageTooLarge), errors.Is(err, store.ErrBadMessage):
		return req.NewResponse(remoting.MessageIllegal, err.Error())
	case errors.Is(err, store.ErrClosed):
		return req.NewResponse(remoting.ServiceNotAvailable, "the message store is shutting down")
	default:
		return req.NewResponse(remoting.SystemError, "put message failed: "+err.Error())
	}
}
