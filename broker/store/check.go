package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// Record checks. A record is valid when it parses (magic, a total size
// that fits the segment, field lengths that add up to it), its physical
// offset field is where it lies, and its body CRC matches. The body CRC
// covers the body only, as in RocketMQ 4.x: a flipped byte in the topic,
// queue id, queue offset or properties is not seen by it; the read path
// also checks topic, queue id and queue offset against the consume-queue
// entry.

var (
	errCRC         = errors.New("body CRC mismatch")
	errPhyOffset   = errors.New("physical offset field does not match the position")
	errNoBlankRoom = errors.New("record leaves no room for the segment's blank")

	magicBytes      = be32(message.MagicCode)
	blankMagicBytes = be32(message.BlankMagicCode)
)

func be32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// segEnd is the commitlog offset after seg's last byte.
func segEnd(seg *mmapfile.File) int64 { return seg.Start + int64(len(seg.Data)) }

// checkRecordAt checks the record at commitlog offset off inside seg.
func checkRecordAt(seg *mmapfile.File, off int64) (message.RecordView, error) {
	v, err := message.ParseRecord(seg.Data[off-seg.Start:])
	switch {
	case err != nil:
		return v, err
	case v.PhysicalOffset() != off:
		return v, errPhyOffset
	case v.Size()+message.MinBlankLength > len(seg.Data)-int(off-seg.Start):
		return v, errNoBlankRoom // a writer always leaves room for the blank that ends a segment
	case !v.CheckCRC():
		return v, errCRC
	}
	return v, nil
}

// blankAt reports whether a blank record fills seg from off to its end.
func blankAt(seg *mmapfile.File, off int64) bool {
	b := seg.Data[off-seg.Start:]
	return len(b) >= message.MinBlankLength && int32(binary.BigEndian.Uint32(b[4:])) == message.BlankMagicCode &&
		int(int32(binary.BigEndian.Uint32(b))) == len(b)
}

// headerAt reports cheaply whether a record seems to start at off: magic
// and physical offset field (no CRC).
func headerAt(seg *mmapfile.File, off int64) bool {
	b := seg.Data[off-seg.Start:]
	return len(b) >= message.OffPhysicalOffset+8 && int32(binary.BigEndian.Uint32(b[4:])) == message.MagicCode &&
		int64(binary.BigEndian.Uint64(b[message.OffPhysicalOffset:])) == off
}

// resync returns the first offset in (from, reach) where a valid record,
// or a blank that ends its segment, starts, looking across segments (the
// rest of a segment may be damaged and the next one intact). Candidates are
// found by their magic; a record must then pass every check, including a
// physical offset field equal to its position, which a body cannot match by
// chance. The caller holds no segment; segment returns held ones.
func (cl *commitLog) resync(from, reach int64) (int64, bool) {
	size := int64(cl.segSize)
	for start := from - from%size; start < reach; start += size {
		seg := cl.segment(start)
		if seg == nil {
			if start < cl.minOffset() {
				continue
			}
			return 0, false
		}
		lo := max(from+1, seg.Start)
		hi := min(reach, segEnd(seg))
		off, ok := resyncIn(seg, lo, hi)
		seg.Release()
		if ok {
			return off, true
		}
	}
	return 0, false
}

// resyncIn searches [lo, hi) of seg for the first valid record or blank.
func resyncIn(seg *mmapfile.File, lo, hi int64) (int64, bool) {
	data := seg.Data
	best := int64(-1)
	for _, pat := range [][]byte{magicBytes, blankMagicBytes} {
		limit := hi
		if best >= 0 {
			limit = best
		}
		for p := lo; p < limit; {
			// The magic is at byte 4 of a record.
			a, b := p-seg.Start+4, min(limit-seg.Start+4, int64(len(data)))
			if a >= b {
				break
			}
			i := bytes.Index(data[a:b], pat)
			if i < 0 {
				break
			}
			c := p + int64(i)
			if c >= limit {
				break
			}
			var ok bool
			if pat[0] == magicBytes[0] {
				_, err := checkRecordAt(seg, c)
				ok = err == nil
			} else {
				ok = blankAt(seg, c)
			}
			if ok {
				best = c
				break
			}
			p = c + 1
		}
	}
	return best, best >= 0
}

// splitRange cuts [from, to) at segment boundaries.
func splitRange(from, to, segSize int64, kind string) []damagedRange {
	var out []damagedRange
	for from < to {
		end := min(to, from-from%segSize+segSize)
		out = append(out, damagedRange{start: from, end: end, kind: kind})
		from = end
	}
	return out
}

// describeDamage names the messages in r where their headers are readable
// (topic/queue@queue offset, and whether the body CRC holds), and how many
// bytes are not readable.
func (cl *commitLog) describeDamage(r damagedRange) string {
	seg := cl.segment(r.start)
	if seg == nil {
		return "segment gone"
	}
	defer seg.Release()
	return describeIn(seg, r)
}

func describeIn(seg *mmapfile.File, r damagedRange) string {
	var msgs []string
	p, blank := recordsIn(seg, r, func(v *message.RecordView, phy int64, state string) bool {
		if v.PhysicalOffset() != phy {
			state += ", physical offset field " + fmt.Sprint(v.PhysicalOffset())
		}
		msgs = append(msgs, fmt.Sprintf("%q/%d@%d (%s)", v.Topic(), v.QueueID(), v.QueueOffset(), state))
		return len(msgs) < 64
	})
	if blank {
		msgs = append(msgs, "end-of-segment blank")
	}
	var b strings.Builder
	if len(msgs) == 0 {
		b.WriteString("messages: none readable")
	} else {
		b.WriteString("messages: " + strings.Join(msgs, ", "))
	}
	if p < r.end {
		fmt.Fprintf(&b, "; %d bytes unreadable", min(r.end, segEnd(seg))-p)
	}
	return b.String()
}

// recordsIn calls fn, in order, for each record of r whose header can be
// read (state says how: "body CRC ok", "body CRC mismatch", "magic
// damaged", ...) until fn returns false or a record cannot be read, and
// returns where it stopped and whether it stopped at a blank that ends the
// segment. A view of a mended record is of a copy. A range that began in an
// earlier segment is read from seg's start, where a record always begins.
func recordsIn(seg *mmapfile.File, r damagedRange, fn func(v *message.RecordView, phy int64, state string) bool) (int64, bool) {
	p := max(r.start, seg.Start)
	for p < r.end {
		if blankAt(seg, p) {
			return segEnd(seg), true
		}
		lim := min(r.end, segEnd(seg)) - seg.Start
		v, err := message.ParseRecord(seg.Data[p-seg.Start : lim])
		state := "body CRC ok"
		if err != nil {
			// A damaged magic or total size hides an otherwise readable
			// record: read a copy with them mended.
			if v, state, err = mendedRecord(seg.Data[p-seg.Start : lim]); err != nil {
				break
			}
		} else if !v.CheckCRC() {
			state = "body CRC mismatch"
		}
		if !fn(&v, p, state) {
			break
		}
		p += int64(v.Size())
	}
	return p, false
}

// mendedRecord parses a copy of b with the magic and then the total size
// (as all of b) put right, for describing a damaged record.
func mendedRecord(b []byte) (message.RecordView, string, error) {
	if len(b) < message.MinBlankLength || len(b) > 8<<20 {
		return message.RecordView{}, "", message.ErrBadRecord
	}
	c := append([]byte(nil), b...)
	copy(c[4:], magicBytes)
	if v, err := message.ParseRecord(c); err == nil {
		return v, "magic damaged", nil
	}
	binary.BigEndian.PutUint32(c, uint32(len(c)))
	v, err := message.ParseRecord(c)
	return v, "total size or magic damaged", err
}

// completeAt returns the size of the record at off if it is whole though
// damaged: it frames, its magic or total size put right if need be (the
// size as where its non-zero bytes end, within maxSize), its physical
// offset field is off, and it fits the segment; 0 otherwise. A torn write
// does not frame, whatever is mended: what was not written is zeros, and
// the body length, topic and properties lengths no longer add up.
func completeAt(seg *mmapfile.File, off int64, maxSize int) int64 {
	b := seg.Data[off-seg.Start:]
	// A writer leaves room for the segment's blank after every record: a
	// "record" without it was not written whole, and keeping it would leave
	// the next put no room for the blank.
	maxSize = min(maxSize, len(b)-message.MinBlankLength)
	if v, err := message.ParseRecord(b); err == nil {
		if v.PhysicalOffset() == off && v.Size() <= maxSize {
			return int64(v.Size())
		}
		return 0
	}
	if len(b) < message.OffSysFlag {
		return 0
	}
	b = b[:min(len(b), maxSize)]
	if len(b) < message.OffSysFlag {
		return 0
	}
	sizes := []int{int(int32(binary.BigEndian.Uint32(b)))}
	if n := lastNonZero(b) + 1; n > 0 {
		sizes = append(sizes, n, n+1, n+2) // empty properties end in a zero length
	}
	for _, n := range sizes {
		if n < message.OffSysFlag || n > len(b) {
			continue
		}
		mended := append([]byte(nil), b[:n]...)
		copy(mended[4:], magicBytes)
		binary.BigEndian.PutUint32(mended, uint32(n))
		if v, err := message.ParseRecord(mended); err == nil && v.PhysicalOffset() == off {
			return int64(n)
		}
	}
	return 0
}
