package store

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
)

// TestFirstMessageOfNewQueueArrivesPromptly puts the first message of 200
// new consume queues, one at a time on an idle store, and measures from
// PutMessage's return to the OnArrival callback. It used to take 2-6 ms at
// the median and 7-22 ms at p99 on a VM disk: the dispatcher created the
// queue's file (directories, file, two fsyncs, the first write fault into
// preallocated blocks) before the entry could be written. Now it takes a
// ready spare file and the file system work happens afterwards, in the
// background (see cqspare.go): ~10 µs at the median, well under 1 ms at
// p99.
//
// Disk pressure from elsewhere (other test packages on a shared CI host)
// can still stall any write into a mapping for tens of milliseconds, so a
// round of 200 may be retried, up to 10 rounds (the old store failed every
// round at the median already: 2-3 ms; its p99 alone sometimes passed).
func TestFirstMessageOfNewQueueArrivesPromptly(t *testing.T) {
	cfg := testConfig(t)
	cfg.MappedFileSizeConsumeQueue = DefaultConsumeQueueEntries * CQEntrySize // real size
	s := mustOpen(t, cfg)
	defer s.Close()
	arrived := make(chan time.Time, 1)
	s.OnArrival(func(a *Arrival) { arrived <- time.Now() })
	const n, rounds = 200, 10
	for round := range rounds {
		waitSpares(t, s) // idle: the spares are ready
		lat := make([]time.Duration, 0, n)
		for i := range n {
			mustPut(t, s, newMsg(fmt.Sprintf("New%d-%03d", round, i), int32(i%4), "x", nil))
			put := time.Now()
			select {
			case at := <-arrived:
				lat = append(lat, max(at.Sub(put), 0))
			case <-time.After(5 * time.Second):
				t.Fatalf("message %d not dispatched after 5s", i)
			}
			time.Sleep(2 * time.Millisecond) // idle between messages
		}
		slices.Sort(lat)
		p50, p99 := lat[n/2], lat[n*99/100-1]
		t.Logf("round %d: put->arrival over %d new queues: p50 %v p99 %v max %v", round, n, p50, p99, lat[n-1])
		if p50 < time.Millisecond && p99 < 5*time.Millisecond {
			return
		}
	}
	t.Errorf("put->arrival for first messages of new queues: no round of %d had p50 < 1ms and p99 < 5ms", n)
}

// waitSpares waits until the spare consume-queue files are all ready.
func waitSpares(t testing.TB, s *Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.spares.ch) < cap(s.spares.ch) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d spare consume-queue files ready after 10s", len(s.spares.ch), cap(s.spares.ch))
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSpareQueueFilesPlacedAndDurable: queues whose first file was a spare
// end up under their names, survive a clean close and a crash, and no spare
// is left behind.
func TestSpareQueueFilesPlacedAndDurable(t *testing.T) {
	cfg := testConfig(t)
	s := mustOpen(t, cfg)
	waitSpares(t, s)
	for i := range 3 {
		mustPut(t, s, newMsg(fmt.Sprintf("P%d", i), 1, body(i), nil))
	}
	waitDispatched(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkPlaced := func(topics ...string) {
		t.Helper()
		for _, tp := range topics {
			if _, err := os.Stat(filepath.Join(cfg.consumeQueueDir(), tp, "1", mmapfile.Name(0))); err != nil {
				t.Errorf("queue file of %s: %v", tp, err)
			}
		}
		ents, _ := os.ReadDir(cfg.consumeQueueDir())
		for _, e := range ents {
			if !e.IsDir() {
				t.Errorf("left in %s: %s", cfg.consumeQueueDir(), e.Name())
			}
		}
	}
	checkPlaced("P0", "P1", "P2")

	// Crash right after dispatch: whatever was not placed and synced is
	// rebuilt by recovery, and the spares of the dead run are removed.
	s = mustOpen(t, cfg)
	waitSpares(t, s)
	mustPut(t, s, newMsg("P3", 1, body(3), nil))
	waitDispatched(t, s)
	s.crash()
	s = mustOpen(t, cfg)
	defer s.Close()
	for i := range 4 {
		if got := readAll(t, s, fmt.Sprintf("P%d", i), 1); len(got) != 1 || string(got[0].Body) != body(i) {
			t.Fatalf("P%d after crash: %d messages", i, len(got))
		}
	}
	waitSpares(t, s)
	s.Close()
	checkPlaced("P0", "P1", "P2", "P3")
}
