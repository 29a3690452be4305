package store

import (
	"bytes"
	"fmt"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
	"github.com/openrmq/rocketmq-operator/pkg/message"
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

// ReadChecked is ReadRaw for replication: it hands out only bytes of
// records that pass their checks (framing, physical offset, and the body
// CRC under CheckCRCOnRead), and
// a known damaged range as its filler (filler.go), found damage becoming a
// known range first. checked is the end of the last record the previous
// call checked (end, passed back; -1 when unknown, e.g. for a new slave):
// bytes below it are not checked again, so a record larger than max is
// checked once. An offset inside a record whose start is unknown is placed
// by looking back for the record (at most MaxMessageSize). It returns nil
// data at the tail, and an error when offset cannot be served (a range too
// short for a filler; an offset that is in no record).
func (s *Store) ReadChecked(offset int64, max int, checked int64) (data []byte, end int64, release func(), err error) {
	noop := func() {}
	tail := s.cl.wrote.Load()
	if offset >= tail || max <= 0 {
		return nil, checked, noop, nil
	}
	if r, ok := s.damage.find(offset); ok {
		f, err := s.damage.fillerFor(r, r.start-r.start%int64(s.cl.segSize)+int64(s.cl.segSize))
		if err != nil {
			return nil, checked, noop, err
		}
		s.damage.count.Add(1)
		return f.read(offset, min(r.end, offset+int64(max))), r.end, noop, nil
	}
	seg := s.cl.segment(offset)
	if seg == nil {
		return nil, checked, noop, nil
	}
	limit := min(segEnd(seg), tail, offset+int64(max))
	if offset < checked {
		// Checked already; a range never starts inside a checked record.
		stop := min(checked, limit)
		return seg.Data[offset-seg.Start : stop-seg.Start : stop-seg.Start], checked, seg.Release, nil
	}
	start := offset
	if checked != offset && offset%int64(s.cl.segSize) != 0 && !headerAt(seg, offset) && !blankAt(seg, offset) {
		if start = s.recordBefore(seg, offset); start < 0 {
			seg.Release()
			return nil, checked, noop, fmt.Errorf("%w: commitlog offset %d is inside no record the master can check", ErrCorrupt, offset)
		}
	}
	p, end := start, start
	bad := s.damage.next(start)
	for p < limit && p < bad.start {
		if blankAt(seg, p) {
			end = segEnd(seg)
			break
		}
		v, err := s.checkReplicated(seg, p)
		if err == nil && p+int64(v.Size()) > tail {
			break // not whole yet (a replica's own tail); never on a master
		}
		if err != nil {
			if p > start {
				break // hand out the good records first
			}
			seg.Release()
			s.noteReplicationDamage(p, tail)
			if _, ok := s.damage.find(offset); !ok {
				return nil, checked, noop, fmt.Errorf("%w: record at commitlog offset %d: %w", ErrCorrupt, p, err)
			}
			return s.ReadChecked(offset, max, checked) // now a known range: its filler
		}
		p += int64(v.Size())
		end = p
	}
	if end <= offset {
		seg.Release()
		return nil, checked, noop, nil
	}
	stop := min(end, limit)
	return seg.Data[offset-seg.Start : stop-seg.Start : stop-seg.Start], end, seg.Release, nil
}

// checkReplicated is checkRecordAt with the body CRC only under
// CheckCRCOnRead.
func (s *Store) checkReplicated(seg *mmapfile.File, off int64) (message.RecordView, error) {
	if s.cfg.CheckCRCOnRead {
		return checkRecordAt(seg, off)
	}
	v, err := message.ParseRecord(seg.Data[off-seg.Start:])
	if err == nil && v.PhysicalOffset() != off {
		err = errPhyOffset
	}
	return v, err
}

// recordBefore finds the start of the record holding off, looking back at
// most MaxMessageSize for a record header whose physical offset field is
// its position and which reaches past off (-1 if there is none).
func (s *Store) recordBefore(seg *mmapfile.File, off int64) int64 {
	lo := max(seg.Start, off-int64(s.cfg.MaxMessageSize))
	data := seg.Data[lo-seg.Start : min(off-seg.Start+8, int64(len(seg.Data)))] // a magic up to off+8: a record starting just before off
	for i := len(data); i > 0; {
		j := bytes.LastIndex(data[:i], magicBytes)
		if j < 0 {
			return -1
		}
		c := lo + int64(j) - 4
		if c >= lo && c <= off && headerAt(seg, c) {
			if v, err := message.ParseRecord(seg.Data[c-seg.Start:]); err == nil && c+int64(v.Size()) > off {
				return c
			}
		}
		i = j + len(magicBytes) - 1
	}
	return -1
}

// noteReplicationDamage reports the record at p, which failed its checks
// while being replicated, as a damaged range reaching the next valid
// record (or the segment end, or the tail, where the next record will
// start).
func (s *Store) noteReplicationDamage(p, tail int64) {
	size := int64(s.cl.segSize)
	end := min(p-p%size+size, tail)
	if q, ok := s.cl.resync(p, tail); ok {
		end = min(q, p-p%size+size)
	}
	r := damagedRange{start: p, end: end, kind: DamageRead}
	s.damage.report(r, "found by replication; "+s.cl.describeDamage(r))
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
		s.cl.claim(off + int64(min(len(data), seg.Size()-pos)))
		n := copy(seg.Data[pos:], data)
		data = data[n:]
		s.cl.wrote.Store(off + int64(n))
	}
	s.cl.askWarm()
	clear(s.queueTable) // queue offsets now come from the master's records
	kick(s.kickDisp)
	return nil
}
