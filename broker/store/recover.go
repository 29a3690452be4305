package store

import (
	"encoding/binary"
	"fmt"
	"log"
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
// magic, sizes, offsets and body CRC, cuts a torn tail, truncates consume
// queues and index past what was durable, and re-dispatches from there.
func (s *Store) recover() error {
	ck, hasCk := readCheckpoint(s.cfg.checkpointPath())
	_, err := os.Stat(s.cfg.abortPath())
	s.CleanStart = os.IsNotExist(err)
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
		end, err := s.scanCommitLog(from)
		if err != nil {
			return err
		}
		if err := s.cutCommitLog(end); err != nil {
			return err
		}
	}
	wrote := s.cl.wrote.Load()
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
	s.dispatched.Store(resume)
	if err := s.dispatch(); err != nil {
		return fmt.Errorf("store: re-dispatch from %d: %w", resume, err)
	}
	minPhy := s.cl.minOffset()
	for _, cq := range s.allQueues() {
		cq.correctMin(minPhy)
	}
	return s.flushAll()
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

// scanCommitLog verifies records from offset from (a segment start) and
// returns the end of the last intact one: framed, body CRC and physical
// offset right, room left for a blank. A record no queue can hold is kept:
// dispatch skips it (queueable).
func (s *Store) scanCommitLog(from int64) (int64, error) {
	size := int64(s.cl.segSize)
	for _, seg := range s.cl.segs {
		if seg.Start+size <= from {
			continue
		}
		pos := 0
		for pos+message.MinBlankLength <= len(seg.Data) {
			b := seg.Data[pos:]
			total := int(int32(binary.BigEndian.Uint32(b)))
			magic := int32(binary.BigEndian.Uint32(b[4:]))
			if magic == message.BlankMagicCode && total == len(b) {
				pos = len(seg.Data)
				break
			}
			// A writer always leaves room for the blank that ends a segment.
			v, err := message.ParseRecord(b)
			if err != nil || !v.CheckCRC() || v.PhysicalOffset() != seg.Start+int64(pos) ||
				v.Size()+message.MinBlankLength > len(b) {
				return seg.Start + int64(pos), nil
			}
			pos += v.Size()
		}
		if pos < len(seg.Data) {
			return seg.Start + int64(pos), nil
		}
	}
	last := s.cl.segs[len(s.cl.segs)-1]
	return last.Start + size, nil
}

// cutCommitLog makes end the commitlog tail: later segments are deleted
// and the rest of end's segment is zeroed and synced.
func (s *Store) cutCommitLog(end int64) error {
	size := int64(s.cl.segSize)
	s.cl.mu.Lock()
	defer s.cl.mu.Unlock()
	var lost int64
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
			if !allZero(head) {
				lost += usedBytes(head)
			}
			if _, err := seg.ZeroFrom(int(p)); err != nil {
				return fmt.Errorf("%w: cut commitlog at %d: %w", ErrWriteFailed, end, err)
			}
		}
	}
	s.Truncated = lost
	if lost > 0 {
		log.Printf("store: unclean shutdown: commitlog cut at offset %d, about %d bytes dropped", end, lost)
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

func usedBytes(b []byte) int64 {
	for i := len(b); i > 0; i -= 4096 {
		if !allZero(b[max(0, i-4096):i]) {
			return int64(i)
		}
	}
	return 0
}
