package store

import (
	"fmt"
)

// ReadRaw returns up to max commitlog bytes starting at offset, stopping
// at the end of offset's segment and at the tail (HA master side). The
// slice stays valid until release is called. It returns nil when offset
// is at or past the tail or below the minimum.
func (s *Store) ReadRaw(offset int64, max int) (data []byte, release func()) {
	tail := s.cl.wrote.Load()
	if offset >= tail || max <= 0 {
		return nil, func() {}
	}
	seg := s.cl.segment(offset)
	if seg == nil {
		return nil, func() {}
	}
	pos := int(offset - seg.Start)
	end := min(seg.Size(), pos+max, int(tail-seg.Start))
	return seg.Data[pos:end:end], seg.Release
}

// AppendRaw appends bytes copied from a master's commitlog at offset, which
// must equal the current tail (HA slave side). data may end inside a
// record; the dispatcher waits for the rest. Records keep the master's
// queue offsets, so PutMessage must not be used on a replica.
func (s *Store) AppendRaw(offset int64, data []byte) error {
	s.putMu.Lock()
	defer s.putMu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if s.writeErr != nil {
		return s.writeErr
	}
	size := int64(s.cl.segSize)
	if tail := s.cl.wrote.Load(); offset != tail {
		// An empty replica starts where its master chose: 4.9.7 sends an
		// empty slave only its newest segment, so offset is a segment start.
		if tail != 0 || s.cl.lastSegment() != nil || offset%size != 0 {
			return fmt.Errorf("%w: raw append at %d, tail is %d", ErrOffsetMismatch, offset, tail)
		}
		// Segment first: the dispatcher then skips to it (nothing below
		// minOffset to dispatch) and the flusher has nothing below it.
		if _, err := s.cl.newSegment(offset); err != nil {
			return err
		}
		s.cl.flushed.Store(offset)
		s.cl.wrote.Store(offset)
	}
	for len(data) > 0 {
		off := s.cl.wrote.Load()
		seg := s.cl.lastSegment()
		if seg == nil || off >= seg.Start+size {
			var err error
			if seg, err = s.cl.newSegment(off - off%size); err != nil {
				return err
			}
		}
		pos := int(off - seg.Start)
		n := copy(seg.Data[pos:], data)
		data = data[n:]
		s.cl.wrote.Store(off + int64(n))
	}
	clear(s.queueTable) // queue offsets now come from the master's records
	select {
	case s.kickDisp <- struct{}{}:
	default:
	}
	return nil
}
