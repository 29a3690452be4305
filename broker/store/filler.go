package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/netip"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// A master replicates a damaged range as a filler of the same length, so
// that the slave's commitlog keeps the master's offsets byte for byte
// everywhere else (see "Damage" in doc.go):
//
//   - a range that ends its segment becomes a blank record (total size =
//     the range, blank magic, zeros), as the writer makes at a segment end;
//   - any other range becomes one record of the range's length: topic
//     DamagedTopic, sysflag TRANSACTION_ROLLBACK (so neither this store nor
//     a Java one puts it in a consume queue), queue id -1 and queue offset
//     -1 (no entry can match it), no properties, a zero body with its valid
//     CRC, times and hosts zero.
//
// A range too short for that record (it cannot happen for ranges between
// record boundaries: a record is longer than the filler's fixed part with a
// one-byte topic) is not replicated; replication stops there with an error.

// DamagedTopic is the topic of filler records.
const DamagedTopic = "RMQ_SYS_DAMAGED"

// fillerSysFlag keeps fillers out of every consume queue.
const fillerSysFlag = message.TransactionRollbackType

// isFiller reports whether v is a filler record.
func isFiller(v *message.RecordView) bool {
	return message.TransactionType(v.SysFlag) == fillerSysFlag && v.QueueID() == -1 &&
		len(v.Topic()) > 0 && string(v.Topic()) == DamagedTopic[:len(v.Topic())]
}

// filler describes the filler of one range: the record's head up to and
// including the body length, the zero body, and its tail (topic length,
// topic, properties length).
type filler struct {
	start, length int64
	blank         bool
	head, tail    []byte
}

// fillerFor builds (or finds) the filler of r, a range of d; segEnd is the
// end of r's segment.
func (d *damageSet) fillerFor(r damagedRange, segEnd int64) (*filler, error) {
	d.fillerMu.Lock()
	defer d.fillerMu.Unlock()
	if f := d.fillers[r.start]; f != nil && f.length == r.len() {
		return f, nil
	}
	f := &filler{start: r.start, length: r.len()}
	if r.end == segEnd {
		f.blank = true
		f.head = make([]byte, message.MinBlankLength)
		message.PutBlank(f.head, int(r.len()))
	} else {
		fixed := int64(message.RecordSize(0, 0, 0, 0)) // with an empty topic
		topicLen := min(int64(len(DamagedTopic)), r.len()-fixed)
		if topicLen < 1 {
			return nil, fmt.Errorf("%w: damaged range [%d, %d) too short for a filler record", ErrCorrupt, r.start, r.end)
		}
		topic := DamagedTopic[:topicLen]
		bodyLen := r.len() - fixed - topicLen
		m := &message.Message{Topic: topic, QueueID: -1, SysFlag: fillerSysFlag}
		st := &message.Stamp{QueueOffset: -1, PhysicalOffset: r.start, BodyCRC: zeroCRC(bodyLen)}
		m.BornHost = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
		st.StoreHost = m.BornHost
		rec := make([]byte, message.RecordSize(0, 0, len(topic), 0))
		n := message.EncodeRecord(rec, m, st)
		tailLen := 1 + len(topic) + 2
		f.head = rec[:n-tailLen]
		f.tail = rec[n-tailLen : n]
		binary.BigEndian.PutUint32(f.head, uint32(r.len()))
		binary.BigEndian.PutUint32(f.head[len(f.head)-4:], uint32(bodyLen))
	}
	if d.fillers == nil || len(d.fillers) >= 16 {
		d.fillers = map[int64]*filler{} // by range start; a few at a time
	}
	d.fillers[r.start] = f
	return f, nil
}

// read copies the filler's bytes [from, to) (commitlog offsets) into a new
// slice.
func (f *filler) read(from, to int64) []byte {
	out := make([]byte, to-from)
	a, b := from-f.start, to-f.start
	if a < int64(len(f.head)) {
		copy(out, f.head[a:min(b, int64(len(f.head)))])
	}
	if t := f.length - int64(len(f.tail)); len(f.tail) > 0 && b > t {
		s := max(a, t)
		copy(out[s-a:], f.tail[s-t:b-t])
	}
	return out
}

// zeroCRC is the RocketMQ body CRC of n zero bytes.
func zeroCRC(n int64) int32 {
	var zeros [32 << 10]byte
	var c uint32
	for n > 0 {
		k := min(n, int64(len(zeros)))
		c = crc32.Update(c, crc32.IEEETable, zeros[:k])
		n -= k
	}
	return int32(c & 0x7FFFFFFF)
}
