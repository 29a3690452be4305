package store

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// recover restores the invariants after Open:
//
//	dispatched <= wrote, every consume-queue and index entry points below
//	dispatched, and wrote is the end of the last intact record.
//
// A clean start trusts the checkpoint (no scan) when it shows everything
// below the tail dispatched, as Close leaves it (a slave's partly received
// last record is not, and the scan cuts it). An unclean one scans the
// commitlog from the segment holding the oldest durable point, checking
// magic, sizes, offsets and body CRC. A record that fails is skipped when a
// valid record follows it (resync): the damaged range stays on disk, is
// reported, and is never served; with nothing valid after it, it is the
// torn tail and is cut. Then consume queues and index are truncated past
// what was durable, every queue's tail is checked against the commitlog
// (clean start or not; a damaged tail is cut and that queue rebuilt), and
// everything is re-dispatched from the durable point.
func (s *Store) recover() error {
	ck, hasCk := readCheckpoint(s.cfg.checkpointPath())
	_, err := os.Stat(s.cfg.abortPath())
	s.CleanStart = os.IsNotExist(err)
	s.loadDamage()
	if len(s.cl.segs) == 0 {
		s.cl.wrote.Store(0)
	} else if first := s.cl.segs[0].Start; s.CleanStart && hasCk && ck.consumeQueue == ck.commitLog &&
		ck.index == ck.commitLog && s.cleanTailOK(ck.commitLog) {
		s.cl.wrote.Store(ck.commitLog)
	} else {
		s.CleanStart = false
		from := first
		if hasCk {
			from = min(ck.commitLog, ck.consumeQueue, ck.index)
			from = max(from-from%int64(s.cl.segSize), first)
		}
		end, skipped := s.scanCommitLog(from, s.referencedEnd(ck, hasCk))
		for _, r := range skipped {
			s.damage.report(r, s.cl.describeDamage(r))
		}
		if err := s.cutCommitLog(end, false); err != nil {
			return err
		}
	}
	cut, err := s.applyCutRequest()
	if err != nil {
		return err
	}
	wrote := s.cl.wrote.Load()
	s.dropDamageFrom(wrote)
	s.cl.flushed.Store(wrote)
	// Logics resume point: what the checkpoint proves durable, capped by
	// the commitlog end; with no checkpoint, from the start of what is left.
	resume := s.cl.minOffset()
	if hasCk {
		resume = max(min(ck.consumeQueue, ck.index, wrote), resume)
	}
	if resume > wrote {
		resume = wrote
	}
	s.index.truncate(resume)
	for _, cq := range s.allQueues() {
		cq.truncate(resume)
	}
	if err := s.rebuildQueues(s.checkQueueTails(), resume); err != nil {
		return fmt.Errorf("store: rebuild consume queues: %w", err)
	}
	s.dispatched.Store(resume)
	if err := s.dispatch(); err != nil {
		return fmt.Errorf("store: re-dispatch from %d: %w", resume, err)
	}
	minPhy := s.cl.minOffset()
	for _, cq := range s.allQueues() {
		cq.correctMin(minPhy)
	}
	if err := s.flushAll(); err != nil {
		return err
	}
	if cut {
		return removeCutRequest(s.cfg.StorePathRootDir)
	}
	return nil
}

// resyncMinReach is how far past a failed record recovery looks for the
// next valid one at least (see referencedEnd).
const resyncMinReach = 16 << 20

// referencedEnd bounds the search for a valid record after a failed one.
// Whatever was written before the crash is below the furthest offset that
// the checkpoint, a consume-queue entry or the index points to, or a little
// past it (records the dispatcher had not reached): looking further would
// read the whole zeroed rest of the newest segment at every unclean start
// for a torn tail that has nothing after it.
func (s *Store) referencedEnd(ck checkpoint, hasCk bool) int64 {
	var end int64
	if hasCk {
		end = ck.commitLog
	}
	for _, cq := range s.allQueues() {
		if e, ok := cq.lastEntry(); ok && e.size > 0 {
			end = max(end, e.phy+int64(e.size))
		}
	}
	return max(end, s.index.endPhy()+1)
}

// loadDamage reads the ranges of the report file that are still damaged:
// inside a stored segment and still failing their checks (a filler must
// still be one). A range whose bytes were since replaced (the operator
// restored the files) is dropped.
func (s *Store) loadDamage() {
	var keep []damagedRange
	for _, r := range readDamageLog(s.damage.path) {
		seg := s.cl.segment(r.start)
		if seg == nil {
			continue
		}
		ok := r.end <= segEnd(seg)
		if ok {
			v, err := checkRecordAt(seg, r.start)
			if r.kind == DamageFiller {
				ok = err == nil && isFiller(&v)
			} else {
				ok = err != nil
			}
		}
		seg.Release()
		if ok {
			keep = append(keep, r)
		}
	}
	s.damage.replace(keep)
}

// dropDamageFrom forgets ranges that reach the tail or beyond: the bytes
// were cut and will be written again.
func (s *Store) dropDamageFrom(tail int64) {
	var keep []damagedRange
	for _, r := range s.damage.list() {
		if r.end <= tail {
			keep = append(keep, r)
		}
	}
	s.damage.replace(keep)
}

// cleanTailOK checks the clean-shutdown tail cheaply: it must be inside
// the segment range and followed by zeros (or be at a segment end).
func (s *Store) cleanTailOK(tail int64) bool {
	first := s.cl.segs[0].Start
	last := s.cl.segs[len(s.cl.segs)-1]
	if tail < first || tail > last.Start+int64(s.cl.segSize) {
		return false
	}
	if tail == last.Start+int64(s.cl.segSize) {
		return true
	}
	if tail < last.Start {
		return false
	}
	p := int(tail - last.Start)
	if p+message.MinBlankLength > len(last.Data) {
		return false // no writer leaves less room than a blank record
	}
	return binary.BigEndian.Uint64(last.Data[p:]) == 0
}

// scanCommitLog checks records from offset from (a segment start) and
// returns the end of the last valid record and the damaged ranges it
// skipped to reach it. A record that fails is skipped when a valid record
// (or segment-end blank) follows within reach (or resyncMinReach after it,
// whichever is further), or when it is whole (completeAt); otherwise the
// log ends there. Known ranges (from the report file) are passed over
// without a second report. Open only.
func (s *Store) scanCommitLog(from, reach int64) (int64, []damagedRange) {
	size := int64(s.cl.segSize)
	segs := s.cl.segs
	first := segs[0].Start
	var skipped []damagedRange
	known := s.damage.next(from)
	pos := from
	for {
		i := int((pos - first) / size)
		if i >= len(segs) {
			return pos, skipped
		}
		seg := segs[i]
		end := seg.Start + size
		for pos < end {
			if pos >= known.start {
				pos = known.end
				known = s.damage.next(pos)
				continue
			}
			if end-pos >= message.MinBlankLength && blankAt(seg, pos) {
				pos = end
				break
			}
			if end-pos >= message.MinBlankLength {
				if v, err := checkRecordAt(seg, pos); err == nil {
					pos += int64(v.Size())
					continue
				}
			}
			next, ok := s.cl.resync(pos, max(reach, pos+max(resyncMinReach, 2*int64(s.cfg.MaxMessageSize))))
			if !ok {
				if n := completeAt(seg, pos, s.cfg.MaxMessageSize); n > 0 {
					// A whole record, damaged, with nothing valid after it:
					// not a torn write (that leaves zeros, which do not
					// frame). It was dispatched, maybe consumed: kept as a
					// range, so its queue offset is not given again.
					skipped = append(skipped, damagedRange{start: pos, end: pos + n, kind: DamageSkipped})
					pos += n
					continue
				}
				return pos, skipped
			}
			skipped = append(skipped, splitRange(pos, next, size, DamageSkipped)...)
			pos = next
			known = s.damage.next(pos)
			break // pos may be in a later segment
		}
	}
}

// cutCommitLog makes end the commitlog tail: later segments are deleted
// and the rest of end's segment is zeroed and synced. requested says the
// bytes past end are whole records cut on purpose (RequestCut), not a torn
// tail: they are not reported as damage (applyCutRequest logs them).
func (s *Store) cutCommitLog(end int64, requested bool) error {
	size := int64(s.cl.segSize)
	s.cl.mu.Lock()
	defer s.cl.mu.Unlock()
	var lost int64
	what := ""
	for n := len(s.cl.segs); n > 0; n = len(s.cl.segs) {
		seg := s.cl.segs[n-1]
		if seg.Start < end || (seg.Start == end && n == 1) {
			break
		}
		lost += usedBytes(seg.Data)
		seg.TryDestroy()
		s.cl.segs = s.cl.segs[:n-1]
	}
	if n := len(s.cl.segs); n > 0 {
		seg := s.cl.segs[n-1]
		if p := end - seg.Start; p < size {
			// Only the torn tail can be non-zero; check the first pages
			// cheaply and let the filesystem zero the rest.
			head := seg.Data[p:min(p+int64(s.cfg.MaxMessageSize), size)]
			if !requested && !allZero(head) {
				used := int64(lastNonZero(head) + 1)
				lost += used
				what = describeIn(seg, damagedRange{start: end, end: end + used})
				s.damage.report(damagedRange{start: end, end: end + used, kind: DamageCut}, what)
			}
			if _, err := seg.ZeroFrom(int(p)); err != nil {
				return fmt.Errorf("%w: cut commitlog at %d: %w", ErrWriteFailed, end, err)
			}
		}
	}
	if requested {
		s.cl.wrote.Store(end)
		return nil
	}
	s.Truncated = lost
	if lost > 0 {
		if what == "" {
			what = "later segments only"
		}
		s.log.Warn("unclean shutdown: commitlog cut", "offset", end, "bytesDropped", lost, "what", what)
	}
	s.cl.wrote.Store(end)
	return nil
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// lastNonZero is the index of the last non-zero byte of b (-1: none).
func lastNonZero(b []byte) int {
	n := int(usedBytes(b))
	for n > 0 && b[n-1] == 0 {
		n--
	}
	return n - 1
}

func usedBytes(b []byte) int64 {
	for i := len(b); i > 0; i -= 4096 {
		if !allZero(b[max(0, i-4096):i]) {
			return int64(i)
		}
	}
	return 0
}
