package ha

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store"
)

// TestReplicateAcrossSegments streams several segments' worth of messages,
// written while the slave is connected, and checks the slave's commitlog
// is byte-identical and its consume queues serve the same messages.
func TestReplicateAcrossSegments(t *testing.T) {
	master, slave := openStore(t, ""), openStore(t, "")
	srv := startMaster(t, master, nil)
	startSlave(t, slave, srv.Addr().String())
	waitSlaveReported(t, srv, 1)
	putN(t, master, 0, 300)
	waitCaughtUp(t, master, slave)
	putN(t, master, 300, 900)
	srv.Notify()
	waitCaughtUp(t, master, slave)
	if master.CommitLogMaxOffset() < 3*testSegment {
		t.Fatalf("test wrote only %d bytes; want several segments", master.CommitLogMaxOffset())
	}
	assertSameCommitLog(t, master, slave, 0)
	assertSameQueues(t, master, slave, 1200)
	waitFor(t, 2*time.Second, "ack", func() bool { return srv.SlaveAckOffset() == master.CommitLogMaxOffset() })
}

// TestEmptySlaveJoinsLate: the master has data (within its first segment)
// before an empty slave connects; the slave copies it from offset 0.
func TestEmptySlaveJoinsLate(t *testing.T) {
	master, slave := openStore(t, ""), openStore(t, "")
	putN(t, master, 0, 100)
	if master.CommitLogMaxOffset() >= testSegment {
		t.Fatal("test data must stay in the first segment")
	}
	srv := startMaster(t, master, nil)
	startSlave(t, slave, srv.Addr().String())
	waitCaughtUp(t, master, slave)
	assertSameCommitLog(t, master, slave, 0)
	assertSameQueues(t, master, slave, 100)
}

// TestEmptySlaveMasterPastFirstSegment: an empty slave joins a master
// whose data spans segments. With EmptySlaveFromOldest it copies
// everything; with the 4.9.7 rule the master starts at its newest segment,
// which the slave's store accepts as its first offset.
func TestEmptySlaveMasterPastFirstSegment(t *testing.T) {
	master := openStore(t, "")
	putN(t, master, 0, 700)
	if master.CommitLogMaxOffset() < 2*testSegment {
		t.Fatal("test data must span segments")
	}

	slave := openStore(t, "")
	srv := startMaster(t, master, func(c *ServerConfig) { c.EmptySlaveFromOldest = true })
	startSlave(t, slave, srv.Addr().String())
	waitCaughtUp(t, master, slave)
	assertSameCommitLog(t, master, slave, 0)
	assertSameQueues(t, master, slave, 700)

	sdir := t.TempDir()
	slave = openStore(t, sdir)
	srv = startMaster(t, master, nil)
	cl := startSlave(t, slave, srv.Addr().String())
	newest := master.CommitLogMaxOffset() - master.CommitLogMaxOffset()%testSegment
	waitCaughtUp(t, master, slave)
	if got := slave.CommitLogMinOffset(); got != newest {
		t.Fatalf("slave starts at %d, want the master's newest segment %d", got, newest)
	}
	assertSameCommitLog(t, master, slave, newest)
	waitFor(t, 5*time.Second, "dispatch", func() bool { return slave.DispatchBehind() == 0 })
	for q := int32(0); q < 4; q++ {
		r := slave.GetMessage(testTopic, q, slave.MinOffsetInQueue(testTopic, q), 32, 1<<20, nil)
		if r.Status != store.Found {
			t.Fatalf("queue %d: slave serves nothing from its min offset: %v", q, r.Status)
		}
		r.Release()
	}
	// Restarted, it resumes from its own max offset.
	cl.Close()
	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}
	slave = openStore(t, sdir)
	if err := slave.Verify(); err != nil {
		t.Fatal(err)
	}
	putN(t, master, 700, 100)
	startSlave(t, slave, srv.Addr().String())
	waitCaughtUp(t, master, slave)
	assertSameCommitLog(t, master, slave, newest)
}

// TestSlaveRestartResumes stops the slave (client and store) mid-way and
// reopens it: it resumes from its own max offset.
func TestSlaveRestartResumes(t *testing.T) {
	master := openStore(t, "")
	dir := t.TempDir()
	slave := openStore(t, dir)
	srv := startMaster(t, master, nil)
	cl := startSlave(t, slave, srv.Addr().String())
	waitSlaveReported(t, srv, 1)
	putN(t, master, 0, 400)
	waitCaughtUp(t, master, slave)
	cl.Close()
	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}
	mid := master.CommitLogMaxOffset()
	putN(t, master, 400, 400)

	slave = openStore(t, dir)
	if got := slave.CommitLogMaxOffset(); got != mid {
		t.Fatalf("reopened slave at %d, want %d", got, mid)
	}
	cl = startSlave(t, slave, srv.Addr().String())
	waitCaughtUp(t, master, slave)
	assertSameCommitLog(t, master, slave, 0)
	assertSameQueues(t, master, slave, 800)
	if cl.ReportedOffset() != master.CommitLogMaxOffset() {
		waitFor(t, time.Second, "report", func() bool { return cl.ReportedOffset() == master.CommitLogMaxOffset() })
	}
}

// TestSetMasterAddr: a slave started without a master address replicates
// once it learns one, and moves to a new master when told.
func TestSetMasterAddr(t *testing.T) {
	master, slave := openStore(t, ""), openStore(t, "")
	putN(t, master, 0, 50)
	srv := startMaster(t, master, nil)
	cl := startSlave(t, slave, "")
	time.Sleep(50 * time.Millisecond)
	if slave.CommitLogMaxOffset() != 0 || cl.Connected() {
		t.Fatal("slave replicated without a master address")
	}
	cl.SetMasterAddr(srv.Addr().String())
	waitCaughtUp(t, master, slave)

	// A second master serving the same store: the slave follows the switch.
	srv2 := startMaster(t, master, nil)
	cl.SetMasterAddr(srv2.Addr().String())
	waitFor(t, 2*time.Second, "slave on the new master", func() bool { return srv2.Connections() == 1 && srv.Connections() == 0 })
	putN(t, master, 50, 50)
	srv2.Notify()
	waitCaughtUp(t, master, slave)
	assertSameQueues(t, master, slave, 100)
}

// TestWaitForSlave covers SYNC_MASTER: acknowledged, slave gone, slave too
// far behind, slave silent.
func TestWaitForSlave(t *testing.T) {
	master, slave := openStore(t, ""), openStore(t, "")
	srv := startMaster(t, master, func(c *ServerConfig) { c.SlaveFallbehindMax = 8 << 10 })
	ctx := context.Background()

	// No slave yet.
	r := putN(t, master, 0, 1)
	if err := srv.WaitForSlave(ctx, r.PhysicalOffset+int64(r.Size)); !errors.Is(err, ErrSlaveNotAvailable) {
		t.Fatalf("without slave: %v", err)
	}

	cl := startSlave(t, slave, srv.Addr().String())
	waitSlaveReported(t, srv, 1)
	waitCaughtUp(t, master, slave)
	for i := range 20 {
		r := putN(t, master, 1+i, 1)
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := srv.WaitForSlave(c, r.PhysicalOffset+int64(r.Size)); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		cancel()
	}

	// Slave stopped: not available once the master notices.
	cl.Close()
	waitFor(t, 2*time.Second, "disconnect", func() bool { return srv.Connections() == 0 })
	r = putN(t, master, 100, 1)
	if err := srv.WaitForSlave(ctx, r.PhysicalOffset+int64(r.Size)); !errors.Is(err, ErrSlaveNotAvailable) {
		t.Fatalf("after slave stopped: %v", err)
	}

	// A connected slave that never acknowledges: timeout.
	fs := dialFakeSlave(t, srv.Addr().String())
	fs.report(t, master.CommitLogMaxOffset())
	waitFor(t, time.Second, "fake slave", func() bool { return srv.Connections() == 1 })
	r = putN(t, master, 101, 1)
	c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := srv.WaitForSlave(c, r.PhysicalOffset+int64(r.Size)); !errors.Is(err, ErrSlaveTimeout) {
		t.Fatalf("silent slave: %v", err)
	}

	// More than SlaveFallbehindMax behind the best acknowledgement.
	r = putN(t, master, 102, 100)
	if err := srv.WaitForSlave(ctx, r.PhysicalOffset+int64(r.Size)); !errors.Is(err, ErrSlaveNotAvailable) {
		t.Fatalf("lagging slave: %v", err)
	}
}

// TestWaitForSlaveWakesWriters: the writer that sends to a slave is woken
// by the wait itself (4.9.7's wakeupAll). Its poll and heartbeat are set to
// an hour, so without the wake-up nothing would reach the slave.
func TestWaitForSlaveWakesWriters(t *testing.T) {
	master, slave := openStore(t, ""), openStore(t, "")
	srv := startMaster(t, master, func(c *ServerConfig) { c.PollInterval, c.HeartbeatInterval = time.Hour, time.Hour })
	cl := NewClient(slave, ClientConfig{
		MasterAddr: srv.Addr().String(), HeartbeatInterval: 200 * time.Millisecond, HousekeepingInterval: time.Hour,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Logger: quiet,
	})
	cl.Start()
	defer cl.Close()
	waitSlaveReported(t, srv, 1)
	for i := range 10 {
		r := putN(t, master, i, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := srv.WaitForSlave(ctx, r.PhysicalOffset+int64(r.Size)); err != nil {
			t.Fatalf("message %d: %v (the writer was not woken)", i, err)
		}
		cancel()
	}
}

// TestWaitForSlaveClose: Close releases waiters.
func TestWaitForSlaveClose(t *testing.T) {
	master := openStore(t, "")
	srv := startMaster(t, master, nil)
	fs := dialFakeSlave(t, srv.Addr().String())
	fs.report(t, 0)
	waitFor(t, time.Second, "fake slave", func() bool { return srv.Connections() == 1 })
	errc := make(chan error, 1)
	go func() { errc <- srv.WaitForSlave(context.Background(), 100) }()
	time.Sleep(50 * time.Millisecond) // usually waiting by then; Close releases it either way
	srv.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("got %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("waiter not released by Close")
	}
}
