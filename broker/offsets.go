package broker

import (
	"context"
	"strconv"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

type consumerOffsetHeader struct {
	ConsumerGroup string `rmq:"consumerGroup,required"`
	Topic         string `rmq:"topic,required"`
	QueueID       int32  `rmq:"queueId,required"`
	CommitOffset  int64  `rmq:"commitOffset"`
}

type queueHeader struct {
	Topic     string `rmq:"topic,required"`
	QueueID   int32  `rmq:"queueId,required"`
	Timestamp int64  `rmq:"timestamp"`
}

func (b *Broker) handleQueryConsumerOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h consumerOffsetHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	offset := b.offsets.Query(h.ConsumerGroup, h.Topic, h.QueueID)
	if offset < 0 {
		// A new group on a young queue (nothing deleted yet, its first message still in
		// memory) starts at 0 whatever its consume-from setting, as the Java broker does.
		if b.store.MinOffsetInQueue(h.Topic, h.QueueID) <= 0 && b.inMemory(h.Topic, h.QueueID, 0) {
			offset = 0
		} else {
			return req.NewResponse(remoting.QueryNotFound, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"), nil
		}
	}
	resp := req.NewResponse(remoting.Success, "")
	resp.SetField("offset", strconv.FormatInt(offset, 10))
	return resp, nil
}

func (b *Broker) handleUpdateConsumerOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h consumerOffsetHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	if _, ok := req.LookupField("commitOffset"); !ok {
		return req.NewResponse(remoting.SystemError, "the custom field <commitOffset> is null"), nil
	}
	b.offsets.Commit(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset)
	return req.NewResponse(remoting.Success, ""), nil
}

func (b *Broker) queueQuery(req *remoting.Command, field string, f func(h *queueHeader) int64) (*remoting.Command, error) {
	var h queueHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
	}
	resp := req.NewResponse(remoting.Success, "")
	resp.SetField(field, strconv.FormatInt(f(&h), 10))
	return resp, nil
}

func (b *Broker) handleGetMaxOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	return b.queueQuery(req, "offset", func(h *queueHeader) int64 { return b.store.MaxOffsetInQueue(h.Topic, h.QueueID) })
}

func (b *Broker) handleGetMinOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	return b.queueQuery(req, "offset", func(h *queueHeader) int64 { return b.store.MinOffsetInQueue(h.Topic, h.QueueID) })
}

func (b *Broker) handleGetEarliestMsgStoreTime(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	return b.queueQuery(req, "timestamp", func(h *queueHeader) int64 {
		return b.store.MessageStoreTime(h.Topic, h.QueueID, b.store.MinOffsetInQueue(h.Topic, h.QueueID))
	})
}

func (b *Broker) handleSearchOffsetByTimestamp(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	return b.queueQuery(req, "offset", func(h *queueHeader) int64 {
		return b.store.OffsetInQueueByTime(h.Topic, h.QueueID, h.Timestamp)
	})
}

// inMemory answers as Java's QUERY_CONSUMER_OFFSET asks (!checkInDiskByConsumeOffset):
// whether the message at offset is still in memory; an offset without a readable
// message counts as in memory.
func (b *Broker) inMemory(topic string, qid int32, offset int64) bool {
	phy, ok := b.store.CommitLogOffsetInQueue(topic, qid, offset)
	if !ok || phy < b.store.CommitLogMinOffset() {
		return true
	}
	return b.store.CheckInMemByConsumeOffset(topic, qid, offset, 1)
}

// handleCloneGroupOffset serves CLONE_GROUP_OFFSET: the source group's offsets, in one
// topic or all it has, become the destination group's.
func (b *Broker) handleCloneGroupOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.CloneGroupOffsetRequestHeader
	if err := remoting.DecodeHeader(req, &h); err != nil {
		return nil, err
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
	return req.NewResponse(remoting.Success, ""), nil
}

// handleGetAllConsumerOffset serves GET_ALL_CONSUMER_OFFSET: the whole offset table.
func (b *Broker) handleGetAllConsumerOffset(ctx context.Context, conn *remoting.Conn, req *remoting.Command) (*remoting.Command, error) {
	return withBody(req, b.offsets.Encode()), nil
}
