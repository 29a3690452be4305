package broker

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/openrmq/rocketmq-operator/broker/retry"
	"github.com/openrmq/rocketmq-operator/broker/schedule"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// sendBackHeader is ConsumerSendMsgBackRequestHeader.
type sendBackHeader struct {
	Offset            int64  `rmq:"offset,required"`
	Group             string `rmq:"group,required"`
	DelayLevel        int32  `rmq:"delayLevel,required"`
	OriginMsgID       string `rmq:"originMsgId"`
	OriginTopic       string `rmq:"originTopic"`
	UnitMode          bool   `rmq:"unitMode"`
	MaxReconsumeTimes *int32 `rmq:"maxReconsumeTimes"`
}

// handleSendBack serves CONSUMER_SEND_MSG_BACK: a consumer gives back a message it
// failed to consume. It goes to %RETRY%<group> through SCHEDULE_TOPIC_XXXX (delay level
// 3 + reconsume times), or to %DLQ%<group> once retried too often.
func (b *Broker) handleSendBack(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h sendBackHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	c := b.cfg.Get()
	if resp := b.refuseWhenBusy(req, &c); resp != nil {
		return resp, nil
	}
	gc, ok, err := b.groups.GetOrCreate(h.Group, c.AutoCreateSubscriptionGroup)
	if err != nil {
		return nil, err
	}
	if !ok {
		return req.NewResponse(remoting.SubscriptionGroupNotExist, "subscription group not exist, "+h.Group), nil
	}
	if !protocol.IsWriteable(c.BrokerPermission) {
		return req.NewResponse(remoting.NoPermission, fmt.Sprintf("the broker[%s] sending message is forbidden", c.BrokerIP1)), nil
	}
	if b.refusesWrites(&c) {
		// 4.9.7: the slave's store refuses the put; the send-back answers SYSTEM_ERROR
		// with the put status as remark. The client then sends the message itself.
		return req.NewResponse(remoting.SystemError, "SERVICE_NOT_AVAILABLE"), nil
	}
	rec, err := b.store.CopyRawMessage(h.Offset)
	if err != nil {
		return req.NewResponse(remoting.SystemError, fmt.Sprintf("look message by offset failed, %d", h.Offset)), nil
	}
	orig, err := message.DecodeRecord(rec, false)
	if err != nil {
		return nil, fmt.Errorf("look message by offset failed, %d: %w", h.Offset, err)
	}
	r := retry.Request{Group: h.Group, DelayLevel: h.DelayLevel, RetryMaxTimes: int32(gc.RetryMaxTimes),
		RetryQueueNums: int32(gc.RetryQueueNums), RetryDisabled: gc.RetryQueueNums <= 0}
	if req.Version >= versionV3_4_9 {
		r.MaxReconsumeTimes = h.MaxReconsumeTimes
	}
	res, err := retry.Build(orig, r, rand.Int32N)
	if err != nil {
		return nil, err
	}
	if res.Drop {
		return req.NewResponse(remoting.Success, ""), nil
	}
	perm := retry.TopicPerm
	if _, err := b.topics.Ensure(res.Topic, int(res.QueueNums), perm, 0); err != nil {
		return nil, fmt.Errorf("topic[%s] not exist: %w", res.Topic, err)
	}
	m := res.Message
	m.BornHost = orig.BornHost
	if !res.DLQ {
		if _, err := schedule.ToSchedule(m, b.store.MaxDelayLevel()); err != nil {
			return nil, err
		}
	}
	if _, err := b.puts.put(putRequeued, m); err != nil {
		return putErrorResponse(req, err), nil
	}
	if res.DLQ {
		b.metrics.toDLQ(h.Group, m, orig.Topic)
	}
	return req.NewResponse(remoting.Success, ""), nil
}
