package ha

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/broker/store/storetest"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// *store.Store is what the broker passes to both sides.
var (
	_ MasterStore = (*store.Store)(nil)
	_ SlaveStore  = (*store.Store)(nil)
)

const testSegment = 64 << 10 // commitlog segment size in tests

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func storeConfig(dir string) store.Config {
	cfg := storetest.Config(dir)
	cfg.MappedFileSizeCommitLog = testSegment
	return cfg
}

// openStore opens a store in dir (a fresh temp dir when dir is "") and
// closes it at the end of the test unless closed before.
func openStore(t testing.TB, dir string) *store.Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	s := storetest.Open(t, storeConfig(dir))
	t.Cleanup(func() { s.Close() })
	return s
}

const testTopic = "HA"

// putN stores n messages numbered from..from+n-1 over 4 queues, with
// bodies of varying size so frames and segments split records anywhere.
func putN(t testing.TB, s *store.Store, from, n int) *store.PutResult {
	t.Helper()
	var last *store.PutResult
	for i := from; i < from+n; i++ {
		props, err := message.EncodeProperties(map[string]string{"KEYS": fmt.Sprint("k", i), "TAGS": "t"})
		if err != nil {
			t.Fatal(err)
		}
		m := &message.Message{
			Topic: testTopic, QueueID: int32(i % 4), Properties: props,
			Body:          []byte(fmt.Sprintf("body-%06d-%s", i, bytes.Repeat([]byte{'x'}, i%300))),
			BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("10.1.2.3:4567"),
		}
		r, err := s.PutMessage(m)
		if err != nil {
			t.Fatalf("PutMessage %d: %v", i, err)
		}
		last = r
	}
	return last
}

func startMaster(t testing.TB, st MasterStore, edit func(*ServerConfig)) *Server {
	t.Helper()
	cfg := ServerConfig{
		ListenAddr: "127.0.0.1:0", SegmentSize: testSegment,
		HeartbeatInterval: 200 * time.Millisecond, HousekeepingInterval: 2 * time.Second,
		Logger: quiet,
	}
	if edit != nil {
		edit(&cfg)
	}
	srv := NewServer(st, cfg)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func startSlave(t testing.TB, st SlaveStore, addr string) *Client {
	t.Helper()
	c := NewClient(st, ClientConfig{
		MasterAddr: addr, HeartbeatInterval: 200 * time.Millisecond, HousekeepingInterval: 2 * time.Second,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Logger: quiet,
	})
	c.Start()
	t.Cleanup(func() { c.Close() })
	return c
}

// waitSlaveReported waits until n slaves are connected and have reported,
// so the master no longer picks their start offset.
func waitSlaveReported(t testing.TB, srv *Server, n int) {
	t.Helper()
	waitFor(t, 3*time.Second, "slave report", func() bool {
		ss := srv.Slaves()
		if len(ss) != n {
			return false
		}
		for _, s := range ss {
			if s.AckOffset < 0 {
				return false
			}
		}
		return true
	})
}

func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitCaughtUp waits until the slave's commitlog reaches the master's.
func waitCaughtUp(t testing.TB, master, slave *store.Store) {
	t.Helper()
	waitFor(t, 5*time.Second, "slave to catch up", func() bool {
		return slave.CommitLogMaxOffset() == master.CommitLogMaxOffset()
	})
}

// rawRange reads the commitlog bytes [from, to).
func rawRange(t testing.TB, s *store.Store, from, to int64) []byte {
	t.Helper()
	var out []byte
	for off := from; off < to; {
		data, release := s.ReadRaw(off, int(to-off))
		if len(data) == 0 {
			release()
			t.Fatalf("ReadRaw(%d) empty below %d", off, to)
		}
		out = append(out, data...)
		off += int64(len(data))
		release()
	}
	return out
}

// assertSameCommitLog checks the slave holds the master's bytes in [from, master max).
func assertSameCommitLog(t testing.TB, master, slave *store.Store, from int64) {
	t.Helper()
	end := master.CommitLogMaxOffset()
	if got := slave.CommitLogMaxOffset(); got != end {
		t.Fatalf("slave max offset %d, master %d", got, end)
	}
	if !bytes.Equal(rawRange(t, master, from, end), rawRange(t, slave, from, end)) {
		t.Fatalf("commitlogs differ in [%d, %d)", from, end)
	}
}

// assertSameQueues checks the slave's consume queues serve the master's messages.
func assertSameQueues(t testing.TB, master, slave *store.Store, want int) {
	t.Helper()
	waitFor(t, 5*time.Second, "dispatch", func() bool { return master.DispatchBehind() == 0 && slave.DispatchBehind() == 0 })
	total := 0
	for q := int32(0); q < 4; q++ {
		a, b := storetest.ReadQueue(t, master, testTopic, q), storetest.ReadQueue(t, slave, testTopic, q)
		if len(a) != len(b) {
			t.Fatalf("queue %d: master %d messages, slave %d", q, len(a), len(b))
		}
		for i := range a {
			if !bytes.Equal(a[i].Body, b[i].Body) || a[i].PhysicalOffset != b[i].PhysicalOffset || a[i].QueueOffset != b[i].QueueOffset {
				t.Fatalf("queue %d message %d differs", q, i)
			}
		}
		total += len(a)
	}
	if total != want {
		t.Fatalf("%d messages, want %d", total, want)
	}
}
