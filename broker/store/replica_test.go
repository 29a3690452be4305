package store

import (
	"errors"
	"fmt"
	"testing"
)

// TestReplicateRaw copies a master's commitlog to a slave in odd-sized
// chunks (splitting records and crossing segments) and checks the slave
// serves the same messages.
func TestReplicateRaw(t *testing.T) {
	master := mustOpen(t, testConfig(t))
	defer master.Close()
	for i := range 500 {
		mustPut(t, master, newMsg("H", int32(i%2), body(i)+fmt.Sprint(make([]byte, i%200)), map[string]string{"KEYS": fmt.Sprint("k", i)}))
	}
	slave := mustOpen(t, testConfig(t))
	defer slave.Close()
	for off := int64(0); off < master.CommitLogMaxOffset(); {
		data, release := master.ReadRaw(off, 5+int(off%777))
		if len(data) == 0 {
			t.Fatalf("ReadRaw(%d) empty below tail %d", off, master.CommitLogMaxOffset())
		}
		if err := slave.AppendRaw(off, data); err != nil {
			t.Fatal(err)
		}
		off += int64(len(data))
		release()
	}
	if err := slave.AppendRaw(5, []byte{1}); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("append at wrong offset: %v", err)
	}
	waitDispatched(t, master)
	waitDispatched(t, slave)
	for q := int32(0); q < 2; q++ {
		a, b := readAll(t, master, "H", q), readAll(t, slave, "H", q)
		if len(a) != 250 || len(b) != 250 {
			t.Fatalf("queue %d: master %d slave %d", q, len(a), len(b))
		}
		for i := range a {
			if string(a[i].Body) != string(b[i].Body) || a[i].PhysicalOffset != b[i].PhysicalOffset {
				t.Fatalf("queue %d message %d differs", q, i)
			}
		}
	}
	if got := slave.QueryMessage("H", "k321", 5, 0, 1<<62); len(got) != 1 {
		t.Fatalf("slave index: %v", got)
	}
}

// TestReplicaFromNewestSegment starts an empty slave at its master's newest
// segment, as 4.9.7 does: the queue's first entry there is not the first of
// its consume-queue file. Its min offset must be that entry, and a restart
// must keep every entry (the slots before it are pre-blanks, not the end).
func TestReplicaFromNewestSegment(t *testing.T) {
	cfg := testConfig(t)
	master := mustOpen(t, cfg)
	defer master.Close()
	for master.CommitLogMaxOffset() < int64(cfg.MappedFileSizeCommitLog)+1000 {
		mustPut(t, master, newMsg("H", 0, "x", nil))
	}
	waitDispatched(t, master)
	start := int64(cfg.MappedFileSizeCommitLog)
	scfg := testConfig(t)
	slave := mustOpen(t, scfg)
	data, release := master.ReadRaw(start, int(master.CommitLogMaxOffset()-start))
	if err := slave.AppendRaw(start, data); err != nil {
		t.Fatal(err)
	}
	release()
	waitDispatched(t, slave)
	want := readAll(t, master, "H", 0)
	check := func(when string) {
		cq := slave.queue("H", 0)
		min, max := cq.minOffset.Load(), cq.maxOffset.Load()
		if max != int64(len(want)) || min%int64(cfg.MappedFileSizeConsumeQueue/CQEntrySize) == 0 {
			t.Fatalf("%s: slave queue [%d, %d), master max %d", when, min, max, len(want))
		}
		if m := want[min]; m.PhysicalOffset < start || want[min-1].PhysicalOffset >= start {
			t.Fatalf("%s: slave min %d is at commitlog %d, its segment starts at %d", when, min, m.PhysicalOffset, start)
		}
		if err := slave.Verify(); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
	check("replicated")
	slave.Close()
	slave = mustOpen(t, scfg)
	defer slave.Close()
	check("after restart")
}
