package store

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func fillSegments(t *testing.T, s *Store, topic string, segs int) int {
	t.Helper()
	n := 0
	for len(s.cl.segs) < segs+1 {
		mustPut(t, s, newMsg(topic, 0, strings.Repeat("r", 1000), map[string]string{"KEYS": "k"}))
		n++
	}
	waitDispatched(t, s)
	return n
}

func TestRetentionByAgeAtDeleteHour(t *testing.T) {
	cfg := testConfig(t)
	cfg.MappedFileSizeConsumeQueue = 10 * CQEntrySize
	cfg.MaxIndexNum = 40
	clock := time.Now()
	cfg.Now = func() time.Time { return clock }
	s := mustOpen(t, cfg)
	defer func() { s.Close() }() // s is reopened below
	fillSegments(t, s, "E", 3)
	cqFiles := len(s.queue("E", 0).files)
	idxFiles := len(s.index.files)

	// Not yet expired, or not the delete hour: nothing goes.
	now := time.Now()
	clock = time.Date(now.Year(), now.Month(), now.Day(), 4, 0, 0, 0, time.Local).Add(24 * time.Hour)
	if st := s.CleanExpired(); st.CommitLogSegments != 0 {
		t.Fatalf("deleted %d segments that are not 72h old", st.CommitLogSegments)
	}
	clock = time.Now().Add(80 * time.Hour)
	clock = time.Date(clock.Year(), clock.Month(), clock.Day(), 13, 0, 0, 0, time.Local)
	if clock.Before(time.Now().Add(73 * time.Hour)) {
		clock = clock.Add(24 * time.Hour)
	}
	if st := s.CleanExpired(); st.CommitLogSegments != 0 {
		t.Fatalf("deleted at hour 13 (deleteWhen 04): %+v", st)
	}
	// A read in progress pins the oldest segment.
	r := s.GetMessage("E", 0, 0, 1, 0, nil)
	clock = time.Date(clock.Year(), clock.Month(), clock.Day(), 4, 30, 0, 0, time.Local)
	if st := s.CleanExpired(); st.CommitLogSegments != 0 {
		t.Fatalf("deleted a segment under a read: %+v", st)
	}
	if string(r.Messages[0][len(r.Messages[0])-1020:][:4]) == "" {
		t.Fatal("read slice unusable")
	}
	r.Release()
	st := s.CleanExpired()
	if st.CommitLogSegments != 3 {
		t.Fatalf("deleted %d segments, want 3 (newest kept)", st.CommitLogSegments)
	}
	if s.CommitLogMinOffset() != 3*int64(cfg.MappedFileSizeCommitLog) {
		t.Fatalf("commitlog min %d", s.CommitLogMinOffset())
	}
	if _, err := os.Stat(filepath.Join(cfg.commitLogDir(), "00000000000000000000")); !os.IsNotExist(err) {
		t.Fatalf("segment 0 still on disk: %v", err)
	}
	if st.ConsumeQueueFiles == 0 || len(s.queue("E", 0).files) >= cqFiles || st.IndexFiles == 0 || len(s.index.files) >= idxFiles {
		t.Fatalf("logics not cleaned: %+v (cq files %d->%d, index %d->%d)", st, cqFiles, len(s.queue("E", 0).files), idxFiles, len(s.index.files))
	}
	min := s.MinOffsetInQueue("E", 0)
	phy, ok := s.CommitLogOffsetInQueue("E", 0, min)
	if !ok || phy < s.CommitLogMinOffset() {
		t.Fatalf("queue min %d points at %d below commitlog min", min, phy)
	}
	if prev, ok := s.CommitLogOffsetInQueue("E", 0, min-1); ok && prev >= s.CommitLogMinOffset() {
		t.Fatalf("queue min too high: entry %d at %d is still stored", min-1, prev)
	}
	g := s.GetMessage("E", 0, 0, 32, 0, nil)
	if g.Status != OffsetTooSmall || g.NextBeginOffset != min {
		t.Fatalf("old offset: %v next %d", g.Status, g.NextBeginOffset)
	}
	g.Release()
	g = s.GetMessage("E", 0, min, 32, 0, nil)
	if g.Status != Found {
		t.Fatalf("read from new min: %v", g.Status)
	}
	g.Release()
	// Reopen keeps the moved minimums.
	s.Close()
	s = mustOpen(t, cfg)
	if got := s.MinOffsetInQueue("E", 0); got != min {
		t.Fatalf("min after reopen %d, want %d", got, min)
	}
}

func TestRetentionWhenDiskFull(t *testing.T) {
	cfg := testConfig(t)
	usage := 0.5
	cfg.DiskUsage = func(string) (float64, error) { return usage, nil }
	cfg.Now = func() time.Time { return time.Date(2030, 1, 1, 13, 0, 0, 0, time.Local) }
	s := mustOpen(t, cfg)
	defer s.Close()
	fillSegments(t, s, "F", 2)
	if st := s.CleanExpired(); st.CommitLogSegments != 0 || st.Forced {
		t.Fatalf("deleted below the ratio: %+v", st)
	}
	usage = 0.9
	if st := s.CleanExpired(); st.CommitLogSegments != 2 || !st.Forced {
		t.Fatalf("disk at 90%%: %+v", st)
	}
}

func TestDeleteTopic(t *testing.T) {
	cfg := testConfig(t)
	s := mustOpen(t, cfg)
	defer s.Close()
	mustPut(t, s, newMsg("Gone", 0, "a", nil))
	mustPut(t, s, newMsg("Stay", 0, "b", nil))
	waitDispatched(t, s)
	s.DeleteTopic("Gone")
	if _, err := os.Stat(filepath.Join(cfg.consumeQueueDir(), "Gone")); !os.IsNotExist(err) {
		t.Fatalf("queue dir remains: %v", err)
	}
	if r := s.GetMessage("Gone", 0, 0, 1, 0, nil); r.Status != NoMatchedLogicQueue {
		t.Fatalf("deleted topic: %v", r.Status)
	}
	if len(readAll(t, s, "Stay", 0)) != 1 {
		t.Fatal("other topic affected")
	}
}

// TestDiskFull runs the store on a 2 MiB tmpfs: appends fail once a new
// segment cannot be preallocated, nothing already stored is damaged and
// the store stays readable.
func TestDiskFull(t *testing.T) {
	dir := t.TempDir()
	if err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir).Run(); err != nil {
		t.Skipf("needs root to mount a small tmpfs: %v", err)
	}
	defer exec.Command("umount", dir).Run()
	cfg := testConfig(t)
	cfg.StorePathRootDir = dir
	cfg.MappedFileSizeCommitLog = 512 << 10
	s := mustOpen(t, cfg)
	defer s.Close()
	var stored int
	var err error
	for i := range 5000 {
		if _, err = s.PutMessage(newMsg("D", 0, body(i)+strings.Repeat("z", 1000), nil)); err != nil {
			break
		}
		stored++
	}
	if !errors.Is(err, ErrWriteFailed) || !strings.Contains(err.Error(), "no space") {
		t.Fatalf("after %d messages: err = %v, want ENOSPC as ErrWriteFailed", stored, err)
	}
	waitDispatched(t, s)
	msgs := readAll(t, s, "D", 0)
	if len(msgs) != stored {
		t.Fatalf("read %d of %d stored messages", len(msgs), stored)
	}
	for i, m := range msgs {
		if !strings.HasPrefix(string(m.Body), body(i)) {
			t.Fatalf("message %d damaged", i)
		}
	}
}
