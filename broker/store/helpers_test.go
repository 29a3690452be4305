package store

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// testConfig is a small-file configuration rooted in a temp dir.
func testConfig(t testing.TB) Config {
	cfg := DefaultConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 64 << 10
	cfg.MappedFileSizeConsumeQueue = 100 * CQEntrySize
	cfg.MaxMessageSize = 16 << 10
	cfg.MaxHashSlotNum = 64
	cfg.MaxIndexNum = 256
	cfg.DiskUsage = func(string) (float64, error) { return 0.1, nil }
	cfg.CleanResourceInterval = time.Hour
	return cfg
}

func mustOpen(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func newMsg(topic string, qid int32, body string, props map[string]string) *message.Message {
	p, err := message.EncodeProperties(props)
	if err != nil {
		panic(err)
	}
	return &message.Message{
		Topic: topic, QueueID: qid, Body: []byte(body), Properties: p,
		BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("10.1.2.3:4567"),
	}
}

func mustPut(t testing.TB, s *Store, m *message.Message) *PutResult {
	t.Helper()
	r, err := s.PutMessage(m)
	if err != nil {
		t.Fatalf("PutMessage: %v", err)
	}
	if r.Status != PutOK {
		t.Fatalf("PutMessage status %v", r.Status)
	}
	return r
}

// waitDispatched waits until the dispatcher has caught up with the tail.
func waitDispatched(t testing.TB, s *Store) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.DispatchBehind() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("dispatcher %d bytes behind after 5s", s.DispatchBehind())
		}
		time.Sleep(time.Millisecond)
	}
}

// readAll pulls every message of a queue from offset 0, decoded, moving
// past gaps as a consumer does.
func readAll(t testing.TB, s *Store, topic string, qid int32) []*message.MessageExt {
	t.Helper()
	var out []*message.MessageExt
	for off := int64(0); ; {
		r := s.GetMessage(topic, qid, off, 32, 1<<20, nil)
		if r.Status != Found {
			r.Release()
			if r.Status == OffsetOverflowOne || r.Status == NoMessageInQueue || r.Status == NoMatchedLogicQueue {
				return out
			}
			if r.Status == MessageWasRemoving && r.NextBeginOffset > off {
				off = r.NextBeginOffset // a gap (damaged record): a consumer moves past it
				continue
			}
			t.Fatalf("GetMessage(%s,%d,%d): %v (min %d max %d next %d clmin %d)", topic, qid, off, r.Status, r.MinOffset, r.MaxOffset, r.NextBeginOffset, s.CommitLogMinOffset())
		}
		for _, b := range r.Messages {
			m, err := message.DecodeRecord(b, true)
			if err != nil {
				t.Fatalf("decode at queue offset %d: %v", off, err)
			}
			out = append(out, m)
		}
		off = r.NextBeginOffset
		r.Release()
	}
}

func body(i int) string { return fmt.Sprintf("body-%06d", i) }
