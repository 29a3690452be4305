package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/names"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// Arrival describes a message the dispatcher has just made readable
// through its consume queue. Properties is only valid during the callback.
type Arrival struct {
	Topic          string
	QueueID        int32
	QueueOffset    int64
	MaxOffset      int64 // queue max offset after this message (QueueOffset+1)
	TagsCode       int64
	StoreTimestamp int64
	Properties     []byte
}

// ArrivalFunc is called by the dispatcher, in commitlog order, for every
// message added to a consume queue. It must return quickly (long polling
// wakes its waiters from here).
type ArrivalFunc func(a *Arrival)

// OnArrival registers fn. Listeners cannot be removed; register once.
func (s *Store) OnArrival(fn ArrivalFunc) {
	for {
		old := s.listeners.Load()
		var next []ArrivalFunc
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, fn)
		if s.listeners.CompareAndSwap(old, &next) {
			return
		}
	}
}

// dispatchLoop builds consume queues and index behind the writer. It wakes
// on every append, and every 10 ms as a fallback.
func (s *Store) dispatchLoop() {
	defer s.wg.Done()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-s.stop:
			return
		case <-s.kickDisp:
		case <-t.C:
		}
		err := s.dispatch()
		if err != nil && err.Error() != lastErr {
			s.log.Error("dispatch failed", "err", err)
		}
		lastErr = ""
		if err != nil {
			lastErr = err.Error()
		}
		s.noteWriteErr(err)
	}
}

// dispatch processes every record between the dispatched offset and the
// commitlog tail.
func (s *Store) dispatch() error {
	s.dispMu.Lock()
	defer s.dispMu.Unlock()
	for {
		from, to := s.dispatched.Load(), s.cl.wrote.Load()
		if from >= to {
			return nil
		}
		seg := s.cl.segment(from)
		if seg == nil {
			// Removed by retention before dispatch: skip to what remains.
			if min := s.cl.minOffset(); min > from {
				s.dispatched.Store(min)
				continue
			}
			return fmt.Errorf("%w: commitlog offset %d not mapped", ErrCorrupt, from)
		}
		pos, err := s.walkSegment(seg, from, to, nil, s.dispatchRecord)
		seg.Release()
		s.dispatched.Store(pos)
		if err != nil || pos == from {
			return err
		}
	}
}

// walkSegment calls fn for each record of seg from offset from up to to
// (or the segment end) and returns where it stopped: at to, at the segment
// end (after its blank), before a record still arriving through AppendRaw,
// or at a record that does not parse (with the error). Known damaged
// ranges are passed over (passDamage, into the queues of only if it is not
// nil); each one passed, and each filler met, becomes s.lastSkip. dispMu
// held.
func (s *Store) walkSegment(seg *mmapfile.File, from, to int64, only map[*consumeQueue]int64, fn func(v *message.RecordView, phy int64) error) (int64, error) {
	end := min(segEnd(seg), to)
	bad := s.damage.next(from)
	pos := from
	for pos < end {
		if pos >= bad.start {
			s.passDamage(seg, bad, pos, only)
			pos = min(bad.end, segEnd(seg))
			bad = s.damage.next(pos)
			continue
		}
		b := seg.Data[pos-seg.Start : end-seg.Start]
		if len(b) < message.MinBlankLength {
			break // partial header from AppendRaw
		}
		if int32(binary.BigEndian.Uint32(b[4:])) == message.BlankMagicCode {
			pos = segEnd(seg)
			break
		}
		if size := int64(int32(binary.BigEndian.Uint32(b))); size > int64(len(b)) &&
			int32(binary.BigEndian.Uint32(b[4:])) == message.MagicCode && end == to &&
			pos+size <= segEnd(seg) {
			break // a replicated record still arriving (AppendRaw): wait for the rest
		}
		v, err := message.ParseRecord(b)
		if err != nil {
			return pos, fmt.Errorf("%w: dispatch at offset %d: %w", ErrCorrupt, pos, err)
		}
		filler := isFiller(&v)
		if filler {
			s.noteFiller(pos, int64(v.Size()))
			s.lastSkip = damagedRange{start: pos, end: pos + int64(v.Size()), kind: DamageFiller}
		}
		if err := fn(&v, pos); err != nil {
			return pos, err
		}
		pos += int64(v.Size())
		if filler {
			bad = s.damage.next(pos)
		}
	}
	return pos, nil
}

// passDamage is the dispatcher passing the damaged range r from pos on: a
// record in it whose header is still readable, from pos on, and whose queue
// offset is exactly its queue's next, gets its entry (pointing at it, so it
// reads as a gap). So the queue offset is not given again even when no
// later record of the queue follows; a queue offset that does not continue
// its queue is not trusted, and no queue is created from a damaged header.
// dispMu held.
func (s *Store) passDamage(seg *mmapfile.File, r damagedRange, pos int64, only map[*consumeQueue]int64) {
	s.lastSkip = r
	if r.kind == DamageFiller {
		return
	}
	recordsIn(seg, r, func(v *message.RecordView, phy int64, _ string) bool {
		tt := message.TransactionType(v.SysFlag)
		if phy < pos || (tt != message.TransactionNotType && tt != message.TransactionCommitType) || v.QueueID() < 0 {
			return true
		}
		cq := s.queue(string(v.Topic()), v.QueueID())
		if cq == nil || v.QueueOffset() != cq.maxOffset.Load() {
			return true
		}
		if start, ok := only[cq]; only != nil && (!ok || phy < start) {
			return true
		}
		if _, err := cq.put(v.QueueOffset(), cqEntry{phy: phy, size: int32(v.Size())}, cqEntry{}); err != nil {
			s.log.Warn("damaged record: no gap entry", "topic", cq.topic, "queue", cq.queueID, "offset", phy, "err", err)
		}
		return true
	})
}

// noteFiller records a filler a master sent for a range damaged there
// (replica side): reported once, its gap entries point at it.
func (s *Store) noteFiller(phy, size int64) {
	if _, ok := s.damage.find(phy); ok {
		return
	}
	s.damage.report(damagedRange{start: phy, end: phy + size, kind: DamageFiller},
		"the master's record(s) there failed their checks; the master sent a filler")
}

// dispatchRecord adds one record to its consume queue and the index.
// PREPARED and ROLLBACK transaction records are indexed but not queued, and
// so are records whose topic cannot name a queue (see unqueueable).
func (s *Store) dispatchRecord(v *message.RecordView, phy int64) error {
	tt := message.TransactionType(v.SysFlag)
	if (tt == message.TransactionNotType || tt == message.TransactionCommitType) && s.queueable(v, phy) {
		if err := s.queueRecord(v, phy, nil); err != nil {
			return err
		}
	}
	if s.cfg.MessageIndexEnable {
		return s.index.build(v, phy)
	}
	return nil
}

// queueRecord adds v to its consume queue (cq, or the one it names when cq
// is nil) and calls the arrival listeners. A record too far ahead of its
// queue is logged and not queued. dispMu held.
func (s *Store) queueRecord(v *message.RecordView, phy int64, cq *consumeQueue) error {
	props := v.Properties()
	tagsCode := s.tagsCode(v, props)
	if cq == nil {
		var err error
		if cq, err = s.queueForWrite(v.Topic(), v.QueueID()); err != nil {
			return err
		}
	}
	qoff := v.QueueOffset()
	e := cqEntry{phy: phy, size: int32(v.Size()), tagsCode: tagsCode}
	var gap cqEntry
	if qoff > cq.maxOffset.Load() {
		gap = s.gapEntry(cq, e) // only then needed (replays are skipped)
	}
	added, err := cq.put(qoff, e, gap)
	if errors.Is(err, errQueueGap) {
		s.log.Warn("record not queued", "topic", cq.topic, "queue", cq.queueID, "offset", phy, "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	if ls := s.listeners.Load(); ls != nil && added {
		a := Arrival{Topic: cq.topic, QueueID: cq.queueID, QueueOffset: qoff, MaxOffset: cq.maxOffset.Load(),
			TagsCode: tagsCode, StoreTimestamp: v.StoreTimestamp(), Properties: props}
		for _, fn := range *ls {
			fn(&a)
		}
	}
	return nil
}

// gapEntry is what the queue offsets before e get if its queue has not
// reached e's queue offset: the damaged range passed last, when it lies
// between the queue's last entry and e, else e itself (its queue offset
// differs, so it reads as a gap too). Entries stay in commitlog order, and
// one never crosses a segment end (a read spans one segment), so a range
// that does points at its part in its first segment.
func (s *Store) gapEntry(cq *consumeQueue, e cqEntry) cqEntry {
	r := s.lastSkip
	if r.end == 0 || r.end > e.phy {
		return cqEntry{phy: e.phy, size: e.size}
	}
	if last, ok := cq.lastEntry(); ok && last.phy+int64(last.size) > r.start {
		return cqEntry{phy: e.phy, size: e.size}
	}
	segSize := int64(s.cl.segSize)
	firstSegEnd := r.start - r.start%segSize + segSize
	return cqEntry{phy: r.start, size: int32(min(r.end, firstSegEnd) - r.start)}
}

// queueable reports whether v's topic, queue id and queue offset can name a
// consume-queue entry.
// This store never appends a record that cannot (appendBatch refuses it), but
// a replicated or older record may: it gets no queue and no path, dispatch
// goes on, and the first of them and every 1000th after are logged.
func (s *Store) queueable(v *message.RecordView, phy int64) bool {
	err := names.Topic(string(v.Topic()))
	// A queue offset whose byte position in the queue overflows names no entry either.
	if err == nil && v.QueueID() >= 0 && v.QueueOffset() >= 0 && v.QueueOffset() < math.MaxInt64/CQEntrySize {
		return true
	}
	if n := s.unqueueable.Add(1); n%1000 == 1 {
		s.log.Warn("record with a topic or queue that cannot be queued: not dispatched",
			"topic", string(v.Topic()), "queue", v.QueueID(), "offset", phy, "records", n)
	}
	return false
}

// tagsCode is the consume-queue tag slot: the TAGS hash, or for
// SCHEDULE_TOPIC_XXXX the delivery time from the DELAY level.
func (s *Store) tagsCode(v *message.RecordView, props []byte) int64 {
	if string(v.Topic()) == ScheduleTopic {
		if lv, ok := message.LookupProperty(props, message.PropertyDelayTimeLevel); ok {
			if level, err := strconv.Atoi(string(lv)); err == nil && level > 0 {
				return s.DeliverTime(level, v.StoreTimestamp())
			}
		}
	}
	tags, _ := message.LookupProperty(props, message.PropertyTags)
	if len(tags) == 0 {
		return 0
	}
	return int64(message.JavaStringHash(tags))
}

// ScheduleTopic holds delayed messages, one queue per delay level.
const ScheduleTopic = protocol.ScheduleTopic

// DeliverTime is the delivery time (ms) of a message of the given delay
// level stored at storeTs; levels above the highest use the highest.
func (s *Store) DeliverTime(level int, storeTs int64) int64 {
	if level > len(s.delayLevels) {
		level = len(s.delayLevels)
	}
	return storeTs + s.delayLevels[level-1].Milliseconds()
}

// MaxDelayLevel is the number of configured delay levels.
func (s *Store) MaxDelayLevel() int { return len(s.delayLevels) }

// queue returns the consume queue of topic/qid, or nil.
func (s *Store) queue(topic string, qid int32) *consumeQueue {
	s.cqMu.RLock()
	defer s.cqMu.RUnlock()
	return s.cqs[topic][qid]
}

func (s *Store) queueForWrite(topic []byte, qid int32) (cq *consumeQueue, err error) {
	s.cqMu.RLock()
	cq = s.cqs[string(topic)][qid]
	s.cqMu.RUnlock()
	if cq != nil {
		return cq, nil
	}
	s.cqMu.Lock()
	defer s.cqMu.Unlock()
	t := string(topic)
	if cq = s.cqs[t][qid]; cq != nil {
		return cq, nil
	}
	dir, err := s.cfg.queueDir(t, qid)
	if err != nil {
		return nil, err
	}
	if s.cqLoaded {
		// Every queue directory was opened by loadConsumeQueues, so this
		// queue has none yet: do not look (a lookup in the consume-queue
		// root can wait behind placeLoop's mkdir there).
		cq = &consumeQueue{topic: t, queueID: qid, dir: dir, fileSize: s.cfg.MappedFileSizeConsumeQueue}
	} else if cq, err = openConsumeQueue(dir, t, qid, s.cfg.MappedFileSizeConsumeQueue); err != nil {
		return nil, err
	}
	cq.spares = s.spares
	if s.cqs[t] == nil {
		s.cqs[t] = map[int32]*consumeQueue{}
	}
	s.cqs[t][qid] = cq
	return cq, nil
}

// loadConsumeQueues opens every <root>/consumequeue/<topic>/<qid>.
func (s *Store) loadConsumeQueues() error {
	root := s.cfg.consumeQueueDir()
	topics, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, t := range topics {
		if !t.IsDir() {
			continue
		}
		if err := names.Topic(t.Name()); err != nil {
			s.log.Warn("not a topic's queues: left alone", "dir", filepath.Join(root, t.Name()), "err", err)
			continue
		}
		qs, err := os.ReadDir(filepath.Join(root, t.Name()))
		if err != nil {
			return err
		}
		for _, q := range qs {
			qid, err := strconv.ParseInt(q.Name(), 10, 32)
			if err != nil || !q.IsDir() {
				continue
			}
			if _, err := s.queueForWrite([]byte(t.Name()), int32(qid)); err != nil {
				return err
			}
		}
	}
	return nil
}
