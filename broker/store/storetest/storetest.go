// Package storetest holds helpers for tests that run on a real broker/store in a temp
// folder: a small configuration, a settable clock, and reading a queue back.
package storetest

import (
	"log/slog"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// Config returns a store configuration under root sized for tests: 256 KiB commitlog
// segments, 100-entry consume-queue files, small index files, no disk-usage cleaning.
func Config(root string) store.Config {
	cfg := store.DefaultConfig(root)
	cfg.MappedFileSizeCommitLog = 256 << 10
	cfg.MappedFileSizeConsumeQueue = 100 * store.CQEntrySize
	cfg.MaxMessageSize = 16 << 10
	cfg.MaxHashSlotNum = 64
	cfg.MaxIndexNum = 256
	cfg.DiskUsage = func(string) (float64, error) { return 0.1, nil }
	cfg.CleanResourceInterval = time.Hour
	return cfg
}

// Open opens a store with cfg, failing the test on error. The caller closes it.
func Open(t testing.TB, cfg store.Config) *store.Store {
	t.Helper()
	s, err := store.Open(cfg)
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	return s
}

// Message returns a message as a producer at 10.1.2.3 would send it.
func Message(topic string, qid int32, body string, props map[string]string) *message.Message {
	p, err := message.EncodeProperties(props)
	if err != nil {
		panic(err)
	}
	return &message.Message{
		Topic: topic, QueueID: qid, Body: []byte(body), Properties: p,
		BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("10.1.2.3:4567"),
	}
}

// ReadQueue returns every message still stored in topic/qid, CRC-checked,
// moving past gaps (damaged records) as a consumer does.
func ReadQueue(t testing.TB, st *store.Store, topic string, qid int32) []*message.MessageExt {
	t.Helper()
	var out []*message.MessageExt
	for off := st.MinOffsetInQueue(topic, qid); ; {
		r := st.GetMessage(topic, qid, off, 32, 1<<20, nil)
		if r.Status != store.Found {
			r.Release()
			if r.Status == store.MessageWasRemoving && r.NextBeginOffset > off {
				off = r.NextBeginOffset // a gap (damaged record): a consumer moves past it
				continue
			}
			return out
		}
		for _, b := range r.Messages {
			m, err := message.DecodeRecord(b, true)
			if err != nil {
				r.Release()
				t.Fatal(err)
			}
			out = append(out, m)
		}
		off = r.NextBeginOffset
		r.Release()
	}
}

// Patience bounds the waits below: long enough for a loaded CI machine, so a
// timeout means the awaited thing is not coming.
const Patience = 30 * time.Second

// WaitQueue polls until topic/qid holds at least n messages and returns them.
func WaitQueue(t testing.TB, st *store.Store, topic string, qid int32, n int) []*message.MessageExt {
	t.Helper()
	deadline := time.Now().Add(Patience)
	for {
		got := ReadQueue(t, st, topic, qid)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%d: %d messages after %v, want %d", topic, qid, len(got), Patience, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitDispatched waits until the consume queues cover everything appended so
// far: after it, what a queue does not hold was never put.
func WaitDispatched(t testing.TB, st *store.Store) {
	t.Helper()
	deadline := time.Now().Add(Patience)
	for st.DispatchBehind() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("dispatch %d bytes behind after %v", st.DispatchBehind(), Patience)
		}
		time.Sleep(time.Millisecond)
	}
}

// Clock is a settable clock for store.Config.Now and the services that
// compare against store timestamps. Safe for concurrent use.
type Clock struct{ ms atomic.Int64 }

// NewClock returns a clock standing at start (millisecond precision, as
// store timestamps).
func NewClock(start time.Time) *Clock {
	c := &Clock{}
	c.ms.Store(start.UnixMilli())
	return c
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// Logger returns a logger that writes each line to t.Log, at every level.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
