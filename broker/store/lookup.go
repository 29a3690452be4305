package store

import (
	"encoding/binary"
	"fmt"
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
	if err := s.checkRaw(phy, rec); err != nil {
		seg.Release()
		return nil, err
	}
	return &RawMessage{Data: rec, release: seg.Release}, nil
}

// checkRaw checks a record read by its commitlog offset (lookups by id or
// key, send-back, transaction checks): not in a known damaged range, whole,
// at its own offset, and with its body CRC under CheckCRCOnRead. A record
// that fails is reported as damage found by a read, and refused.
func (s *Store) checkRaw(phy int64, rec []byte) error {
	if _, ok := s.damage.find(phy); ok {
		s.damage.count.Add(1)
		return fmt.Errorf("%w: commitlog offset %d is in a damaged range", ErrCorrupt, phy)
	}
	v, err := message.ParseRecord(rec)
	switch {
	case err != nil:
	case v.Size() != len(rec) || v.PhysicalOffset() != phy:
		err = errPhyOffset
	case s.cfg.CheckCRCOnRead && !v.CheckCRC():
		err = errCRC
	}
	if err == nil {
		return nil
	}
	s.damage.count.Add(1)
	if r := (damagedRange{start: phy, end: phy + int64(len(rec)), kind: DamageRead}); s.boundaryAt(r.end) {
		s.damage.report(r, fmt.Sprintf("read by offset: %v; %s", err, s.cl.describeDamage(r)))
	}
	return fmt.Errorf("%w: record at commitlog offset %d: %w", ErrCorrupt, phy, err)
}

// CopyRawMessage returns a copy of the record at commitlog offset phy: what
// a caller keeps past the mapping's lifetime (an admin lookup's response).
func (s *Store) CopyRawMessage(phy int64) ([]byte, error) {
	raw, err := s.GetRawMessage(phy)
	if err != nil {
		return nil, err
	}
	defer raw.Release()
	return append([]byte(nil), raw.Data...), nil
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

// OffsetInQueueByTime answers SEARCH_OFFSET_BY_TIMESTAMP and reset-by-time:
// the first queue offset whose store time is >= ts (binary search over the
// queue), so a consumer moved there reads exactly the messages stored at or
// after ts. That gives the min offset if every message is at or after ts,
// and the max offset (nothing to re-consume) if every message is older.
//
// The Java broker (4.9.7 ConsumeQueue.getOffsetInQueueByTime) answers
// differently, on purpose we do not follow:
//   - ts later than the newest message: Java gives max-1, so a reset to
//     "now" re-delivers the newest message; we give max. (Our compat suite
//     saw max-1 from the Java broker.)
//   - ts between two messages: Java gives whichever neighbour is closer in
//     time, which may be the one stored before ts; we always give the one
//     after.
//   - several messages stored at ts: Java gives whichever its binary search
//     hits first; we give the first of them.
//   - Java searches only the consume-queue file picked by file mtime, so
//     its answer can also depend on when files were last written.
//
// Where Java is equal to us: ts before the oldest message (min offset), ts
// equal to a unique store time (that offset), an empty or unknown queue
// (0 for unknown; min = max for empty). The official clients (Java and Go,
// CONSUME_FROM_TIMESTAMP, seek by time) and mqadmin resetOffsetByTime use
// the answer only as a start position, so they see at most one message
// less re-delivered than on the Java broker.
func (s *Store) OffsetInQueueByTime(topic string, qid int32, ts int64) int64 {
	cq := s.queue(topic, qid)
	if cq == nil {
		return 0
	}
	lo, hi := cq.minOffset.Load(), cq.maxOffset.Load()
	for lo < hi {
		mid := lo + (hi-lo)/2
		switch t := s.MessageStoreTime(topic, qid, mid); {
		case t >= 0 && t < ts:
			lo = mid + 1
		case t < 0 && mid == lo:
			lo = mid + 1 // removed entry at the head: look right
		default:
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
// stay until retention). A name that is not a legal topic is refused: it
// names no queue, and must not name a directory.
func (s *Store) DeleteTopic(topic string) error {
	if _, err := s.cfg.topicDir(topic); err != nil {
		return err
	}
	s.removeQueues(topic, func(int32) bool { return true })
	return nil
}

// CheckInMemByConsumeOffset is Java's checkInMemByConsumeOffset: whether
// the message at queue offset consumeOffset is still stored and within the
// "in memory" window, the last AccessMessageInMemoryMaxRatio % of RAM
// before the commitlog tail (the same window that sets GetMessage's
// transfer limits and SuggestPullingFromSlave). False if the queue has no
// such entry. batchSize is accepted for Java's signature; it cannot change
// the answer here: the first message of a batch is the one farthest from
// the tail.
func (s *Store) CheckInMemByConsumeOffset(topic string, queueID int32, consumeOffset int64, batchSize int) bool {
	phy, ok := s.CommitLogOffsetInQueue(topic, queueID, consumeOffset)
	return ok && phy >= s.cl.minOffset() && s.cl.wrote.Load()-phy <= s.memLimit
}
