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
