package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// fuzzSegSize is the commitlog segment size of the fuzz targets; an input
// fills at most fuzzSegs segments.
const (
	fuzzSegSize = 4096
	fuzzSegs    = 2
)

// fuzzSegments returns seed commitlog content: records of a few queues
// back to back from offset 0, with a blank record where a segment ends.
func fuzzSegments(tb testing.TB, n int, props map[string]string) []byte {
	tb.Helper()
	var out []byte
	qoffs := map[int32]int64{}
	for i := range n {
		qid := int32(i % 2)
		p, err := message.EncodeProperties(props)
		if err != nil {
			tb.Fatal(err)
		}
		m := &message.Message{Topic: "F", QueueID: qid, Body: []byte(fmt.Sprintf("body-%d", i)), Properties: p,
			BornTimestamp: 1700000000000, BornHost: netip.MustParseAddrPort("10.1.2.3:4567")}
		size := message.RecordSize(message.SysFlagFor(0, m.BornHost, fuzzStoreHost), len(m.Body), len(m.Topic), len(m.Properties))
		if room := fuzzSegSize - len(out)%fuzzSegSize; size+message.MinBlankLength > room {
			blank := make([]byte, room)
			message.PutBlank(blank, room)
			out = append(out, blank...)
		}
		rec := make([]byte, size)
		message.EncodeRecord(rec, m, &message.Stamp{QueueOffset: qoffs[qid], PhysicalOffset: int64(len(out)),
			StoreTimestamp: 1700000000001 + int64(i), StoreHost: fuzzStoreHost, BodyCRC: message.BodyCRC(m.Body)})
		qoffs[qid]++
		out = append(out, rec...)
	}
	return out
}

var fuzzStoreHost = netip.MustParseAddrPort("127.0.0.1:10911")

// fuzzCommitLog maps data (cut to fuzzSegs segments, zero-padded) as an
// in-memory commitlog.
func fuzzCommitLog(data []byte) *commitLog {
	cl := &commitLog{segSize: fuzzSegSize}
	for start := 0; start < min(len(data), fuzzSegs*fuzzSegSize) || start == 0; start += fuzzSegSize {
		seg := make([]byte, fuzzSegSize)
		copy(seg, data[min(start, len(data)):])
		cl.segs = append(cl.segs, &mmapfile.File{Start: int64(start), Data: seg})
	}
	return cl
}

// acceptable reports whether recovery may keep what b, the rest of a
// segment from commitlog offset phy, starts with: a blank that fills it, or
// a record the writer could have left there. It returns the size kept.
func acceptable(b []byte, phy int64) (size int, ok bool) {
	if int32(binary.BigEndian.Uint32(b[4:])) == message.BlankMagicCode && int(binary.BigEndian.Uint32(b)) == len(b) {
		return len(b), true
	}
	v, err := message.ParseRecord(b)
	if err != nil || !v.CheckCRC() || v.PhysicalOffset() != phy || v.Size()+message.MinBlankLength > len(b) {
		return 0, false
	}
	return v.Size(), true // one no queue can hold is kept too: dispatch skips it
}

// queued reports whether the record gets a consume-queue entry: PREPARED
// and ROLLBACK transaction records do not.
func queued(v *message.RecordView) bool {
	tt := message.TransactionType(v.SysFlag)
	return tt == message.TransactionNotType || tt == message.TransactionCommitType
}

// FuzzScanCommitLog runs the recovery scan over arbitrary segment bytes. It
// must end inside the commitlog; below the end, every byte is a record or
// blank the writer could have left there (framing, CRC, physical offset,
// room for a blank) or inside a damaged range the scan reports; and what
// follows the end is no valid record.
func FuzzScanCommitLog(f *testing.F) {
	f.Add(fuzzSegments(f, 3, map[string]string{"KEYS": "k1 k2"}))
	f.Add(fuzzSegments(f, 60, map[string]string{"TAGS": "a"}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		cl := fuzzCommitLog(data)
		s := &Store{cl: cl, damage: newDamageSet(filepath.Join(t.TempDir(), DamageLogFile), fuzzSegSize, slog.New(slog.DiscardHandler))}
		total := int64(len(cl.segs) * fuzzSegSize)
		end, skipped := s.scanCommitLog(0, total)
		if end < 0 || end > total {
			t.Fatalf("scan end %d outside [0, %d]", end, total)
		}
		next := 0 // the next skipped range
		for _, seg := range cl.segs {
			pos := int64(0)
			for pos < fuzzSegSize && seg.Start+pos < end {
				if next < len(skipped) && skipped[next].start == seg.Start+pos {
					r := skipped[next]
					if r.end <= r.start || r.end > seg.Start+fuzzSegSize {
						t.Fatalf("skipped range [%d, %d) is not inside segment %d", r.start, r.end, seg.Start)
					}
					pos, next = r.end-seg.Start, next+1
					continue
				}
				if len(seg.Data[pos:]) < message.MinBlankLength {
					t.Fatalf("scan kept the last %d bytes of segment %d", len(seg.Data[pos:]), seg.Start)
				}
				n, ok := acceptable(seg.Data[pos:], seg.Start+pos)
				if !ok {
					t.Fatalf("scan kept offset %d (end %d), neither a valid record nor a reported range", seg.Start+pos, end)
				}
				pos += int64(n)
			}
			if seg.Start+pos == end && pos < fuzzSegSize {
				if len(seg.Data[pos:]) >= message.MinBlankLength {
					if _, ok := acceptable(seg.Data[pos:], end); ok {
						t.Fatalf("scan ended at %d, before a valid record", end)
					}
				}
				return
			}
			if seg.Start+pos > end {
				t.Fatalf("scan end %d is inside the record at %d", end, seg.Start+pos-1)
			}
		}
	})
}

func fuzzStoreConfig(root string) Config {
	cfg := DefaultConfig(root)
	cfg.MappedFileSizeCommitLog = fuzzSegSize
	cfg.MappedFileSizeConsumeQueue = 16 * CQEntrySize
	cfg.MaxMessageSize = 2048
	cfg.MaxHashSlotNum = 16
	cfg.MaxIndexNum = 64
	cfg.StoreHost = fuzzStoreHost
	cfg.DiskUsage = func(string) (float64, error) { return 0.1, nil }
	cfg.CleanResourceInterval = time.Hour
	return cfg
}

// fuzzRecoverTimeout is how long one recovery may take before it counts as hung.
const fuzzRecoverTimeout = 30 * time.Second

// FuzzRecover opens a store whose commitlog holds the fuzz bytes, with or
// without a checkpoint (flags bit 0) and the abort marker of an unclean stop
// (bit 1). The checkpoint is one our writer can leave: its logics offset is
// where a dispatcher can stop, at or below its commitlog offset. Open must
// not panic or hang; it may refuse only with ErrCorrupt. An opened store
// must take and read back a message, close cleanly and reopen as a clean
// start with the same tail, and write nothing outside its root. When the
// records it kept have dense queue offsets (as every writer leaves them;
// the store does not repair gaps), it must also pass Verify and keep every
// queue across the restart.
func FuzzRecover(f *testing.F) {
	seg := fuzzSegments(f, 60, map[string]string{"KEYS": "k1 k2", "UNIQ_KEY": "U1"})
	f.Add(seg, uint8(2), int64(0), int64(0))
	f.Add(seg[:len(seg)-30], uint8(3), int64(fuzzSegSize), int64(100))
	f.Add(seg, uint8(1), int64(len(seg)), int64(len(seg)))
	f.Add([]byte{}, uint8(0), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, flags uint8, ckCommitLog, ckLogics int64) {
		outer := t.TempDir()
		root := filepath.Join(outer, "a", "b", "store") // room for a topic's "../" to show
		cfg := fuzzStoreConfig(root)
		logics := dispatchStop(fuzzCommitLog(data), min(ckLogics, ckCommitLog))
		writeFuzzStore(t, cfg, data, flags, checkpoint{commitLog: ckCommitLog, consumeQueue: logics, index: logics})

		hung := time.AfterFunc(fuzzRecoverTimeout, func() {
			buf := make([]byte, 1<<20)
			panic("store: recovery hung:\n" + string(buf[:runtime.Stack(buf, true)]))
		})
		defer hung.Stop()
		s, err := Open(cfg)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open refused with %v, not ErrCorrupt", err)
			}
			checkFuzzTree(t, outer, root)
			return
		}
		tail := s.CommitLogMaxOffset()
		if tail < 0 || tail > fuzzSegs*fuzzSegSize {
			s.Close()
			t.Fatalf("tail %d after recovery", tail)
		}
		dense := denseQueues(fuzzCommitLog(data), tail)
		if err := s.Verify(); err != nil && dense {
			s.Close()
			t.Fatalf("Verify after recovery: %v", err)
		}
		r, err := s.PutMessage(newMsg("AFTER", 0, "after", nil))
		if err != nil || r.Status != PutOK {
			s.Close()
			t.Fatalf("put after recovery to tail %d: %v %v", tail, r, err)
		}
		waitDispatched(t, s)
		queues := filledQueues(s)
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		s, err = Open(cfg)
		if err != nil {
			t.Fatalf("reopen after a clean close: %v", err)
		}
		defer s.Close()
		if !s.CleanStart || s.CommitLogMaxOffset() != r.PhysicalOffset+int64(r.Size) {
			t.Fatalf("reopen: clean %v, tail %d, want %d", s.CleanStart, s.CommitLogMaxOffset(), r.PhysicalOffset+int64(r.Size))
		}
		if m, err := s.GetMessageByOffset(r.PhysicalOffset); err != nil || string(m.Body) != "after" {
			t.Fatalf("the message put after recovery does not read back: %v", err)
		}
		if got := filledQueues(s); dense && !reflect.DeepEqual(got, queues) {
			t.Fatalf("queues before the restart:\n%v\nafter:\n%v", queues, got)
		}
		checkFuzzTree(t, outer, root)
	})
}

// filledQueues lists the queues that hold entries: one that never got any
// (a record with a negative queue offset is skipped as a replay) has no
// file, and a restart does not bring it back.
func filledQueues(s *Store) []QueueInfo {
	var out []QueueInfo
	for _, q := range s.Queues() {
		if q.MaxOffset > q.MinOffset {
			out = append(out, q)
		}
	}
	return out
}

// dispatchStop returns the highest offset at or below off where the
// dispatcher can stop: a segment start, or the end of a record or blank
// reached from one by framing alone (the dispatcher checks no CRC).
func dispatchStop(cl *commitLog, off int64) int64 {
	stop := int64(0)
	for _, seg := range cl.segs {
		for pos := 0; seg.Start+int64(pos) <= off; {
			stop = seg.Start + int64(pos)
			if pos+message.MinBlankLength > len(seg.Data) ||
				int32(binary.BigEndian.Uint32(seg.Data[pos+4:])) == message.BlankMagicCode {
				break // the next stop is the next segment's start
			}
			v, err := message.ParseRecord(seg.Data[pos:])
			if err != nil {
				break
			}
			pos += v.Size()
		}
	}
	if end := int64(len(cl.segs) * fuzzSegSize); end <= off {
		stop = end
	}
	return stop
}

// denseQueues reports whether the queued records below tail give every
// queue consecutive offsets from its first one.
func denseQueues(cl *commitLog, tail int64) bool {
	next := map[string]int64{}
	for _, seg := range cl.segs {
		for pos := 0; seg.Start+int64(pos) < tail; {
			v, err := message.ParseRecord(seg.Data[pos:])
			if err != nil {
				break // the blank that ends the segment
			}
			if queued(&v) {
				k := fmt.Sprintf("%s/%d", v.Topic(), v.QueueID())
				if n, ok := next[k]; ok && v.QueueOffset() != n {
					return false
				}
				next[k] = v.QueueOffset() + 1
			}
			pos += v.Size()
		}
	}
	return true
}

func writeFuzzStore(t *testing.T, cfg Config, data []byte, flags uint8, ck checkpoint) {
	dir := cfg.commitLogDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, seg := range fuzzCommitLog(data).segs {
		if err := os.WriteFile(filepath.Join(dir, mmapfile.Name(seg.Start)), seg.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if flags&1 != 0 {
		if err := os.WriteFile(cfg.checkpointPath(), ck.encode(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if flags&2 != 0 {
		if err := os.WriteFile(cfg.abortPath(), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkFuzzTree fails if anything under outer lies outside root, or if a
// consume queue file sits anywhere but <root>/consumequeue/<topic>/<qid>/.
func checkFuzzTree(t *testing.T, outer, root string) {
	t.Helper()
	cq := filepath.Join(root, "consumequeue")
	filepath.WalkDir(outer, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if rel, _ := filepath.Rel(path, root); !strings.HasPrefix(rel, "..") {
			return nil // root or one of its parents
		}
		if rel, _ := filepath.Rel(root, path); strings.HasPrefix(rel, "..") {
			t.Fatalf("store wrote %s, outside its root", path)
		}
		rel, _ := filepath.Rel(cq, path)
		if strings.HasPrefix(rel, "..") {
			return nil
		}
		switch parts := strings.Split(rel, string(filepath.Separator)); {
		case len(parts) == 1 && !d.IsDir() && strings.HasPrefix(parts[0], ".spare-"):
		case len(parts) <= 2 && d.IsDir(), len(parts) == 3 && !d.IsDir():
		default:
			t.Fatalf("consume queue layout broken by %s", path)
		}
		return nil
	})
}

// FuzzIndexFile reads an arbitrary index file the way recovery, QUERY_MESSAGE
// and the dispatcher do: truncate at a commitlog offset, look a key up, add
// an entry. None may panic or loop, and an entry added to a file with room
// must be found again.
func FuzzIndexFile(f *testing.F) {
	const slots, entries = 16, 64
	x := &indexFile{f: &mmapfile.File{Data: make([]byte, indexFileSize(slots, entries))}, slots: slots, entries: entries}
	x.setHeader(indexHeader{indexCount: 1})
	for i := range 10 {
		x.put(keyHash("F", fmt.Sprintf("k%d", i%3)), int64(100*i), 1700000000000+int64(1000*i))
	}
	f.Add(append([]byte(nil), x.f.Data...), "k1", int64(500))
	f.Add([]byte{}, "k", int64(0))
	f.Fuzz(func(t *testing.T, data []byte, key string, phyEnd int64) {
		buf := make([]byte, indexFileSize(slots, entries))
		copy(buf, data)
		x := &indexFile{f: &mmapfile.File{Data: buf}, slots: slots, entries: entries}
		s := &indexService{slots: slots, entries: entries, files: []*indexFile{x}}
		s.query("F", key, 32, math.MinInt64, math.MaxInt64)
		s.truncate(phyEnd)
		s.query("F", key, 32, math.MinInt64, math.MaxInt64)
		if x.full() {
			return
		}
		h := x.header()
		ts := max(h.endTs, h.beginTs, 0)
		x.put(keyHash("F", key), 1<<40, ts)
		if got := s.query("F", key, 1, math.MinInt64, math.MaxInt64); len(got) != 1 || got[0] != 1<<40 {
			t.Fatalf("entry just added not found: %v", got)
		}
	})
}
