package ha

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/broker/store/storetest"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// TestReplicationSendsFillersForDamagedRecords damages a stopped master on
// disk (a body byte of a record in the middle of segment 1; the magic of
// the last record of segment 0 and of the blank after it), restarts it
// cleanly and lets an empty slave copy everything. The master sends
// neither damaged record: the slave holds a filler record for the first
// and a blank from the second to the segment end, every other byte equals
// the master's, its queues serve every other message, and writes after
// that replicate as usual. It runs with the default transfer batch and with
// one of 97 bytes, which splits records and fillers across frames.
func TestReplicationSendsFillersForDamagedRecords(t *testing.T) {
	for _, batch := range []int{0, 97} {
		t.Run(fmt.Sprint("batch", batch), func(t *testing.T) { testReplicationFillers(t, batch) })
	}
}

func testReplicationFillers(t *testing.T, batch int) {
	mdir := t.TempDir()
	master := storetest.Open(t, storeConfig(mdir))
	putN(t, master, 0, 700)
	waitFor(t, storetest.Patience, "dispatch", func() bool { return master.DispatchBehind() == 0 })
	var all []*message.MessageExt
	for q := int32(0); q < 4; q++ {
		all = append(all, storetest.ReadQueue(t, master, testTopic, q)...)
	}
	var mid, lastOfFirst *message.MessageExt
	for _, m := range all {
		if m.PhysicalOffset < testSegment && (lastOfFirst == nil || m.PhysicalOffset > lastOfFirst.PhysicalOffset) {
			lastOfFirst = m
		}
		if m.PhysicalOffset > testSegment+testSegment/2 && (mid == nil || m.PhysicalOffset < mid.PhysicalOffset) {
			mid = m
		}
	}
	if mid == nil || master.CommitLogMaxOffset() < 2*testSegment {
		t.Fatal("test data must span two segments")
	}
	if err := master.Close(); err != nil {
		t.Fatal(err)
	}
	flip(t, mdir, mid.PhysicalOffset+88+3) // body
	flip(t, mdir, lastOfFirst.PhysicalOffset+message.OffMagic+1)
	flip(t, mdir, lastOfFirst.PhysicalOffset+int64(lastOfFirst.StoreSize)+message.OffMagic) // the blank
	master = openStore(t, mdir)

	slave := openStore(t, "")
	srv := startMaster(t, master, func(c *ServerConfig) { c.EmptySlaveFromOldest, c.TransferBatchSize = true, batch })
	startSlave(t, slave, srv.Addr().String())
	waitCaughtUp(t, master, slave)

	damaged := master.Damaged()
	if len(damaged) != 2 || damaged[0].Offset != lastOfFirst.PhysicalOffset || damaged[1].Offset != mid.PhysicalOffset ||
		damaged[0].Offset+damaged[0].Length != testSegment || damaged[1].Length != int64(mid.StoreSize) {
		t.Fatalf("master's damaged ranges %+v; damaged records at %d and %d", damaged, lastOfFirst.PhysicalOffset, mid.PhysicalOffset)
	}
	end := master.CommitLogMaxOffset()
	m, s := rawRange(t, master, 0, end), rawRange(t, slave, 0, end)
	at := int64(0)
	for _, d := range damaged {
		if !bytes.Equal(m[at:d.Offset], s[at:d.Offset]) {
			t.Fatalf("slave differs from the master in [%d, %d)", at, d.Offset)
		}
		at = d.Offset + d.Length
	}
	if !bytes.Equal(m[at:], s[at:]) {
		t.Fatalf("slave differs from the master after %d", at)
	}
	// The range ending segment 0 is a blank there; the other a filler.
	blank := s[damaged[0].Offset:]
	if v := int32(uint32(blank[4])<<24 | uint32(blank[5])<<16 | uint32(blank[6])<<8 | uint32(blank[7])); v != message.BlankMagicCode {
		t.Fatalf("slave holds magic %d where segment 0's damaged end was", v)
	}
	v, err := message.ParseRecord(s[damaged[1].Offset : damaged[1].Offset+damaged[1].Length])
	if err != nil || string(v.Topic()) != store.DamagedTopic || !v.CheckCRC() || v.PhysicalOffset() != damaged[1].Offset {
		t.Fatalf("slave's filler: %v, topic %q", err, v.Topic())
	}

	waitFor(t, storetest.Patience, "dispatch", func() bool { return master.DispatchBehind() == 0 && slave.DispatchBehind() == 0 })
	total := 0
	for q := int32(0); q < 4; q++ {
		a, b := storetest.ReadQueue(t, master, testTopic, q), storetest.ReadQueue(t, slave, testTopic, q)
		if len(a) != len(b) {
			t.Fatalf("queue %d: master serves %d messages, slave %d", q, len(a), len(b))
		}
		for i := range a {
			if !bytes.Equal(a[i].Body, b[i].Body) || a[i].QueueOffset != b[i].QueueOffset {
				t.Fatalf("queue %d message %d differs", q, i)
			}
			if a[i].PhysicalOffset == mid.PhysicalOffset || a[i].PhysicalOffset == lastOfFirst.PhysicalOffset {
				t.Fatalf("queue %d serves a damaged record", q)
			}
		}
		total += len(a)
	}
	if total != 698 {
		t.Fatalf("%d messages served, want 698", total)
	}
	if got := slave.Damaged(); len(got) != 1 || got[0].Kind != store.DamageFiller || got[0].Offset != mid.PhysicalOffset {
		t.Fatalf("slave's damaged ranges %+v", got)
	}

	putN(t, master, 700, 100)
	srv.Notify()
	waitCaughtUp(t, master, slave)
	assertSameCommitLog(t, master, slave, master.CommitLogMaxOffset()-1000)
}

// flip XORs one byte of the commitlog under dir at commitlog offset off.
func flip(t *testing.T, dir string, off int64) {
	t.Helper()
	seg := off - off%testSegment
	f, err := os.OpenFile(filepath.Join(dir, "commitlog", fmt.Sprintf("%020d", seg)), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	f.ReadAt(b, off-seg)
	b[0] ^= 0x5A
	if _, err := f.WriteAt(b, off-seg); err != nil {
		t.Fatal(err)
	}
}
