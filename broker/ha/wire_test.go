package ha

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// fakeSlave speaks the slave side of the protocol by hand.
type fakeSlave struct{ net.Conn }

func dialFakeSlave(t testing.TB, addr string) *fakeSlave {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &fakeSlave{nc}
}

func (f *fakeSlave) report(t testing.TB, off int64) {
	t.Helper()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(off))
	if _, err := f.Write(b[:]); err != nil {
		t.Fatal(err)
	}
}

// frame reads one frame.
func (f *fakeSlave) frame(t testing.TB) (int64, []byte) {
	t.Helper()
	f.SetReadDeadline(time.Now().Add(3 * time.Second))
	var h [headerSize]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		t.Fatalf("read frame header: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(h[8:]))
	if _, err := io.ReadFull(f, body); err != nil {
		t.Fatalf("read frame body: %v", err)
	}
	return int64(binary.BigEndian.Uint64(h[:8])), body
}

// TestMasterFrames checks the master's side of the wire: frames start at
// the requested offset, carry at most TransferBatchSize bytes and never
// cross a segment, the body is the commitlog, and an idle master sends
// empty heartbeat frames at the next offset.
func TestMasterFrames(t *testing.T) {
	master := openStore(t, "")
	putN(t, master, 0, 700)
	max := master.CommitLogMaxOffset()
	srv := startMaster(t, master, func(c *ServerConfig) { c.TransferBatchSize = 5000 })
	fs := dialFakeSlave(t, srv.Addr().String())
	from := int64(1000) // not record-aligned: the master does not care
	fs.report(t, from)
	for next := from; next < max; {
		off, body := fs.frame(t)
		if off != next {
			t.Fatalf("frame at %d, want %d", off, next)
		}
		if len(body) == 0 {
			continue // a heartbeat may come in between
		}
		if len(body) > 5000 || off/testSegment != (off+int64(len(body))-1)/testSegment {
			t.Fatalf("frame [%d,+%d) too big or crosses a segment", off, len(body))
		}
		if want := rawRange(t, master, off, off+int64(len(body))); string(want) != string(body) {
			t.Fatalf("frame at %d is not the commitlog", off)
		}
		next += int64(len(body))
	}
	start := time.Now()
	off, body := fs.frame(t)
	if off != max || len(body) != 0 {
		t.Fatalf("heartbeat: offset %d size %d, want %d 0", off, len(body), max)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("heartbeat after %v", d)
	}
}

// TestMasterEmptySlaveStartsAtNewestSegment: a slave reporting 0 gets data
// from the start of the master's newest segment, as in 4.9.7.
func TestMasterEmptySlaveStartsAtNewestSegment(t *testing.T) {
	master := openStore(t, "")
	putN(t, master, 0, 700)
	max := master.CommitLogMaxOffset()
	if max < 2*testSegment {
		t.Fatalf("only %d bytes", max)
	}
	srv := startMaster(t, master, nil)
	fs := dialFakeSlave(t, srv.Addr().String())
	fs.report(t, 0)
	off, _ := fs.frame(t)
	if want := max - max%testSegment; off != want {
		t.Fatalf("first frame at %d, want %d", off, want)
	}
}

// TestMasterDropsBadSlaves: a slave acknowledging past the master's end, or
// vanishing mid-stream, is dropped; the master keeps serving others.
func TestMasterDropsBadSlaves(t *testing.T) {
	master, slave := openStore(t, ""), openStore(t, "")
	putN(t, master, 0, 200)
	srv := startMaster(t, master, nil)

	fs := dialFakeSlave(t, srv.Addr().String())
	fs.report(t, 0)
	fs.report(t, master.CommitLogMaxOffset()+1)
	fs.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.Copy(io.Discard, fs); err != nil {
		t.Fatalf("master did not close the connection: %v", err)
	}
	if srv.SlaveAckOffset() > master.CommitLogMaxOffset() {
		t.Fatal("bogus acknowledgement counted")
	}

	// A slave that disappears after its first frame.
	fs = dialFakeSlave(t, srv.Addr().String())
	fs.report(t, 0)
	fs.frame(t)
	fs.Close()

	waitFor(t, 2*time.Second, "bad slaves gone", func() bool { return srv.Connections() == 0 })
	startSlave(t, slave, srv.Addr().String())
	waitSlaveReported(t, srv, 1)
	putN(t, master, 200, 200)
	srv.Notify()
	waitCaughtUp(t, master, slave)
	assertSameCommitLog(t, master, slave, 0)
}

// fakeMaster accepts one slave at a time and lets the test write frames.
type fakeMaster struct {
	ln    net.Listener
	conns chan net.Conn
}

func listenFakeMaster(t testing.TB) *fakeMaster {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fm := &fakeMaster{ln: ln, conns: make(chan net.Conn, 16)}
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			fm.conns <- nc
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return fm
}

// accept returns the next slave connection and its first report.
func (fm *fakeMaster) accept(t testing.TB) (net.Conn, int64) {
	t.Helper()
	select {
	case nc := <-fm.conns:
		t.Cleanup(func() { nc.Close() })
		var b [8]byte
		nc.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := io.ReadFull(nc, b[:]); err != nil {
			t.Fatalf("first report: %v", err)
		}
		return nc, int64(binary.BigEndian.Uint64(b[:]))
	case <-time.After(3 * time.Second):
		t.Fatal("slave did not connect")
		return nil, 0
	}
}

func writeFrame(t testing.TB, nc net.Conn, off int64, size int32, body []byte) {
	t.Helper()
	b := make([]byte, headerSize+len(body))
	binary.BigEndian.PutUint64(b, uint64(off))
	binary.BigEndian.PutUint32(b[8:], uint32(size))
	copy(b[headerSize:], body)
	if _, err := nc.Write(b); err != nil {
		t.Fatal(err)
	}
}

// expectClosed waits until the slave closes nc (reports may come first).
func expectClosed(t testing.TB, nc net.Conn) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.Copy(io.Discard, nc); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("slave kept the connection")
		}
	}
}

// TestSlaveRejectsBadFrames feeds the slave malformed frames: each one
// makes it drop the connection, writes nothing, and it reconnects and
// replicates correctly afterwards.
func TestSlaveRejectsBadFrames(t *testing.T) {
	master, slave := openStore(t, ""), openStore(t, "")
	putN(t, master, 0, 50)
	good := rawRange(t, master, 0, master.CommitLogMaxOffset())
	fm := listenFakeMaster(t)
	cl := startSlave(t, slave, fm.ln.Addr().String())

	// Accept a first good chunk so the slave is no longer empty.
	nc, rep := fm.accept(t)
	if rep != 0 {
		t.Fatalf("first report %d", rep)
	}
	writeFrame(t, nc, 0, 100, good[:100])
	waitFor(t, 2*time.Second, "first chunk", func() bool { return slave.CommitLogMaxOffset() == 100 })

	bad := []struct {
		name string
		send func(nc net.Conn)
	}{
		{"offset behind", func(nc net.Conn) { writeFrame(t, nc, 50, 10, good[50:60]) }},
		{"offset ahead", func(nc net.Conn) { writeFrame(t, nc, 200, 10, good[200:210]) }},
		{"heartbeat at wrong offset", func(nc net.Conn) { writeFrame(t, nc, 7, 0, nil) }},
		{"negative size", func(nc net.Conn) { writeFrame(t, nc, 100, -1, nil) }},
		{"oversize", func(nc net.Conn) { writeFrame(t, nc, 100, DefaultMaxFrameBody+1, good[100:200]) }},
		{"truncated body", func(nc net.Conn) { writeFrame(t, nc, 100, 1000, good[100:600]); nc.Close() }},
	}
	for _, tc := range bad {
		tc.send(nc)
		expectClosed(t, nc)
		if got := slave.CommitLogMaxOffset(); got != 100 {
			t.Fatalf("%s: slave wrote, max offset %d", tc.name, got)
		}
		nc, rep = fm.accept(t)
		if rep != 100 {
			t.Fatalf("%s: reconnect reported %d, want 100", tc.name, rep)
		}
	}

	// The rest, in frames, with a heartbeat: the slave takes it all and
	// acknowledges.
	writeFrame(t, nc, 100, 0, nil)
	writeFrame(t, nc, 100, int32(len(good)-100), good[100:])
	var b [8]byte
	for {
		nc.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := io.ReadFull(nc, b[:]); err != nil {
			t.Fatalf("no acknowledgement: %v", err)
		}
		if int64(binary.BigEndian.Uint64(b[:])) == int64(len(good)) {
			break
		}
	}
	assertSameCommitLog(t, master, slave, 0)
	assertSameQueues(t, master, slave, 50)
	_ = cl
}

// TestSlaveHeartbeats: an idle slave reports its offset every heartbeat
// interval, so a master's housekeeping does not drop it.
func TestSlaveHeartbeats(t *testing.T) {
	slave := openStore(t, "")
	fm := listenFakeMaster(t)
	startSlave(t, slave, fm.ln.Addr().String())
	nc, _ := fm.accept(t)
	var b [8]byte
	for range 3 {
		nc.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := io.ReadFull(nc, b[:]); err != nil {
			t.Fatalf("no heartbeat report: %v", err)
		}
	}
}

// TestSlaveDropsSilentMaster: a master that sends nothing for the
// housekeeping interval is dropped and redialled.
func TestSlaveDropsSilentMaster(t *testing.T) {
	slave := openStore(t, "")
	fm := listenFakeMaster(t)
	c := NewClient(slave, ClientConfig{
		MasterAddr: fm.ln.Addr().String(), HeartbeatInterval: 100 * time.Millisecond,
		HousekeepingInterval: 300 * time.Millisecond, MinBackoff: 10 * time.Millisecond, Logger: quiet,
	})
	c.Start()
	defer c.Close()
	nc, _ := fm.accept(t)
	expectClosed(t, nc)
	fm.accept(t)
}

// TestSlaveReconnectsPromptly: with the default 5 s heartbeat the slave
// still redials right after dropping a bad connection.
func TestSlaveReconnectsPromptly(t *testing.T) {
	slave := openStore(t, "")
	fm := listenFakeMaster(t)
	c := NewClient(slave, ClientConfig{MasterAddr: fm.ln.Addr().String(), MinBackoff: 10 * time.Millisecond, Logger: quiet})
	c.Start()
	defer c.Close()
	nc, _ := fm.accept(t)
	writeFrame(t, nc, 0, -5, nil)
	start := time.Now()
	fm.accept(t)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("redialled after %v", d)
	}
}

// TestMasterNoticesDisconnectAtOnce: a slave that goes away stops counting
// immediately, not at the next heartbeat, so SYNC_MASTER sends get
// SLAVE_NOT_AVAILABLE instead of waiting out the timeout.
func TestMasterNoticesDisconnectAtOnce(t *testing.T) {
	master := openStore(t, "")
	srv := startMaster(t, master, func(c *ServerConfig) { c.HeartbeatInterval = time.Minute })
	for _, report := range []bool{false, true} {
		fs := dialFakeSlave(t, srv.Addr().String())
		if report {
			fs.report(t, 0)
		}
		waitFor(t, time.Second, "slave counted", func() bool { return srv.Connections() == 1 })
		fs.Close()
		waitFor(t, 500*time.Millisecond, "slave gone", func() bool { return srv.Connections() == 0 })
	}
}
