package broker

import (
	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// storeAdapter fits broker/store to MessageStore.
type storeAdapter struct{ s *store.Store }

func openStore(cfg store.Config) (MessageStore, error) {
	s, err := store.Open(cfg)
	if err != nil {
		return nil, err
	}
	return storeAdapter{s}, nil
}

func (a storeAdapter) PutMessages(msgs []*message.Message) (*store.PutResult, error) {
	return a.s.PutMessages(msgs)
}

func (a storeAdapter) AppendMessages(msgs []*message.Message) (*store.PutResult, func() store.PutStatus, error) {
	return a.s.AppendMessages(msgs)
}

// GetMessages hands out the records in place, as slices of the commitlog mapping that
// the store keeps mapped until Release: a pull's response is written from them without
// a copy.
func (a storeAdapter) GetMessages(topic string, qid int32, offset int64, maxMsgs int, filter MessageFilter) (*GetResult, error) {
	r := a.s.GetMessage(topic, qid, offset, maxMsgs, 0, filter)
	out := &GetResult{
		Status: r.Status, NextBeginOffset: r.NextBeginOffset, MinOffset: r.MinOffset, MaxOffset: r.MaxOffset,
		Count: len(r.Messages), SuggestPullingFromSlave: r.SuggestPullingFromSlave,
	}
	if len(r.Messages) == 0 {
		r.Release()
		return out, nil
	}
	out.Parts, out.Release = r.Messages, r.Release
	return out, nil
}

func (a storeAdapter) MinOffset(topic string, qid int32) int64 {
	return a.s.MinOffsetInQueue(topic, qid)
}
func (a storeAdapter) MaxOffset(topic string, qid int32) int64 {
	return a.s.MaxOffsetInQueue(topic, qid)
}

func (a storeAdapter) OffsetByTime(topic string, qid int32, ts int64) int64 {
	return a.s.OffsetInQueueByTime(topic, qid, ts)
}

func (a storeAdapter) StoreTime(topic string, qid int32, offset int64) (int64, error) {
	if t := a.s.MessageStoreTime(topic, qid, offset); t >= 0 {
		return t, nil
	}
	return -1, store.ErrNotFound
}

func (a storeAdapter) MessageAt(phy int64) ([]byte, error) {
	raw, err := a.s.GetRawMessage(phy)
	if err != nil {
		return nil, err
	}
	defer raw.Release()
	return append([]byte(nil), raw.Data...), nil
}

func (a storeAdapter) QueryByKey(topic, key string, maxNum int, begin, end int64) ([][]byte, error) {
	var out [][]byte
	for _, phy := range a.s.QueryMessage(topic, key, maxNum, begin, end) {
		if rec, err := a.MessageAt(phy); err == nil {
			out = append(out, rec)
		}
	}
	return out, nil
}

// InMemory answers as Java's QUERY_CONSUMER_OFFSET asks (!checkInDiskByConsumeOffset):
// an offset without a readable message counts as in memory.
func (a storeAdapter) InMemory(topic string, qid int32, offset int64) bool {
	phy, ok := a.s.CommitLogOffsetInQueue(topic, qid, offset)
	if !ok || phy < a.s.CommitLogMinOffset() {
		return true
	}
	return a.s.CheckInMemByConsumeOffset(topic, qid, offset, 1)
}

func (a storeAdapter) MaxPhyOffset() int64            { return a.s.CommitLogMaxOffset() }
func (a storeAdapter) MinPhyOffset() int64            { return a.s.CommitLogMinOffset() }
func (a storeAdapter) DispatchBehind() int64          { return a.s.DispatchBehind() }
func (a storeAdapter) Damage() (int, int64)           { return len(a.s.Damaged()), a.s.DamagedReads() }
func (a storeAdapter) OnArrival(fn store.ArrivalFunc) { a.s.OnArrival(fn) }
func (a storeAdapter) DeleteTopic(topic string) error { return a.s.DeleteTopic(topic) }
func (a storeAdapter) Close() error                   { return a.s.Close() }
func (a storeAdapter) ConsumeQueueEntries(topic string, qid int32, index int64, count int) ([]store.CQEntry, int64, int64, bool) {
	return a.s.ConsumeQueueEntries(topic, qid, index, count)
}
func (a storeAdapter) CleanExpiredConsumeQueues() int { return a.s.CleanExpiredConsumeQueues() }
func (a storeAdapter) CleanUnusedTopics(keep func(string) bool) []string {
	return a.s.CleanUnusedTopics(keep)
}

// notifyingStore is broker/store as the schedule and transaction services see it: their
// puts (due delayed messages, committed half messages) wake replication at once, as the
// send path's do, instead of at the HA writers' next 100 ms poll.
type notifyingStore struct {
	*store.Store
	notify func()
}

func (s notifyingStore) PutMessage(m *message.Message) (*store.PutResult, error) {
	r, err := s.Store.PutMessage(m)
	if err == nil {
		s.notify()
	}
	return r, err
}
