package store

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// RawMessage is one record read by commitlog offset; Data is a slice into
// the mapping valid until Release.
type RawMessage struct {
	Data    []byte
	release func()
}

// Release drops the mapping reference.
func (m *RawMessage) Release() {
	if m.release != nil {
		m.release()
		m.release = nil
	}
}

// GetRawMessage returns the record at commitlog offset phy (the record's
// own size is read from its header).
func (s *Store) GetRawMessage(phy int64) (*RawMessage, error) {
	seg, hdr := s.cl.read(phy, 8)
	if seg == nil {
		return nil, fmt.Errorf("%w: commitlog offset %d", ErrNotFound, phy)
	}
	size := int(int32(binary.BigEndian.Uint32(hdr)))
	magic := int32(binary.BigEndian.Uint32(hdr[4:]))
	seg.Release()
	if magic != message.MagicCode || size <= 0 || size > s.cfg.MaxMessageSize {
		return nil, fmt.Errorf("%w: no record at commitlog offset %d", ErrNotFound, phy)
	}
	seg, rec := s.cl.read(phy, size)
	if seg == nil {
		return nil, fmt.Errorf("%w: commitlog offset %d", ErrNotFound, phy)
	}
	return &RawMessage{Data: rec, release: seg.Release}, nil
}

// GetMessageByOffset decodes (and copies) the record at commitlog offset
// phy, as VIEW_MESSAGE_BY_ID needs.
func (s *Store) GetMessageByOffset(phy int64) (*message.MessageExt, error) {
	raw, err := s.GetRawMessage(phy)
	if err != nil {
		return nil, err
	}
	defer raw.Release()
	m, err := message.DecodeRecord(raw.Data, false)
	if err != nil {
		return nil, fmt.Errorf("%w: at commitlog offset %d: %w", ErrCorrupt, phy, err)
	}
	return m, nil
}

// MinOffsetInQueue is the first readable queue offset (0 if unknown queue).
func (s *Store) MinOffsetInQueue(topic string, qid int32) int64 {
	if cq := s.queue(topic, qid); cq != nil {
		return cq.minOffset.Load()
	}
	return 0
}

// MaxOffsetInQueue is the queue offset after the last dispatched message.
func (s *Store) MaxOffsetInQueue(topic string, qid int32) int64 {
	if cq := s.queue(topic, qid); cq != nil {
		return cq.maxOffset.Load()
	}
	return 0
}

// CommitLogOffsetInQueue returns the commitlog offset of a queue entry.
func (s *Store) CommitLogOffsetInQueue(topic string, qid int32, off int64) (int64, bool) {
	cq := s.queue(topic, qid)
	if cq == nil || off < cq.minOffset.Load() {
		return 0, false
	}
	e, ok := cq.entry(off)
	return e.phy, ok
}

// storeTime reads the store timestamp of the record at phy.
func (s *Store) storeTime(phy int64, size int32) (int64, bool) {
	seg, rec := s.cl.read(phy, int(size))
	if seg == nil {
		return 0, false
	}
	defer seg.Release()
	v, err := message.ParseRecord(rec)
	if err != nil {
		return 0, false
	}
	return v.StoreTimestamp(), true
}

// MessageStoreTime is the store time (ms) of a queue entry; -1 if absent.
func (s *Store) MessageStoreTime(topic string, qid int32, off int64) int64 {
	cq := s.queue(topic, qid)
	if cq == nil || off < cq.minOffset.Load() {
		return -1
	}
	e, ok := cq.entry(off)
	if !ok {
		return -1
	}
	if t, ok := s.storeTime(e.phy, e.size); ok {
		return t
	}
	return -1
}

// EarliestMessageTime is the store time of the first readable message of
// a queue; -1 if none.
func (s *Store) EarliestMessageTime(topic string, qid int32) int64 {
	return s.MessageStoreTime(topic, qid, s.MinOffsetInQueue(topic, qid))
}

// OffsetInQueueByTime returns the first queue offset whose store time is
// >= ts (binary search over the queue); max offset if all are older, min
// offset if all are newer.
func (s *Store) OffsetInQueueByTime(topic string, qid int32, ts int64) int64 {
	cq := s.queue(topic, qid)
	if cq == nil {
		return 0
	}
	lo, hi := cq.minOffset.Load(), cq.maxOffset.Load()
	for lo < hi {
		mid := lo + (hi-lo)/2
		t := s.MessageStoreTime(topic, qid, mid)
		if t >= 0 && t < ts {
			lo = mid + 1
		} else if t < 0 && mid == lo {
			lo = mid + 1 // removed entry at the head: look right
		} else {
			hi = mid
		}
	}
	return lo
}

// CommitLogMinOffset is the first commitlog offset still stored.
func (s *Store) CommitLogMinOffset() int64 { return s.cl.minOffset() }

// CommitLogMaxOffset is the commitlog tail (next append offset).
func (s *Store) CommitLogMaxOffset() int64 { return s.cl.wrote.Load() }

// FlushedOffset is the durable commitlog offset.
func (s *Store) FlushedOffset() int64 { return s.cl.flushed.Load() }

// DispatchBehind is how many commitlog bytes are not yet in consume queues.
func (s *Store) DispatchBehind() int64 { return s.cl.wrote.Load() - s.dispatched.Load() }

// QueueInfo describes a known consume queue.
type QueueInfo struct {
	Topic     string
	QueueID   int32
	MinOffset int64
	MaxOffset int64
}

// Queues lists every known consume queue, sorted by topic and queue id.
func (s *Store) Queues() []QueueInfo {
	var out []QueueInfo
	for _, cq := range s.allQueues() {
		out = append(out, QueueInfo{cq.topic, cq.queueID, cq.minOffset.Load(), cq.maxOffset.Load()})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].QueueID < out[j].QueueID
	})
	return out
}

// QueryMessage finds messages of topic by key (a KEYS entry or UNIQ_KEY)
// stored within [begin, end] ms, newest first, at most max. It returns
// their commitlog offsets; read them with GetMessageByOffset.
func (s *Store) QueryMessage(topic, key string, max int, begin, end int64) []int64 {
	offs := s.index.query(topic, key, max, begin, end)
	minPhy, maxPhy := s.cl.minOffset(), s.cl.wrote.Load()
	out := offs[:0]
	for _, o := range offs {
		if o >= minPhy && o < maxPhy {
			out = append(out, o)
		}
	}
	return out
}

// DeleteTopic removes the consume queues of topic (its commitlog records
// stay until retention).
func (s *Store) DeleteTopic(topic string) {
	s.putMu.Lock()
	for k := range s.queueTable {
		if k.topic == topic {
			delete(s.queueTable, k)
		}
	}
	s.putMu.Unlock()
	s.dispMu.Lock() // no dispatch into the queues while they go
	s.cqMu.Lock()
	qs := s.cqs[topic]
	delete(s.cqs, topic)
	s.cqMu.Unlock()
	for _, cq := range qs {
		cq.destroy()
	}
	os.RemoveAll(filepath.Join(s.cfg.consumeQueueDir(), topic))
	s.dispMu.Unlock()
}

// InMemory reports whether the message at a queue offset is within the
// "in memory" window (see GetMessage); false if there is no such entry.
// QUERY_CONSUMER_OFFSET uses it for brand-new groups.
func (s *Store) InMemory(topic string, qid int32, off int64) bool {
	phy, ok := s.CommitLogOffsetInQueue(topic, qid, off)
	return ok && s.cl.wrote.Load()-phy <= s.memLimit
}
