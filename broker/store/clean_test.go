package store

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the DST cases below need a zone database on any machine
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

// ageSegments sets every commitlog segment's modification time, the age
// retention reads, to at: the test's clock, never the wall clock.
func ageSegments(t *testing.T, s *Store, at time.Time) {
	t.Helper()
	s.cl.mu.Lock()
	defer s.cl.mu.Unlock()
	for _, seg := range s.cl.segs {
		if err := os.Chtimes(seg.Path, at, at); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRetentionByAgeAtDeleteHour(t *testing.T) {
	cfg := testConfig(t)
	cfg.MappedFileSizeConsumeQueue = 10 * CQEntrySize
	cfg.MaxIndexNum = 40
	// Fixed local instants (deleteWhen is a local hour, as in Java); June
	// has no DST change in any zone.
	written := time.Date(2030, 6, 10, 9, 22, 0, 0, time.Local)
	clock := written
	cfg.Now = func() time.Time { return clock }
	s := mustOpen(t, cfg)
	defer func() { s.Close() }() // s is reopened below
	fillSegments(t, s, "E", 3)
	cqFiles := len(s.queue("E", 0).files)
	idxFiles := len(s.index.files)
	clean := func(at time.Time) CleanStats {
		t.Helper()
		clock = at
		ageSegments(t, s, written)
		return s.CleanExpired()
	}

	// Not yet expired, or not the delete hour: nothing goes.
	if st := clean(time.Date(2030, 6, 11, 4, 0, 0, 0, time.Local)); st.CommitLogSegments != 0 {
		t.Fatalf("deleted %d segments 19h old (fileReservedTime 72h)", st.CommitLogSegments)
	}
	if st := clean(time.Date(2030, 6, 13, 13, 0, 0, 0, time.Local)); st.CommitLogSegments != 0 {
		t.Fatalf("deleted at hour 13 (deleteWhen 04): %+v", st)
	}
	// A read in progress pins the oldest segment.
	r := s.GetMessage("E", 0, 0, 1, 0, nil)
	at := time.Date(2030, 6, 14, 4, 30, 0, 0, time.Local)
	if st := clean(at); st.CommitLogSegments != 0 {
		t.Fatalf("deleted a segment under a read: %+v", st)
	}
	if string(r.Messages[0][len(r.Messages[0])-1020:][:4]) == "" {
		t.Fatal("read slice unusable")
	}
	r.Release()
	st := clean(at)
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

// The delete-hour and age rules at fixed instants, in zones across the
// whole day, over a month end and both DST changes of a zone that has them.
func TestRetentionRuleAtFixedInstants(t *testing.T) {
	zone := func(name string) *time.Location {
		l, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	at04 := retention{hours: map[int]bool{4: true}, keep: 72 * time.Hour}
	at04and16 := retention{hours: map[int]bool{4: true, 16: true}, keep: 72 * time.Hour}
	for _, name := range []string{"UTC", "Etc/GMT+12", "Etc/GMT+6", "Etc/GMT-6", "Etc/GMT-14", "Europe/Berlin"} {
		loc := zone(name)
		for _, c := range []struct {
			hh, mm      int
			want04      bool
			want04and16 bool
		}{
			{0, 0, false, false}, {3, 59, false, false}, {4, 0, true, true}, {4, 30, true, true},
			{9, 22, false, false}, {15, 59, false, false}, {16, 0, false, true}, {23, 59, false, false},
		} {
			now := time.Date(2030, 6, 10, c.hh, c.mm, 0, 0, loc)
			if got := at04.timeToDelete(now); got != c.want04 {
				t.Errorf("%s %s deleteWhen=04: %v, want %v", name, now.Format("15:04"), got, c.want04)
			}
			if got := at04and16.timeToDelete(now); got != c.want04and16 {
				t.Errorf("%s %s deleteWhen=04;16: %v, want %v", name, now.Format("15:04"), got, c.want04and16)
			}
		}
	}

	berlin := zone("Europe/Berlin")
	for _, c := range []struct {
		name            string
		lastWrite, now  time.Time
		expired, delete bool
	}{
		{"month end, 66h", time.Date(2030, 1, 29, 10, 0, 0, 0, time.UTC), time.Date(2030, 2, 1, 4, 0, 0, 0, time.UTC), false, false},
		{"month end, 90h", time.Date(2030, 1, 29, 10, 0, 0, 0, time.UTC), time.Date(2030, 2, 2, 4, 0, 0, 0, time.UTC), true, true},
		{"month end, exactly 72h", time.Date(2030, 4, 28, 4, 0, 0, 0, time.UTC), time.Date(2030, 5, 1, 4, 0, 0, 0, time.UTC), true, true},
		{"year end, 71h59m", time.Date(2030, 12, 29, 4, 1, 0, 0, time.UTC), time.Date(2031, 1, 1, 4, 0, 0, 0, time.UTC), false, false},
		// 2030-03-31 02:00 CET -> 03:00 CEST: three calendar days are 71 hours.
		{"spring forward, 71h", time.Date(2030, 3, 28, 4, 30, 0, 0, berlin), time.Date(2030, 3, 31, 4, 30, 0, 0, berlin), false, false},
		{"spring forward, next day", time.Date(2030, 3, 28, 4, 30, 0, 0, berlin), time.Date(2030, 4, 1, 4, 0, 0, 0, berlin), true, true},
		// 2030-10-27 03:00 CEST -> 02:00 CET: three calendar days are 73 hours.
		{"fall back, 72h30m", time.Date(2030, 10, 24, 4, 30, 0, 0, berlin), time.Date(2030, 10, 27, 4, 0, 0, 0, berlin), true, true},
	} {
		if got := at04.expired(c.now, c.lastWrite); got != c.expired {
			t.Errorf("%s: expired %v after %v, want %v", c.name, got, c.now.Sub(c.lastWrite), c.expired)
		}
		if got := at04.timeToDelete(c.now) && at04.expired(c.now, c.lastWrite); got != c.delete {
			t.Errorf("%s: delete %v, want %v", c.name, got, c.delete)
		}
	}

	// deleteWhen=02 in Berlin: the hour that does not exist on the spring
	// day never fires; the repeated one on the autumn day fires twice.
	at02 := retention{hours: map[int]bool{2: true}}
	minutesDue := func(day time.Time) int {
		n := 0
		for m := day; m.Before(day.AddDate(0, 0, 1)); m = m.Add(time.Minute) {
			if at02.timeToDelete(m) {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		day  time.Time
		want int
	}{
		{time.Date(2030, 3, 30, 0, 0, 0, 0, berlin), 60},
		{time.Date(2030, 3, 31, 0, 0, 0, 0, berlin), 0},
		{time.Date(2030, 10, 27, 0, 0, 0, 0, berlin), 120},
	} {
		if got := minutesDue(c.day); got != c.want {
			t.Errorf("deleteWhen=02 on %s: due %d minutes, want %d", c.day.Format("2006-01-02"), got, c.want)
		}
	}
}

func TestRetentionWhenDiskFull(t *testing.T) {
	cfg := testConfig(t)
	usage := 0.5
	cfg.DiskUsage = func(string) (float64, error) { return usage, nil }
	cfg.Now = func() time.Time { return time.Date(2030, 1, 1, 13, 0, 0, 0, time.Local) } // not a delete hour
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
	if err := s.DeleteTopic("Gone"); err != nil {
		t.Fatal(err)
	}
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

// TestWarnsAtOpenWhenTheNextFilesCannotFit: Open warns when free space is
// below one commitlog segment plus one index file, and not otherwise.
func TestWarnsAtOpenWhenTheNextFilesCannotFit(t *testing.T) {
	cfg := testConfig(t)
	need := int64(cfg.MappedFileSizeCommitLog + indexFileSize(cfg.MaxHashSlotNum, cfg.MaxIndexNum))
	for _, tc := range []struct {
		free int64
		warn bool
	}{{need - 1, true}, {need, false}} {
		cfg.DiskFree = func(string) (int64, error) { return tc.free, nil }
		s := mustOpen(t, cfg)
		if s.LowDiskSpace != tc.warn {
			t.Errorf("free %d, need %d: warned %v", tc.free, need, s.LowDiskSpace)
		}
		s.Close()
	}
}
