package store

import (
	"fmt"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// Verify checks the store's invariants the expensive way: every consume
// queue entry in [min, max) points at a complete record below the
// dispatched offset whose CRC, topic, queue id and queue offset match, and
// queue offsets are dense. Meant for tests and offline checks; it reads
// everything.
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
			v, err := message.ParseRecord(rec)
			switch {
			case err != nil:
			case !v.CheckCRC():
				err = fmt.Errorf("body CRC mismatch")
			case string(v.Topic()) != cq.topic || v.QueueID() != cq.queueID || v.QueueOffset() != off || v.PhysicalOffset() != e.phy:
				err = fmt.Errorf("record is %s/%d@%d at %d", v.Topic(), v.QueueID(), v.QueueOffset(), v.PhysicalOffset())
			}
			seg.Release()
			if err != nil {
				return fmt.Errorf("%w: queue %s/%d entry %d: %w", ErrCorrupt, cq.topic, cq.queueID, off, err)
			}
		}
	}
	return nil
}
