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

// TestFirstMessageOfNewQueueTakesASpare: the first message of a new
// consume queue is dispatched into a ready spare file, so no file system
// work stands between PutMessage and the OnArrival wake-up of a waiting
// puller. Dispatching used to create the queue's file first (directories,
// the file, two fsyncs, the first write fault into preallocated blocks):
// 2-6 ms at the median on a VM disk. BenchmarkFirstMessageOfNewQueue
// measures the put -> arrival time.
func TestFirstMessageOfNewQueueTakesASpare(t *testing.T) {
	cfg := testConfig(t)
	cfg.MappedFileSizeConsumeQueue = DefaultConsumeQueueEntries * CQEntrySize // real size
	s := mustOpen(t, cfg)
	defer s.Close()
	arrived := make(chan string, 1)
	s.OnArrival(func(a *Arrival) { arrived <- a.Topic })
	const n = 50
	taken, missed := s.spares.taken.Load(), s.spares.missed.Load()
	for i := range n {
		waitSpares(t, s) // idle: the spares are ready
		topic := fmt.Sprintf("New-%03d", i)
		mustPut(t, s, newMsg(topic, int32(i%4), "x", nil))
		select {
		case got := <-arrived:
			if got != topic {
				t.Fatalf("arrival for %s, want %s", got, topic)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("message %d not dispatched after 10s", i)
		}
	}
	if got := s.spares.taken.Load() - taken; got != n {
		t.Errorf("%d of %d new queues got a spare file", got, n)
	}
	if got := s.spares.missed.Load() - missed; got != 0 {
		t.Errorf("the dispatcher created %d queue files itself", got)
	}
}

// BenchmarkFirstMessageOfNewQueue reports put -> OnArrival for the first
// message of new queues on an idle store (p50-µs, p99-µs): about 10 µs at
// the median, under 1 ms at p99 on the 2-vCPU VMs of docs/benchmarks.md.
func BenchmarkFirstMessageOfNewQueue(b *testing.B) {
	cfg := testConfig(b)
	cfg.MappedFileSizeConsumeQueue = DefaultConsumeQueueEntries * CQEntrySize
	s := mustOpen(b, cfg)
	defer s.Close()
	arrived := make(chan time.Time, 1)
	s.OnArrival(func(a *Arrival) { arrived <- time.Now() })
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		waitSpares(b, s)
		b.StartTimer()
		mustPut(b, s, newMsg(fmt.Sprintf("New-%06d", i), int32(i%4), "x", nil))
		put := time.Now()
		lat = append(lat, max((<-arrived).Sub(put), 0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
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
