package broker

import (
	"context"
	"fmt"
	"strconv"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// handleResetOffset moves a group's offsets in a topic to the first message stored at or
// after a timestamp (-1: the end). Unless isForce, offsets only move back. The new
// offsets are committed here, so an offline group restarts from them, and pushed to the
// online consumers with RESET_CONSUMER_CLIENT_OFFSET.
func (b *Broker) handleResetOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ResetOffsetRequestHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	tc, ok := b.topics.Get(h.Topic)
	if !ok {
		return req.NewResponse(remoting.TopicNotExist, fmt.Sprintf("[reset-offset] topic %s does not exist", h.Topic)), nil
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
		return nil, err
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
	return withBody(req, body), nil
}
