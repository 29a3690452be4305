package store

import (
	"encoding/binary"
	"fmt"

	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/names"
)

// entryCheck classifies a consume-queue entry against the record it
// points at.
type entryCheck int

const (
	entryOK      entryCheck = iota // a valid record of this queue at this queue offset
	entryGap                       // a gap: its record was in a damaged range, or this replica never had it
	entryDamaged                   // the record it points at fails its checks: commitlog damage
	entryWrong                     // the entry itself is bad: it points at nothing that fits
)

// checkEntry classifies entry e of cq at queue offset qoff; rec is the
// mapping's bytes [e.phy, e.phy+e.size). Without crc it reads only the
// record's fixed header (total size, magic, physical offset, queue id,
// queue offset: its first 36 bytes, which the pull sends anyway); with crc
// it also parses the whole record, compares the topic and checks the body
// CRC. It allocates nothing.
func (s *Store) checkEntry(cq *consumeQueue, qoff int64, e cqEntry, rec []byte, crc bool) (entryCheck, error) {
	if !s.damage.empty() {
		if _, ok := s.damage.find(e.phy); ok {
			return entryGap, nil
		}
	}
	be := binary.BigEndian
	if len(rec) < message.OffSysFlag || int(int32(be.Uint32(rec))) != len(rec) ||
		int32(be.Uint32(rec[message.OffMagic:])) != message.MagicCode ||
		int64(be.Uint64(rec[message.OffPhysicalOffset:])) != e.phy {
		return s.framingDamage(e, rec)
	}
	if int64(be.Uint64(rec[message.OffQueueOffset:])) != qoff || int32(be.Uint32(rec[message.OffQueueID:])) != cq.queueID {
		v, err := message.ParseRecord(rec)
		if err == nil && v.QueueOffset() > qoff && v.QueueID() == cq.queueID && string(v.Topic()) == cq.topic {
			return entryGap, nil // a gap entry: it points at the queue's next record
		}
		return entryWrong, fmt.Errorf("points at a record of queue %d, queue offset %d", v.QueueID(), v.QueueOffset())
	}
	if !crc {
		return entryOK, nil
	}
	v, err := message.ParseRecord(rec)
	switch {
	case err != nil:
		return s.framingDamage(e, rec)
	case string(v.Topic()) != cq.topic:
		return entryWrong, fmt.Errorf("points at a record of topic %q", v.Topic())
	case !v.CheckCRC():
		return entryDamaged, errCRC
	}
	return entryOK, nil
}

// framingDamage classifies an entry whose record does not frame: commitlog
// damage if the entry spans a whole record (a record, blank or the tail
// starts right after it), else the entry itself is wrong.
func (s *Store) framingDamage(e cqEntry, rec []byte) (entryCheck, error) {
	_, err := message.ParseRecord(rec)
	switch {
	case err != nil:
	case len(rec) >= message.OffSysFlag && int64(binary.BigEndian.Uint64(rec[message.OffPhysicalOffset:])) != e.phy:
		err = errPhyOffset
	default:
		err = fmt.Errorf("record size %d, the entry says %d", binary.BigEndian.Uint32(rec), len(rec))
	}
	if s.boundaryAt(e.phy + int64(e.size)) {
		return entryDamaged, err
	}
	return entryWrong, err
}

// boundaryAt reports whether a record, a blank or the tail starts at off.
func (s *Store) boundaryAt(off int64) bool {
	if off == s.cl.wrote.Load() || off%int64(s.cl.segSize) == 0 {
		return true
	}
	seg := s.cl.segment(off)
	if seg == nil {
		return false
	}
	defer seg.Release()
	return headerAt(seg, off) || blankAt(seg, off)
}

// refused counts an entry a read skipped and reports what it found: new
// commitlog damage once (WARN line and report file), a wrong entry in the
// log (the first and every 1000th).
func (s *Store) refused(cq *consumeQueue, qoff int64, e cqEntry, c entryCheck, err error) {
	s.damage.count.Add(1)
	switch c {
	case entryDamaged:
		s.noteDamaged(cq, qoff, e, err)
	case entryWrong:
		if n := s.wrongEntries.Add(1); n%1000 == 1 {
			s.log.Warn("consume-queue entry points at no fitting record: skipped", "topic", cq.topic, "queue", cq.queueID,
				"queueOffset", qoff, "offset", e.phy, "size", e.size, "err", err, "entries", n)
		}
	}
}

// noteDamaged reports the record entry e points at as damaged (found by
// a read): from then on it is a known range, never served nor replicated.
func (s *Store) noteDamaged(cq *consumeQueue, qoff int64, e cqEntry, err error) {
	r := damagedRange{start: e.phy, end: e.phy + int64(e.size), kind: DamageRead}
	if _, ok := s.damage.find(r.start); ok {
		return
	}
	s.damage.report(r, fmt.Sprintf("consume queue %s/%d entry %d: %v; %s", cq.topic, cq.queueID, qoff, err, s.cl.describeDamage(r)))
}

// checkQueueTails makes every consume queue end at an entry it can trust,
// at every start: a queue that had a file cut short on disk loses the
// entries from the first one not wholly there, and a queue whose last
// entry does not point at a valid record of its own topic, queue and queue
// offset (with its tag code) loses that entry, until the last one does. It
// returns the commitlog offset to rebuild each cut queue from: the end of
// its last good entry's record. Open only.
func (s *Store) checkQueueTails() map[*consumeQueue]int64 {
	minPhy := s.cl.minOffset()
	rebuild := map[*consumeQueue]int64{}
	for _, cq := range s.allQueues() {
		cut := int64(-1)
		if off, short := cq.shortFrom(); short {
			cut = off
			cq.cutFrom(off)
		}
		for {
			e, ok := cq.lastEntry()
			if !ok || e.phy < minPhy {
				break // empty, or expired: nothing left to check it against
			}
			q := cq.maxOffset.Load() - 1
			c, err := s.checkTailEntry(cq, q, e)
			if c == entryDamaged {
				s.noteDamaged(cq, q, e, err)
			}
			if c != entryWrong {
				break
			}
			s.log.Warn("consume-queue entry damaged: cut", "topic", cq.topic, "queue", cq.queueID,
				"queueOffset", q, "offset", e.phy, "size", e.size, "err", err)
			cut = q
			cq.cutFrom(q)
		}
		if cut < 0 {
			continue
		}
		from := minPhy
		if e, ok := cq.lastEntry(); ok {
			from = max(from, e.phy+int64(e.size))
		}
		rebuild[cq] = from
		s.log.Warn("consume queue damaged: cut, rebuilding it from the commitlog", "topic", cq.topic, "queue", cq.queueID,
			"queueOffset", cut, "offset", from)
	}
	return rebuild
}

// checkTailEntry is checkEntry with the body CRC and, for a valid record,
// the tag code (except in SCHEDULE_TOPIC_XXXX, whose code depends on the
// delay levels configured).
func (s *Store) checkTailEntry(cq *consumeQueue, qoff int64, e cqEntry) (entryCheck, error) {
	seg, rec := s.cl.read(e.phy, int(e.size))
	if seg == nil {
		return entryWrong, fmt.Errorf("points outside the commitlog")
	}
	defer seg.Release()
	c, err := s.checkEntry(cq, qoff, e, rec, true)
	if c == entryOK && cq.topic != ScheduleTopic {
		v, _ := message.ParseRecord(rec)
		if tc := s.tagsCode(&v, v.Properties()); tc != e.tagsCode {
			return entryWrong, fmt.Errorf("tag code %d, the record's is %d", e.tagsCode, tc)
		}
	}
	return c, err
}

// rebuildQueues re-dispatches the records from the lowest offset in only
// up to to, into the queues of only and each from its own offset (the
// general re-dispatch from to does the rest). Open only.
func (s *Store) rebuildQueues(only map[*consumeQueue]int64, to int64) error {
	if len(only) == 0 {
		return nil
	}
	from := to
	for _, f := range only {
		from = min(from, f)
	}
	s.dispMu.Lock()
	defer s.dispMu.Unlock()
	s.lastSkip = damagedRange{}
	defer func() { s.lastSkip = damagedRange{} }()
	fn := func(v *message.RecordView, phy int64) error {
		tt := message.TransactionType(v.SysFlag)
		if tt != message.TransactionNotType && tt != message.TransactionCommitType {
			return nil
		}
		cq := s.queue(string(v.Topic()), v.QueueID())
		if start, ok := only[cq]; !ok || phy < start || names.Topic(cq.topic) != nil {
			return nil
		}
		return s.queueRecord(v, phy, cq)
	}
	for pos := from; pos < to; {
		seg := s.cl.segment(pos)
		if seg == nil {
			if min := s.cl.minOffset(); min > pos {
				pos = min
				continue
			}
			return fmt.Errorf("%w: commitlog offset %d not mapped", ErrCorrupt, pos)
		}
		next, err := s.walkSegment(seg, pos, to, only, fn)
		seg.Release()
		if err != nil {
			return err
		}
		if next == pos {
			break
		}
		pos = next
	}
	return nil
}
