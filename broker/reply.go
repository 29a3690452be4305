package broker

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"strconv"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/broker/schedule"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// Request-reply properties (Java's MessageConst).
const (
	propertyReplyToClient = "REPLY_TO_CLIENT" // the requester's client id
	propertyPushReplyTime = "PUSH_REPLY_TIME" // when the broker pushed the reply, ms
)

const (
	// pushReplyTimeout is Java's Broker2Client.callClient timeout.
	pushReplyTimeout = 10 * time.Second
	// replyPoolQueue is Java's replyThreadPoolQueueCapacity.
	replyPoolQueue = 10000
)

// replyPoolWorkers is Java's processReplyMessageThreadPoolNums. Replies have a pool of
// their own because each one holds its worker while the push waits for the requester.
func replyPoolWorkers() int { return 16 + 2*runtime.NumCPU() }

// pushReplyHeader is ReplyMessageRequestHeader, the header of PUSH_REPLY_MESSAGE_TO_CLIENT:
// the replier's send header plus where and when the reply was received.
type pushReplyHeader struct {
	ProducerGroup         string `rmq:"producerGroup"`
	Topic                 string `rmq:"topic"`
	DefaultTopic          string `rmq:"defaultTopic"`
	DefaultTopicQueueNums int32  `rmq:"defaultTopicQueueNums"`
	QueueID               int32  `rmq:"queueId"`
	SysFlag               int32  `rmq:"sysFlag"`
	BornTimestamp         int64  `rmq:"bornTimestamp"`
	Flag                  int32  `rmq:"flag"`
	Properties            string `rmq:"properties"`
	ReconsumeTimes        int32  `rmq:"reconsumeTimes"`
	UnitMode              bool   `rmq:"unitMode"`
	BornHost              string `rmq:"bornHost"`
	StoreHost             string `rmq:"storeHost"`
	StoreTimestamp        int64  `rmq:"storeTimestamp"`
}

// handleSendReply serves SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2 as 4.9.7's
// ReplyMessageProcessor: the reply is pushed to the requester named by REPLY_TO_CLIENT,
// whose push outcome is the response code, and then stored in its topic.
func (b *Broker) handleSendReply(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	resp, err := b.sendReply(ctx, conn, req)
	if err != nil {
		// Answered here rather than by ErrHandlerFunc: the fields below go on it too.
		resp = req.NewResponse(remoting.SystemError, err.Error())
	}
	// Java sets these before any check, so refusals carry them too.
	resp.SetField(message.PropertyMsgRegion, defaultRegion)
	resp.SetField(message.PropertyTraceSwitch, "true")
	return resp, nil
}

func (b *Broker) sendReply(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	h, err := decodeSendHeader(req)
	if err != nil {
		return nil, err
	}
	c := b.cfg.Get()
	if resp := brokerWriteRefusal(req, &c); resp != nil {
		return resp, nil
	}
	// The push carries the queue the replier asked for; the store and the response the
	// one picked for it.
	requestedQueue := h.QueueID
	if resp, err := b.checkSendTarget(conn, req, h); resp != nil || err != nil {
		return resp, err
	}
	born, _ := netip.ParseAddrPort(conn.RemoteAddr())
	// No CLUSTER stamp, no retry, transaction or DLQ handling: Java's reply path has none.
	m := &message.Message{Topic: h.Topic, QueueID: h.QueueID, Flag: h.Flag, SysFlag: h.SysFlag,
		Body: req.Body, Properties: h.Properties, BornTimestamp: h.BornTimestamp, BornHost: born,
		ReconsumeTimes: h.ReconsumeTimes}
	// Java leaves the size to the store and pushes first; refusing up front keeps an
	// oversized reply off the requester's connection as well as off the disk.
	if resp := b.checkMessage(req, m, c.MaxMessageSize); resp != nil {
		return resp, nil
	}

	resp := req.NewResponse(remoting.Success, "")
	if remark := b.pushReply(ctx, conn, h, requestedQueue, m); remark != "" {
		resp.Code, resp.Remark = remoting.SystemError, remark
	} else {
		// Java's placeholders for an unstored reply: clients parse these into a result.
		setSendResult(resp, "0", h.QueueID, 0)
	}
	// Stored whatever the push did, as Java does; a failed put is only logged there.
	if c.StoreReplyMessageEnable {
		b.storeReply(c, m, h.QueueID, resp)
	}
	return resp, nil
}

func setSendResult(resp *remoting.Command, msgID string, queueID int32, queueOffset int64) {
	resp.SetField(fieldMsgID, msgID)
	resp.SetField(fieldQueueID, strconv.Itoa(int(queueID)))
	resp.SetField(fieldQueueOffset, strconv.FormatInt(queueOffset, 10))
}

// pushReply sends m to the requester over its producer connection. It returns "" when
// the requester took it, else the remark Java answers the replier with.
func (b *Broker) pushReply(ctx context.Context, conn *remoting.Conn, h *sendHeader, requestedQueue int32, m *message.Message) string {
	requester, ok := message.LookupProperty(m.Properties, propertyReplyToClient)
	if !ok {
		b.log.Warn("reply message without "+propertyReplyToClient, "topic", h.Topic, "replier", conn.RemoteAddr())
		return "reply message properties[" + propertyReplyToClient + "] is null"
	}
	ch, ok := b.clients.ProducerByClientID(requester)
	if !ok {
		remark := fmt.Sprintf("push reply message fail, channel of <%s> not found.", requester)
		b.log.Warn(remark, "topic", h.Topic, "replier", conn.RemoteAddr())
		return remark
	}
	// Java's remark, missing space included: clients may match on it.
	failed := "push reply message to " + requester + "fail."
	props, err := message.SetProperty(m.Properties, propertyPushReplyTime, strconv.FormatInt(time.Now().UnixMilli(), 10))
	if err != nil {
		b.log.Warn("cannot push a reply message", "requester", requester, "err", err)
		return failed
	}
	push := remoting.NewRequest(remoting.PushReplyMessageToClient, remoting.EncodeHeader(&pushReplyHeader{
		ProducerGroup: h.ProducerGroup, Topic: h.Topic, DefaultTopic: h.DefaultTopic,
		DefaultTopicQueueNums: h.DefaultTopicQueueNums, QueueID: requestedQueue, SysFlag: h.SysFlag,
		BornTimestamp: h.BornTimestamp, Flag: h.Flag, Properties: props, ReconsumeTimes: h.ReconsumeTimes,
		UnitMode: h.UnitMode, BornHost: javaHostString(m.BornHost), StoreHost: javaHostString(b.storeHost),
		StoreTimestamp: time.Now().UnixMilli(),
	}), m.Body)
	ctx, cancel := context.WithTimeout(ctx, pushReplyTimeout)
	defer cancel()
	resp, err := ch.Conn.Invoke(ctx, push)
	if err != nil {
		b.log.Warn("cannot push a reply message", "requester", requester, "remote", ch.Addr(), "err", err)
		return failed
	}
	if resp.Code != remoting.Success {
		b.log.Warn("requester refused a reply message", "requester", requester, "remote", ch.Addr(), "code", resp.Code, "remark", resp.Remark)
		return failed
	}
	return ""
}

// storeReply puts m as 4.9.7's store would (delay levels included) and, once stored,
// puts its id and offset in resp; a failure is only logged, as in Java.
func (b *Broker) storeReply(c config.Config, m *message.Message, queueID int32, resp *remoting.Command) {
	if b.refusesWrites(&c) {
		return // a slave's store takes the master's records only
	}
	if _, err := schedule.ToSchedule(m, b.store.MaxDelayLevel()); err != nil {
		b.log.Warn("cannot store a reply message", "topic", m.Topic, "err", err)
		return
	}
	res, durable, err := b.puts.append([]*message.Message{m}, putSend)
	if err != nil {
		b.log.Warn("cannot store a reply message", "topic", m.Topic, "err", err)
		return
	}
	// Java's putMessage waits for the flush and a SYNC_MASTER's slave; their timeouts
	// still count as stored.
	durable.Wait()
	if b.syncMasterWait(&c, m.Properties) {
		ctx, cancel := context.WithTimeout(context.Background(), c.SlaveTimeout)
		_ = b.haServer.WaitForSlave(ctx, res.PhysicalOffset+int64(res.Size))
		cancel()
	}
	setSendResult(resp, res.MsgID(), queueID, res.QueueOffset)
}

// javaHostString is how Java writes a socket address in the push header: the bare IP,
// a colon, the port (no brackets around IPv6).
func javaHostString(ap netip.AddrPort) string {
	return ap.Addr().Unmap().WithZone("").String() + ":" + strconv.Itoa(int(ap.Port()))
}
