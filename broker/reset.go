package broker

import (
	"context"
	"fmt"
	"strconv"

	"github.com/openrmq/rocketmq-operator/broker/client"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

type connection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int16  `json:"version"`
}

type consumerConnection struct {
	ConnectionSet     []connection                       `json:"connectionSet"`
	SubscriptionTable map[string]client.SubscriptionData `json:"subscriptionTable"`
	ConsumeType       string                             `json:"consumeType"`
	MessageModel      string                             `json:"messageModel"`
	ConsumeFromWhere  string                             `json:"consumeFromWhere"`
}

func (b *Broker) handleConsumerConnections(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	group := req.Field("consumerGroup")
	g, ok := b.clients.Consumer(group)
	if !ok {
		return req.NewResponse(remoting.ConsumerNotOnline, fmt.Sprintf("the consumer group[%s] not online", group))
	}
	cc := consumerConnection{SubscriptionTable: g.Subscriptions, ConsumeType: g.ConsumeType,
		MessageModel: g.MessageModel, ConsumeFromWhere: g.ConsumeFromWhere, ConnectionSet: []connection{}}
	for _, ch := range g.Channels {
		cc.ConnectionSet = append(cc.ConnectionSet, connection{ClientID: ch.ClientID, ClientAddr: ch.Addr(),
			Language: ch.Language.String(), Version: ch.Version})
	}
	resp := req.NewResponse(remoting.Success, "")
	resp.Body = protocol.MustEncode(cc)
	return resp
}

// handleProducerConnections serves GET_PRODUCER_CONNECTION_LIST.
func (b *Broker) handleProducerConnections(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	group := req.Field("producerGroup")
	chans := b.clients.Producers(group)
	if len(chans) == 0 {
		return req.NewResponse(remoting.SystemError, fmt.Sprintf("the producer group[%s] not exist", group))
	}
	out := struct {
		ConnectionSet []connection `json:"connectionSet"`
	}{ConnectionSet: []connection{}}
	for _, ch := range chans {
		out.ConnectionSet = append(out.ConnectionSet, connection{ClientID: ch.ClientID, ClientAddr: ch.Addr(),
			Language: ch.Language.String(), Version: ch.Version})
	}
	resp := req.NewResponse(remoting.Success, "")
	resp.Body = protocol.MustEncode(out)
	return resp
}

func (b *Broker) handleConsumeStats(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	group := req.Field("consumerGroup")
	if group == "" {
		return req.NewResponse(remoting.SystemError, "the custom field <consumerGroup> is null")
	}
	topics := b.offsets.TopicsOf(group)
	if t := req.Field("topic"); t != "" {
		topics = []string{t}
	}
	name := b.cfg.Get().BrokerName
	st := protocol.ConsumeStats{OffsetTable: map[protocol.MessageQueue]protocol.OffsetWrapper{}}
	for _, topic := range topics {
		tc, ok := b.topics.Get(topic)
		if !ok {
			continue
		}
		for q := range int32(tc.WriteQueueNums) {
			w := protocol.OffsetWrapper{BrokerOffset: b.store.MaxOffsetInQueue(topic, q), ConsumerOffset: max(b.offsets.Query(group, topic, q), 0)}
			if w.ConsumerOffset > 0 {
				if ts := b.store.MessageStoreTime(topic, q, w.ConsumerOffset-1); ts >= 0 {
					w.LastTimestamp = ts
				}
			}
			st.OffsetTable[protocol.MessageQueue{BrokerName: name, QueueID: q, Topic: topic}] = w
		}
	}
	body, err := st.Encode()
	if err != nil {
		return req.NewResponse(remoting.SystemError, err.Error())
	}
	resp := req.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp
}

// handleResetOffset moves a group's offsets in a topic to the first message stored at or
// after a timestamp (-1: the end). Unless isForce, offsets only move back. The new
// offsets are committed here, so an offline group restarts from them, and pushed to the
// online consumers with RESET_CONSUMER_CLIENT_OFFSET.
func (b *Broker) handleResetOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.ResetOffsetRequestHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return req.NewResponse(remoting.SystemError, err.Error())
	}
	tc, ok := b.topics.Get(h.Topic)
	if !ok {
		return req.NewResponse(remoting.TopicNotExist, fmt.Sprintf("[reset-offset] topic %s does not exist", h.Topic))
	}
	name := b.cfg.Get().BrokerName
	reset := protocol.ResetOffsetBody{OffsetTable: map[protocol.MessageQueue]int64{}}
	offsets := map[int32]int64{}
	for q := range int32(tc.WriteQueueNums) {
		target := b.store.MaxOffsetInQueue(h.Topic, q)
		if h.Timestamp >= 0 {
			target = b.store.OffsetInQueueByTime(h.Topic, q, h.Timestamp)
		}
		current := b.offsets.Query(h.Group, h.Topic, q)
		if !h.IsForce && current >= 0 && current < target {
			target = current
		}
		offsets[q] = target
		reset.OffsetTable[protocol.MessageQueue{BrokerName: name, QueueID: q, Topic: h.Topic}] = target
	}
	b.offsets.Set(h.Group, h.Topic, offsets)
	if err := b.offsets.Persist(false); err != nil {
		b.log.Error("cannot persist consumer offsets", "err", err)
	}
	body, err := reset.Encode()
	if err != nil {
		return req.NewResponse(remoting.SystemError, err.Error())
	}
	notified := 0
	if g, ok := b.clients.Consumer(h.Group); ok {
		for c := range g.Channels {
			r := remoting.NewRequest(remoting.ResetConsumerClientOffset, map[string]string{
				"topic": h.Topic, "group": h.Group, "timestamp": strconv.FormatInt(h.Timestamp, 10),
				"isForce": strconv.FormatBool(h.IsForce),
			}, body)
			r.MarkOneway()
			if err := c.InvokeOneway(r); err == nil {
				notified++
			}
		}
	}
	b.log.Info("consumer offsets reset", "group", h.Group, "topic", h.Topic, "timestamp", h.Timestamp, "offsets", offsets, "consumersNotified", notified)
	resp := req.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp
}

func (b *Broker) handleCloneGroupOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	var h protocol.CloneGroupOffsetRequestHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return req.NewResponse(remoting.SystemError, err.Error())
	}
	topics := b.offsets.TopicsOf(h.SrcGroup)
	if h.Topic != "" {
		topics = []string{h.Topic}
	}
	for _, t := range topics {
		if src := b.offsets.QueryAll(h.SrcGroup, t); len(src) > 0 {
			b.offsets.Set(h.DestGroup, t, src)
		}
	}
	return req.NewResponse(remoting.Success, "")
}

func (b *Broker) handleGetAllConsumerOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	resp := req.NewResponse(remoting.Success, "")
	resp.Body = b.offsets.Encode()
	return resp
}
