package store

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

func TestRecoverTornTail(t *testing.T) {
	cfg := testConfig(t)
	s := mustOpen(t, cfg)
	var last *PutResult
	for i := range 100 {
		last = mustPut(t, s, newMsg("R", 0, body(i), map[string]string{"KEYS": fmt.Sprintf("k%d", i)}))
	}
	waitDispatched(t, s)
	tail := s.CommitLogMaxOffset()
	// A torn record after the tail: a copy of the last record's first half,
	// as if the writer died while copying it.
	seg := s.cl.segment(last.PhysicalOffset)
	p := int(last.PhysicalOffset - seg.Start)
	q := int(tail - seg.Start)
	copy(seg.Data[q:], seg.Data[p:p+last.Size/2])
	seg.Release()
	s.crash()

	s = mustOpen(t, cfg)
	defer s.Close()
	if s.CleanStart {
		t.Fatal("start after crash reported clean")
	}
	if s.CommitLogMaxOffset() != tail || s.Truncated == 0 {
		t.Fatalf("tail %d (want %d), truncated %d", s.CommitLogMaxOffset(), tail, s.Truncated)
	}
	msgs := readAll(t, s, "R", 0)
	if len(msgs) != 100 {
		t.Fatalf("%d messages after recovery", len(msgs))
	}
	r := mustPut(t, s, newMsg("R", 0, "next", nil))
	if r.PhysicalOffset != tail || r.QueueOffset != 100 {
		t.Fatalf("append after recovery at %d qoff %d", r.PhysicalOffset, r.QueueOffset)
	}
	waitDispatched(t, s)
	if m := readAll(t, s, "R", 0); string(m[100].Body) != "next" {
		t.Fatalf("appended message reads %q", m[100].Body)
	}
}

func TestRecoverCorruptMiddleCutsAndTruncatesQueues(t *testing.T) {
	cfg := testConfig(t)
	s := mustOpen(t, cfg)
	var res []*PutResult
	for i := range 50 {
		res = append(res, mustPut(t, s, newMsg("C", int32(i%3), body(i), map[string]string{"KEYS": fmt.Sprintf("k%d", i)})))
	}
	waitDispatched(t, s)
	// Flip a body byte of record 30: its CRC no longer matches.
	seg := s.cl.segment(res[30].PhysicalOffset)
	seg.Data[int(res[30].PhysicalOffset-seg.Start)+88+2] ^= 0xFF // inside the body (IPv4 layout)
	seg.Release()
	s.crash()
	os.Remove(cfg.checkpointPath()) // no checkpoint: scan everything

	s = mustOpen(t, cfg)
	defer s.Close()
	if s.CommitLogMaxOffset() != res[30].PhysicalOffset {
		t.Fatalf("tail %d, want cut at %d", s.CommitLogMaxOffset(), res[30].PhysicalOffset)
	}
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for q := int32(0); q < 3; q++ {
		for _, m := range readAll(t, s, "C", q) {
			if m.PhysicalOffset >= res[30].PhysicalOffset {
				t.Fatalf("queue %d still points past the cut: %d", q, m.PhysicalOffset)
			}
			total++
		}
	}
	if total != 30 {
		t.Fatalf("%d messages survive, want 30", total)
	}
	now := time.Now().UnixMilli() + 1000
	if got := s.QueryMessage("C", "k35", 10, 0, now); len(got) != 0 {
		t.Fatalf("index still finds a cut message: %v", got)
	}
	if got := s.QueryMessage("C", "k29", 10, 0, now); len(got) != 1 {
		t.Fatalf("index lost k29: %v", got)
	}
	// Queue offsets continue without a gap.
	r := mustPut(t, s, newMsg("C", 0, "n", nil))
	if r.QueueOffset != 10 {
		t.Fatalf("queue 0 resumes at %d, want 10", r.QueueOffset)
	}
}

func TestRecoverRebuildsUndispatched(t *testing.T) {
	cfg := testConfig(t)
	s := mustOpen(t, cfg)
	for i := range 40 {
		mustPut(t, s, newMsg("D", 0, body(i), nil))
	}
	waitDispatched(t, s)
	if err := s.flushAll(); err != nil { // checkpoint covers the first 40
		t.Fatal(err)
	}
	for i := 40; i < 80; i++ {
		mustPut(t, s, newMsg("D", 0, body(i), nil))
		mustPut(t, s, newMsg("New", 1, body(i), map[string]string{"KEYS": "nk"}))
	}
	waitDispatched(t, s)
	cq := s.queue("D", 0)
	s.crash()
	// As if the consume-queue pages past the checkpoint never hit disk, and
	// the new topic's queue directory was never created.
	f, err := os.OpenFile(filepath.Join(cq.dir, "00000000000000000000"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(make([]byte, 60*CQEntrySize), 40*CQEntrySize)
	f.Close()
	os.RemoveAll(filepath.Join(cfg.consumeQueueDir(), "New"))

	s = mustOpen(t, cfg)
	defer s.Close()
	d := readAll(t, s, "D", 0)
	n := readAll(t, s, "New", 1)
	if len(d) != 80 || len(n) != 40 {
		t.Fatalf("rebuilt %d and %d messages, want 80 and 40", len(d), len(n))
	}
	for i, m := range d {
		if string(m.Body) != body(i) {
			t.Fatalf("D %d: %q", i, m.Body)
		}
	}
	if got := s.QueryMessage("New", "nk", 100, 0, time.Now().UnixMilli()+1000); len(got) != 40 {
		t.Fatalf("index rebuilt %d entries, want 40 (no duplicates)", len(got))
	}
}

func TestCleanStartDoesNotScan(t *testing.T) {
	cfg := testConfig(t)
	s := mustOpen(t, cfg)
	for i := range 20 {
		mustPut(t, s, newMsg("S", 0, body(i), nil))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cfg.abortPath()); !os.IsNotExist(err) {
		t.Fatalf("abort marker after clean close: %v", err)
	}
	// Damage a record: a clean start trusts the checkpoint and does not
	// notice; an unclean start would cut the log here.
	seg := filepath.Join(cfg.commitLogDir(), "00000000000000000000")
	f, _ := os.OpenFile(seg, os.O_RDWR, 0)
	f.WriteAt([]byte{0xFF}, int64(message.RecordSize(0, 11, 1, 0))-4)
	f.Close()
	s = mustOpen(t, cfg)
	if !s.CleanStart || s.CommitLogMaxOffset() == 0 {
		t.Fatalf("clean start %v tail %d", s.CleanStart, s.CommitLogMaxOffset())
	}
	if _, err := os.Stat(cfg.abortPath()); err != nil {
		t.Fatalf("abort marker while open: %v", err)
	}
	s.Close()
}

// TestRecoverAsyncPowerLoss simulates losing unflushed commitlog pages
// while later consume-queue and index pages survived: the store reopens
// consistent, serving exactly the intact prefix.
func TestRecoverAsyncPowerLoss(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushIntervalCommitLog = time.Hour
	cfg.FlushIntervalConsumeQueue = time.Hour
	s := mustOpen(t, cfg)
	var res []*PutResult
	for i := range 100 {
		res = append(res, mustPut(t, s, newMsg("P", 0, body(i), map[string]string{"KEYS": fmt.Sprint("pk", i)})))
		if i == 49 {
			waitDispatched(t, s)
			if err := s.flushAll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitDispatched(t, s)
	s.crash()
	// Lose the commitlog from the middle of record 70 on.
	f, _ := os.OpenFile(filepath.Join(cfg.commitLogDir(), "00000000000000000000"), os.O_RDWR, 0)
	cut := res[70].PhysicalOffset + 20
	f.WriteAt(make([]byte, int64(cfg.MappedFileSizeCommitLog)-cut), cut)
	f.Close()

	s = mustOpen(t, cfg)
	defer s.Close()
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
	msgs := readAll(t, s, "P", 0)
	if len(msgs) != 70 || s.CommitLogMaxOffset() != res[70].PhysicalOffset {
		t.Fatalf("%d messages, tail %d (want 70, %d)", len(msgs), s.CommitLogMaxOffset(), res[70].PhysicalOffset)
	}
	for i, m := range msgs {
		if string(m.Body) != body(i) {
			t.Fatalf("message %d: %q", i, m.Body)
		}
	}
	now := time.Now().UnixMilli() + 1000
	if len(s.QueryMessage("P", "pk80", 4, 0, now)) != 0 || len(s.QueryMessage("P", "pk69", 4, 0, now)) != 1 {
		t.Fatal("index not consistent with the cut")
	}
	if r := mustPut(t, s, newMsg("P", 0, "after", nil)); r.QueueOffset != 70 {
		t.Fatalf("resumed at queue offset %d", r.QueueOffset)
	}
}
