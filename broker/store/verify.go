package store

import (
	"fmt"
)

// Verify checks the store's invariants the expensive way: every consume
// queue entry in [min, max) points at a complete record below the
// dispatched offset whose CRC, topic, queue id and queue offset match, or is
// a gap (its record is in a known damaged range, or it points at the
// queue's next record); queue offsets are dense. Meant for tests and
// offline checks; it reads everything. Damage it finds is an error even if
// a read would now report and skip it.
func (s *Store) Verify() error {
	dispatched := s.dispatched.Load()
	minPhy := s.cl.minOffset()
	for _, cq := range s.allQueues() {
		min, max := cq.minOffset.Load(), cq.maxOffset.Load()
		if min > max {
			return fmt.Errorf("%w: queue %s/%d min %d > max %d", ErrCorrupt, cq.topic, cq.queueID, min, max)
		}
		for off := min; off < max; off++ {
			e, ok := cq.entry(off)
			if !ok || e.size <= 0 {
				return fmt.Errorf("%w: queue %s/%d entry %d missing", ErrCorrupt, cq.topic, cq.queueID, off)
			}
			if e.phy < minPhy {
				continue // record removed by retention; the entry is below the new minimum
			}
			if e.phy+int64(e.size) > dispatched {
				return fmt.Errorf("%w: queue %s/%d entry %d points past dispatch (%d)", ErrCorrupt, cq.topic, cq.queueID, off, dispatched)
			}
			seg, rec := s.cl.read(e.phy, int(e.size))
			if seg == nil {
				return fmt.Errorf("%w: queue %s/%d entry %d: commitlog %d unreadable", ErrCorrupt, cq.topic, cq.queueID, off, e.phy)
			}
			c, err := s.checkEntry(cq, off, e, rec, true)
			seg.Release()
			switch c {
			case entryDamaged:
				return fmt.Errorf("%w: queue %s/%d entry %d: damaged record at %d not known: %w", ErrCorrupt, cq.topic, cq.queueID, off, e.phy, err)
			case entryWrong:
				return fmt.Errorf("%w: queue %s/%d entry %d: %w", ErrCorrupt, cq.topic, cq.queueID, off, err)
			}
		}
	}
	return nil
}
