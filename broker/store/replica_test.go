package store

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestReplicateRaw copies a master's commitlog to a slave in odd-sized
// chunks (splitting records and crossing segments) and checks the slave
// serves the same messages.
func TestReplicateRaw(t *testing.T) {
	master := mustOpen(t, testConfig(t))
	defer master.Close()
	for i := range 500 {
		mustPut(t, master, newMsg("H", int32(i%2), body(i)+zeros(i%200), map[string]string{"KEYS": fmt.Sprint("k", i)}))
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

// TestReadCheckedWithoutState copies a master's commitlog through
// ReadChecked in odd-sized chunks, each call not told where the last one
// stopped (as after a slave reconnects mid-record), one record damaged in
// memory: the copy equals the master's bytes except that record, which is a
// filler, and the slave serves every other message.
func TestReadCheckedWithoutState(t *testing.T) {
	master := mustOpen(t, testConfig(t))
	defer master.Close()
	var res []*PutResult
	for i := range 400 {
		res = append(res, mustPut(t, master, newMsg("H", int32(i%2), body(i)+zeros(i%200), nil)))
	}
	waitDispatched(t, master)
	victim := res[123]
	seg := master.cl.segment(victim.PhysicalOffset)
	seg.Data[victim.PhysicalOffset-seg.Start+100] ^= 1 // the body
	seg.Release()

	slave := mustOpen(t, testConfig(t))
	defer slave.Close()
	for off := int64(0); off < master.CommitLogMaxOffset(); {
		data, _, release, err := master.ReadChecked(off, 5+int(off%777), -1)
		if err != nil || len(data) == 0 {
			t.Fatalf("ReadChecked(%d): %d bytes, %v", off, len(data), err)
		}
		if err := slave.AppendRaw(off, data); err != nil {
			t.Fatal(err)
		}
		off += int64(len(data))
		release()
	}
	if d := master.Damaged(); len(d) != 1 || d[0].Offset != victim.PhysicalOffset || d[0].Length != int64(victim.Size) {
		t.Fatalf("master's damaged ranges %+v, victim at %d (%d bytes)", d, victim.PhysicalOffset, victim.Size)
	}
	a, release := master.ReadRaw(0, int(master.CommitLogMaxOffset()))
	b, release2 := slave.ReadRaw(0, int(master.CommitLogMaxOffset()))
	v := victim.PhysicalOffset
	if len(a) != len(b) || !bytes.Equal(a[:v], b[:v]) || !bytes.Equal(a[v+int64(victim.Size):], b[v+int64(victim.Size):]) {
		t.Fatal("the copy differs from the master outside the damaged record")
	}
	release()
	release2()
	waitDispatched(t, slave)
	n := len(readAll(t, slave, "H", 0)) + len(readAll(t, slave, "H", 1))
	if n != 399 {
		t.Fatalf("slave serves %d messages, want 399", n)
	}
}

// zeros is fmt.Sprint(make([]byte, n)), "[0 0 ... 0]": padding that moves the records'
// offsets as the tests' expectations assume.
func zeros(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("0 ", n), " ") + "]" }
