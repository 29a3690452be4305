package store

import (
	"errors"
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

// TestRecoverSkipsCorruptRecordKeepsTheRest flips a body byte of record 30
// of 50 and restarts uncleanly without a checkpoint: recovery skips record
// 30 and keeps 31..49 in their queues and the index; record 30's queue
// offset reads as a gap; appends continue after the highest queue offset.
func TestRecoverSkipsCorruptRecordKeepsTheRest(t *testing.T) {
	cfg := testConfig(t)
	s := mustOpen(t, cfg)
	var res []*PutResult
	for i := range 50 {
		res = append(res, mustPut(t, s, newMsg("C", int32(i%3), body(i), map[string]string{"KEYS": fmt.Sprintf("k%d", i)})))
	}
	waitDispatched(t, s)
	tail := s.CommitLogMaxOffset()
	s.crash()
	os.Remove(cfg.checkpointPath()) // no checkpoint: scan everything
	f, _ := os.OpenFile(filepath.Join(cfg.commitLogDir(), "00000000000000000000"), os.O_RDWR, 0)
	f.WriteAt([]byte{0xFF}, res[30].PhysicalOffset+88+2) // inside the body (IPv4 layout)
	f.Close()

	s = mustOpen(t, cfg)
	defer s.Close()
	if s.CommitLogMaxOffset() != tail || s.Truncated != 0 {
		t.Fatalf("tail %d (want %d), truncated %d", s.CommitLogMaxOffset(), tail, s.Truncated)
	}
	want := []DamagedRange{{Offset: res[30].PhysicalOffset, Length: int64(res[30].Size), Kind: DamageSkipped}}
	if got := s.Damaged(); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("damaged %v, want %v", got, want)
	}
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for q := int32(0); q < 3; q++ {
		for _, m := range readAll(t, s, "C", q) {
			if m.PhysicalOffset == res[30].PhysicalOffset {
				t.Fatalf("queue %d serves the damaged record", q)
			}
			total++
		}
	}
	if total != 49 {
		t.Fatalf("%d messages survive, want 49", total)
	}
	// Record 30 is queue 0's offset 10: a gap the read moves past.
	r := s.GetMessage("C", 0, 10, 1, 1<<20, nil)
	if r.Status != Found || r.NextBeginOffset != 12 {
		t.Fatalf("read at the gap: %v, next %d", r.Status, r.NextBeginOffset)
	}
	if m, _ := message.DecodeRecord(r.Messages[0], true); m.QueueOffset != 11 {
		t.Fatalf("read at the gap returns queue offset %d", m.QueueOffset)
	}
	r.Release()
	if s.DamagedReads() == 0 {
		t.Fatal("refused reads not counted")
	}
	now := time.Now().UnixMilli() + 1000
	for _, k := range []string{"k29", "k31", "k49"} {
		if got := s.QueryMessage("C", k, 10, 0, now); len(got) != 1 {
			t.Fatalf("index finds %v for %s", got, k)
		}
	}
	if _, err := s.GetMessageByOffset(res[30].PhysicalOffset); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged record by offset: %v", err)
	}
	// Queue offsets continue after the highest one kept.
	if r := mustPut(t, s, newMsg("C", 0, "n", nil)); r.QueueOffset != 17 {
		t.Fatalf("queue 0 resumes at %d, want 17", r.QueueOffset)
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
