package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
)

// TestWarmKeepsTheTailPopulated: after an append, warmLoop populates warmAhead bytes
// past the tail, never past the tail's segment.
func TestWarmKeepsTheTailPopulated(t *testing.T) {
	for _, tc := range []struct {
		name    string
		segSize int
	}{
		{"window inside the segment", 8 << 20},
		{"window cut at the segment's end", 64 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.MappedFileSizeCommitLog = tc.segSize
			s := mustOpen(t, cfg)
			defer s.Close()
			r := mustPut(t, s, newMsg("T", 0, "warm me", nil))
			tail := r.PhysicalOffset + int64(r.Size)
			want := min(tail+warmAhead, int64(tc.segSize))
			deadline := time.Now().Add(10 * time.Second)
			for s.cl.warmed.Load() != want {
				if s.cl.noWarm.Load() {
					t.Skip("this kernel cannot populate (MADV_POPULATE_READ, Linux 5.14)")
				}
				if time.Now().After(deadline) {
					t.Fatalf("warmed %d after 10s, want %d (tail %d, segment %d bytes)", s.cl.warmed.Load(), want, tail, tc.segSize)
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}

// TestZeroAheadUnderSyncFlush: under SYNC_FLUSH warmLoop writes zeros past the tail
// through the file and syncs them, so that the segment's extents are written before
// the records come (FIEMAP shows no unwritten extent there), and never writes over a
// record: senders racing it across many segment rolls (64 KiB segments, where each
// roll starts the writer on bytes not yet zeroed) read back every message intact,
// before and after a restart.
func TestZeroAheadUnderSyncFlush(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushDiskType = SyncFlush
	s := mustOpen(t, cfg)
	const senders, each = 4, 150
	pad := strings.Repeat("z", 1000)
	var wg sync.WaitGroup
	for q := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if r, err := s.PutMessage(newMsg("Z", int32(q), fmt.Sprintf("%d-%d-%s", q, i, pad), nil)); err != nil || r.Status != PutOK {
					t.Errorf("put %d-%d: %v, %v", q, i, r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if s.cl.noWarm.Load() {
		t.Fatal("populating turned off: zeroing must not depend on it")
	}

	tail := s.cl.wrote.Load()
	segEnd := tail - tail%int64(cfg.MappedFileSizeCommitLog) + int64(cfg.MappedFileSizeCommitLog)
	s.cl.askWarm()
	waitZeroed(t, s, segEnd)
	deadline := time.Now().Add(10 * time.Second)
	path := filepath.Join(cfg.commitLogDir(), mmapfile.Name(segEnd-int64(cfg.MappedFileSizeCommitLog)))
	for {
		unwritten, err := unwrittenBytes(path)
		if err != nil {
			t.Logf("no FIEMAP on this filesystem (%v): extents not checked", err)
			break
		}
		if unwritten == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d bytes still in unwritten extents after zeroing", path, unwritten)
		}
		time.Sleep(time.Millisecond)
	}

	check := func(when string) {
		for q := range senders {
			got := readAll(t, s, "Z", int32(q))
			if len(got) != each {
				t.Fatalf("%s: queue %d holds %d messages, want %d", when, q, len(got), each)
			}
			for i, m := range got {
				if want := fmt.Sprintf("%d-%d-%s", q, i, pad); string(m.Body) != want {
					t.Fatalf("%s: queue %d offset %d holds %.20q..., want %.20q...", when, q, i, m.Body, want)
				}
			}
		}
	}
	waitDispatched(t, s)
	check("running")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, cfg)
	defer s.Close()
	waitDispatched(t, s)
	check("after a restart")
}

// zero writes nothing below a claim: bytes a writer claimed past the zeroed ones, and
// wrote, survive a zeroing pass whose tail was read before them.
func TestZeroSparesClaimedBytes(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushDiskType = SyncFlush
	s := mustOpen(t, cfg)
	defer s.Close()
	r := mustPut(t, s, newMsg("Z", 0, "first", nil))
	tail := r.PhysicalOffset + int64(r.Size)
	seg := s.cl.segment(tail)
	defer seg.Release()
	segEnd := seg.Start + int64(seg.Size())
	waitZeroed(t, s, segEnd) // the pass the put asked for is over

	s.putMu.Lock() // a writer, past the zeroed bytes (as after a roll)
	s.cl.warmed.Store(tail)
	record := bytes.Repeat([]byte{0xab}, 100)
	s.cl.claim(tail + int64(len(record)))
	if err := seg.WriteAt(record, int(tail-seg.Start)); err != nil {
		t.Fatal(err)
	}
	s.cl.zero(seg, segEnd) // read the tail (not moved yet) after the writer's claim
	s.putMu.Unlock()

	got := seg.Data[tail-seg.Start : segEnd-seg.Start]
	if !bytes.Equal(got[:len(record)], record) {
		t.Fatalf("claimed bytes after zeroing: % x, want % x", got[:8], record[:8])
	}
	if !bytes.Equal(got[len(record):], make([]byte, len(got)-len(record))) || s.cl.warmed.Load() != segEnd {
		t.Fatalf("past the claim: not all zero, or zeroed up to %d (want %d)", s.cl.warmed.Load(), segEnd)
	}
}

// waitZeroed waits until the store has zeroed (or warmed) up to want.
func waitZeroed(t *testing.T, s *Store, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.cl.warmed.Load() != want {
		if time.Now().After(deadline) {
			t.Fatalf("zeroed up to %d after 10s, want %d (tail %d)", s.cl.warmed.Load(), want, s.cl.wrote.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// unwrittenBytes returns how many bytes of the file at path lie in unwritten extents
// (allocated, read as zeros, converted by the first write's sync), by FIEMAP.
func unwrittenBytes(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	const (
		fsIocFiemap     = 0xC020660B // _IOWR('f', 11, struct fiemap)
		fiemapFlagSync  = 0x1
		extentLast      = 0x1
		extentUnwritten = 0x800
		headerSize      = 32
		extentSize      = 56
		extentsPerCall  = 64
		maxBytes        = ^uint64(0)
	)
	var unwritten int64
	buf := make([]byte, headerSize+extentSize*extentsPerCall)
	le := binary.LittleEndian
	for start := uint64(0); ; {
		le.PutUint64(buf[0:], start)
		le.PutUint64(buf[8:], maxBytes-start)
		le.PutUint32(buf[16:], fiemapFlagSync)
		le.PutUint32(buf[24:], extentsPerCall)
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&buf[0]))); errno != 0 {
			return 0, errno
		}
		n := int(le.Uint32(buf[20:]))
		if n == 0 {
			return unwritten, nil
		}
		for i := range n {
			e := buf[headerSize+i*extentSize:]
			logical, length, flags := le.Uint64(e[0:]), le.Uint64(e[16:]), le.Uint32(e[40:])
			if flags&extentUnwritten != 0 {
				unwritten += int64(length)
			}
			start = logical + length
			if flags&extentLast != 0 {
				return unwritten, nil
			}
		}
	}
}
