package store

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// Index file layout (big endian).
const (
	indexHeaderSize = 40 // begin ts 8, end ts 8, begin phy 8, end phy 8, slot count 4, index count 4
	indexSlotSize   = 4  // entry number of the newest entry in the slot's chain
	indexEntrySize  = 20 // key hash 4, commitlog offset 8, time delta s 4, previous entry 4
)

func indexFileSize(slots, entries int) int {
	return indexHeaderSize + slots*indexSlotSize + entries*indexEntrySize
}

// indexFile is one hash index file. Entry 0 is unused so that 0 in a slot
// or a previous-entry field means "none". Access is serialised by
// indexService.mu.
type indexFile struct {
	dirty   atomic.Bool
	f       *mmapfile.File
	slots   int
	entries int
}

type indexHeader struct {
	beginTs, endTs, beginPhy, endPhy int64
	slotCount, indexCount            int32
}

// header reads the file's header. A damaged one never claims more entries
// than the file holds, so entry numbers below indexCount are in the file.
func (x *indexFile) header() indexHeader {
	b := x.f.Data
	be := binary.BigEndian
	return indexHeader{
		beginTs: int64(be.Uint64(b)), endTs: int64(be.Uint64(b[8:])),
		beginPhy: int64(be.Uint64(b[16:])), endPhy: int64(be.Uint64(b[24:])),
		slotCount: int32(be.Uint32(b[32:])), indexCount: min(int32(be.Uint32(b[36:])), int32(x.entries)),
	}
}

func (x *indexFile) setHeader(h indexHeader) {
	b := x.f.Data
	be := binary.BigEndian
	be.PutUint64(b, uint64(h.beginTs))
	be.PutUint64(b[8:], uint64(h.endTs))
	be.PutUint64(b[16:], uint64(h.beginPhy))
	be.PutUint64(b[24:], uint64(h.endPhy))
	be.PutUint32(b[32:], uint32(h.slotCount))
	be.PutUint32(b[36:], uint32(h.indexCount))
}

// keyHash is RocketMQ's non-negative hash of the index key "topic#key".
func keyHash[T ~string | ~[]byte](topic, key T) int32 {
	h := message.JavaHashAppend(message.JavaHashAppend(message.JavaStringHash(topic), "#"), key)
	if h < 0 {
		h = -h
	}
	if h < 0 { // math.MinInt32
		h = 0
	}
	return h
}

// slotPos is the slot of hash; keyHash is never negative, but a hash read
// back from a damaged file may be.
func (x *indexFile) slotPos(hash int32) int {
	return indexHeaderSize + int(uint32(hash)%uint32(x.slots))*indexSlotSize
}

func (x *indexFile) entryPos(n int32) int {
	return indexHeaderSize + x.slots*indexSlotSize + int(n)*indexEntrySize
}

type indexEntry struct {
	hash     int32
	phy      int64
	timeDiff int32
	prev     int32
}

func (x *indexFile) entry(n int32) indexEntry {
	b := x.f.Data[x.entryPos(n):]
	be := binary.BigEndian
	return indexEntry{int32(be.Uint32(b)), int64(be.Uint64(b[4:])), int32(be.Uint32(b[12:])), int32(be.Uint32(b[16:]))}
}

func (x *indexFile) full() bool { return int(x.header().indexCount) >= x.entries }

// put appends an entry for the key of hash (keyHash) and links it into its slot
// chain. The caller checked full().
func (x *indexFile) put(hash int32, phy, storeTs int64) {
	h := x.header()
	if h.indexCount < 1 {
		h.indexCount = 1
	}
	if h.indexCount == 1 {
		h.beginTs, h.beginPhy = storeTs, phy
	}
	sp := x.slotPos(hash)
	be := binary.BigEndian
	prev := int32(be.Uint32(x.f.Data[sp:]))
	if prev <= 0 || prev >= h.indexCount {
		prev = 0
		h.slotCount++
	}
	diff := (storeTs - h.beginTs) / 1000
	if diff < 0 {
		diff = 0
	}
	n := h.indexCount
	b := x.f.Data[x.entryPos(n):]
	be.PutUint32(b, uint32(hash))
	be.PutUint64(b[4:], uint64(phy))
	be.PutUint32(b[12:], uint32(diff))
	be.PutUint32(b[16:], uint32(prev))
	be.PutUint32(x.f.Data[sp:], uint32(n)) // link after the entry is complete
	h.indexCount = n + 1
	h.endTs, h.endPhy = storeTs, phy
	x.setHeader(h)
	x.dirty.Store(true)
}

// query walks the chain of the key of hash (keyHash) newest first and appends to
// out the commitlog offsets of entries stored within [begin, end] ms, up to max in
// total.
func (x *indexFile) query(hash int32, begin, end int64, max int, out []int64) []int64 {
	h := x.header()
	n := int32(binary.BigEndian.Uint32(x.f.Data[x.slotPos(hash):]))
	for n > 0 && n < h.indexCount && len(out) < max {
		e := x.entry(n)
		t := addSat(h.beginTs, int64(e.timeDiff)*1000)
		if e.hash == hash && t >= begin && t <= end {
			out = append(out, e.phy)
		}
		if e.prev <= 0 || e.prev >= n || t < begin {
			break
		}
		n = e.prev
	}
	return out
}

// truncate undoes, newest first, every entry pointing at or past phyEnd.
// Undoing in reverse insertion order restores each slot to its earlier
// head exactly.
func (x *indexFile) truncate(phyEnd int64) {
	h := x.header()
	be := binary.BigEndian
	for h.indexCount > 1 {
		n := h.indexCount - 1
		e := x.entry(n)
		if e.phy < phyEnd {
			h.endPhy = e.phy
			h.endTs = addSat(h.beginTs, int64(e.timeDiff)*1000)
			break
		}
		sp := x.slotPos(e.hash)
		if int32(be.Uint32(x.f.Data[sp:])) == n {
			be.PutUint32(x.f.Data[sp:], uint32(e.prev))
		}
		clear(x.f.Data[x.entryPos(n) : x.entryPos(n)+indexEntrySize])
		h.indexCount = n
	}
	if h.indexCount <= 1 {
		h = indexHeader{indexCount: 1}
	}
	x.setHeader(h)
}
