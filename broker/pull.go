package broker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/broker/filter"
	"github.com/openrmq/rocketmq-operator/broker/longpoll"
	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// PullSysFlag bits.
const (
	pullCommitOffset = 1 << 0
	pullSuspend      = 1 << 1
	pullSubscription = 1 << 2
	pullClassFilter  = 1 << 3
	pullLitePull     = 1 << 4
)

// pullHeader is PullMessageRequestHeader.
type pullHeader struct {
	ConsumerGroup        string `rmq:"consumerGroup,required"`
	Topic                string `rmq:"topic,required"`
	QueueID              int32  `rmq:"queueId,required"`
	QueueOffset          int64  `rmq:"queueOffset,required"`
	MaxMsgNums           int32  `rmq:"maxMsgNums,required"`
	SysFlag              int32  `rmq:"sysFlag,required"`
	CommitOffset         int64  `rmq:"commitOffset,required"`
	SuspendTimeoutMillis int64  `rmq:"suspendTimeoutMillis,required"`
	Subscription         string `rmq:"subscription"`
	SubVersion           int64  `rmq:"subVersion,required"`
	ExpressionType       string `rmq:"expressionType"`
}

func (b *Broker) handlePull(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	return b.pull(conn, req, true)
}

// pull serves one pull. With allowSuspend, a pull that finds nothing and carries the
// SUSPEND flag is held and answered later (nil is returned).
func (b *Broker) pull(conn *remoting.Conn, req *remoting.Command, allowSuspend bool) (*remoting.Command, error) {
	var h pullHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	c := b.cfg.Get()
	if !protocol.IsReadable(c.BrokerPermission) {
		return req.NewResponse(remoting.NoPermission, fmt.Sprintf("the broker[%s] pulling message is forbidden", c.BrokerIP1)), nil
	}
	gc, ok, err := b.groups.GetOrCreate(h.ConsumerGroup, c.AutoCreateSubscriptionGroup)
	if err != nil {
		return nil, err
	}
	if !ok {
		return req.NewResponse(remoting.SubscriptionGroupNotExist, fmt.Sprintf("subscription group [%s] does not exist", h.ConsumerGroup)), nil
	}
	if !gc.ConsumeEnable {
		return req.NewResponse(remoting.NoPermission, "subscription group no permission, "+h.ConsumerGroup), nil
	}
	tc, ok := b.topics.Get(h.Topic)
	if !ok {
		return req.NewResponse(remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist, apply first please!", h.Topic)), nil
	}
	if !protocol.IsReadable(tc.Perm) {
		return req.NewResponse(remoting.NoPermission, fmt.Sprintf("the topic[%s] pulling message is forbidden", h.Topic)), nil
	}
	if h.QueueID < 0 || h.QueueID >= int32(tc.ReadQueueNums) {
		return req.NewResponse(remoting.SystemError, fmt.Sprintf("queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			h.QueueID, h.Topic, tc.ReadQueueNums, conn.RemoteAddr())), nil
	}

	expr, exprType := h.Subscription, h.ExpressionType
	if h.SysFlag&pullSubscription == 0 {
		g, ok := b.clients.Consumer(h.ConsumerGroup)
		if !ok {
			return req.NewResponse(remoting.SubscriptionNotExist, "the consumer's group info not exist"), nil
		}
		if !gc.ConsumeBroadcastEnable && g.MessageModel == "BROADCASTING" {
			return req.NewResponse(remoting.NoPermission, fmt.Sprintf("the consumer group[%s] can not consume by broadcast way", h.ConsumerGroup)), nil
		}
		sub, ok := g.Subscriptions[h.Topic]
		if !ok {
			return req.NewResponse(remoting.SubscriptionNotExist, "the consumer's subscription not exist"), nil
		}
		if sub.SubVersion < h.SubVersion {
			return req.NewResponse(remoting.SubscriptionNotLatest, "the consumer's subscription not latest"), nil
		}
		expr, exprType = sub.SubString, sub.ExpressionType
	}
	f, refused := b.subscriptionFilter(req, exprType, expr, h.SysFlag&pullSubscription == 0, &c)
	if refused != nil {
		return refused, nil
	}

	maxMsgs := int(h.MaxMsgNums)
	if maxMsgs <= 0 {
		maxMsgs = 1
	}
	// The records are slices of the commitlog mapping, kept mapped until Release: a
	// pull's response is written from them without a copy.
	res := b.store.GetMessage(h.Topic, h.QueueID, h.QueueOffset, maxMsgs, 0, f)
	release := res.Release
	defer func() { // unless handed to the response below
		if release != nil {
			release()
		}
	}()
	if correctionWithheld(res.Status, &c) {
		res.NextBeginOffset = h.QueueOffset
	}
	resp := req.NewResponse(remoting.Success, "")
	resp.SetField("nextBeginOffset", strconv.FormatInt(res.NextBeginOffset, 10))
	resp.SetField("minOffset", strconv.FormatInt(res.MinOffset, 10))
	resp.SetField("maxOffset", strconv.FormatInt(res.MaxOffset, 10))
	// 4.9.7: with slaveReadEnable a lagging reader is sent to whichBrokerWhenConsumeSlowly
	// and any other to the group's brokerId; without it always to the master.
	suggest := protocol.MasterID
	if c.SlaveReadEnable {
		suggest = gc.BrokerID
		if res.SuggestPullingFromSlave {
			suggest = gc.WhichBrokerWhenConsumeSlowly
		}
	}
	resp.Code, resp.Remark = pullCode(res.Status, h.QueueOffset)
	if c.BrokerRole == config.Slave && !c.SlaveReadEnable {
		// 4.9.7: a slave serves reads only with slaveReadEnable.
		resp.Code, resp.Remark = remoting.PullRetryImmediately, "the slave does not serve reads (slaveReadEnable=false)"
		suggest = protocol.MasterID
	}
	if resp.Code == remoting.PullOffsetMoved && !b.offsetMoved(&h, res.NextBeginOffset, &c) {
		resp.Code, suggest = remoting.PullRetryImmediately, gc.BrokerID
	}
	resp.SetField("suggestWhichBrokerId", strconv.FormatInt(suggest, 10))

	switch resp.Code {
	case remoting.Success:
		// The records go out as they are in the store; the connection's writer releases
		// them once written (or dropped).
		resp.BodyParts = res.Messages
		resp.OnWritten, release = release, nil
		n := resp.BodyLen()
		b.stats.groupGet(h.ConsumerGroup, h.Topic, len(res.Messages), n)
		b.metrics.pulled(h.Topic, h.ConsumerGroup, len(res.Messages), n)
	case remoting.PullNotFound:
		if allowSuspend && h.SysFlag&pullSuspend != 0 {
			b.hold(conn, req, &h, f, &c)
			resp = nil
		}
	}
	// Commit only on the first pass: a resumed pull must not write an older offset again.
	if allowSuspend && h.SysFlag&pullCommitOffset != 0 && c.BrokerRole != config.Slave {
		b.offsets.Commit(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset)
	}
	return resp, nil
}

// subscriptionFilter returns the store filter of a subscription (filterCache): nil for
// "*", the tag hashes for a TAG expression, the expression over each record's properties
// for SQL92. An expression that does not compile is refused as Java does:
// SUBSCRIPTION_PARSE_FAILED when the pull carries it, FILTER_DATA_NOT_EXIST when it is
// the one the heartbeat registered (registered); a SQL92 expression that compiles is
// refused with SYSTEM_ERROR unless enablePropertyFilter is set.
func (b *Broker) subscriptionFilter(req *remoting.Command, exprType, expr string, registered bool, c *config.Config) (store.MessageFilter, *remoting.Command) {
	if (exprType == "" || exprType == filter.TypeTag) && (expr == "" || expr == filter.SubAll) {
		return nil, nil // every message: the common case needs no lookup
	}
	f, err := b.filters.get(exprType, expr)
	if err != nil {
		if registered && exprType != "" && exprType != filter.TypeTag {
			return nil, req.NewResponse(remoting.FilterDataNotExist,
				fmt.Sprintf("The broker's consumer filter data is not exist!Your expression may be wrong! [%s]: %v", expr, err))
		}
		if exprType == filter.TypeSQL92 && !c.EnablePropertyFilter {
			return nil, req.NewResponse(remoting.SystemError, "The broker does not support consumer to filter message by "+exprType)
		}
		return nil, req.NewResponse(remoting.SubscriptionParseFailed, fmt.Sprintf("parse the consumer's subscription[%s] failed: %v", expr, err))
	}
	if exprType == filter.TypeSQL92 && !c.EnablePropertyFilter {
		return nil, req.NewResponse(remoting.SystemError, "The broker does not support consumer to filter message by "+exprType)
	}
	return f, nil
}

// pullCode maps a store read to the response code and remark, as 4.9.7's
// PullMessageProcessor does (GetMessageStatus to ResponseCode); an offset the queue
// does not hold is OFFSET_MOVED unless the consumer asked for 0 of an empty queue.
func pullCode(s store.GetStatus, requested int64) (int16, string) {
	switch s {
	case store.Found:
		return remoting.Success, "FOUND"
	case store.MessageWasRemoving, store.NoMatchedMessage:
		return remoting.PullRetryImmediately, s.String()
	case store.NoMatchedLogicQueue, store.NoMessageInQueue:
		if requested != 0 {
			return remoting.PullOffsetMoved, s.String()
		}
		return remoting.PullNotFound, s.String()
	case store.OffsetFoundNull, store.OffsetOverflowOne:
		return remoting.PullNotFound, s.String()
	case store.OffsetOverflowBadly, store.OffsetTooSmall:
		return remoting.PullOffsetMoved, s.String()
	}
	return remoting.SystemError, "unexpected store status " + s.String()
}

// resumePull serves a held pull again once its queue has news or its time is up.
func (b *Broker) resumePull(_ context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	return b.pull(conn, req, false)
}

// hold parks a pull until a message arrives for its queue or its suspend time passes.
func (b *Broker) hold(conn *remoting.Conn, req *remoting.Command, h *pullHeader, f store.MessageFilter, c *config.Config) {
	var match func(int64) bool
	if f != nil {
		match = f.MatchTagsCode
	}
	wait := time.Duration(h.SuspendTimeoutMillis) * time.Millisecond
	if !c.LongPollingEnable {
		wait = c.ShortPollingTime
	}
	req.Suspended = true
	b.holder.Hold(&longpoll.Request{
		Topic: h.Topic, QueueID: h.QueueID, Offset: h.QueueOffset,
		Deadline: time.Now().Add(wait),
		Match:    match,
		Done:     conn.Done(),
		Resume: func() {
			// Through ErrHandlerFunc, so that an error is answered as a handler's is.
			resp := remoting.ErrHandlerFunc(b.resumePull).ServeRemoting(context.Background(), conn, req)
			if resp == nil {
				return
			}
			if err := b.server.Reply(conn, req, resp); err != nil {
				b.log.Debug("cannot answer a held pull", "remote", conn.RemoteAddr(), "err", err)
			}
		},
	})
}
