package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/openrmq/rocketmq-operator/pkg/message"
)

func TestConsumeQueueEntries(t *testing.T) {
	s := mustOpen(t, testConfig(t))
	defer s.Close()
	var puts []*PutResult
	for i := range 5 {
		puts = append(puts, mustPut(t, s, newMsg("CQ", 1, body(i), map[string]string{"TAGS": "tag-a"})))
	}
	waitDispatched(t, s)

	got, min, max, ok := s.ConsumeQueueEntries("CQ", 1, 1, 3)
	if !ok || min != 0 || max != 5 || len(got) != 3 {
		t.Fatalf("entries 1..3: %v (min %d max %d ok %v)", got, min, max, ok)
	}
	for i, e := range got {
		p := puts[i+1]
		if e.PhyOffset != p.PhysicalOffset || int(e.Size) != p.Size || e.TagsCode != int64(message.JavaStringHash("tag-a")) {
			t.Errorf("entry %d = %+v, want offset %d size %d", i+1, e, p.PhysicalOffset, p.Size)
		}
	}
	if got, _, _, _ := s.ConsumeQueueEntries("CQ", 1, 4, 10); len(got) != 1 {
		t.Errorf("from the last entry: %d entries, want 1", len(got))
	}
	if got, _, _, ok := s.ConsumeQueueEntries("CQ", 1, 9, 10); !ok || len(got) != 0 {
		t.Errorf("beyond the end: %v %v", got, ok)
	}
	if _, _, _, ok := s.ConsumeQueueEntries("CQ", 0, 0, 10); ok {
		t.Error("a queue never written exists")
	}
}

func TestCleanUnusedTopics(t *testing.T) {
	s := mustOpen(t, testConfig(t))
	defer s.Close()
	for _, topic := range []string{"KEEP", "DROP", ScheduleTopic} {
		mustPut(t, s, newMsg(topic, 0, "x", nil))
	}
	waitDispatched(t, s)

	removed := s.CleanUnusedTopics(func(topic string) bool { return topic == "KEEP" })
	if len(removed) != 1 || removed[0] != "DROP" {
		t.Fatalf("removed %v, want [DROP] (the schedule topic stays)", removed)
	}
	if s.queue("DROP", 0) != nil || s.queue("KEEP", 0) == nil || s.queue(ScheduleTopic, 0) == nil {
		t.Fatal("wrong queues left")
	}
	if _, err := os.Stat(filepath.Join(s.cfg.consumeQueueDir(), "DROP")); !os.IsNotExist(err) {
		t.Fatalf("DROP's directory: %v", err)
	}
}

func TestCleanExpiredConsumeQueues(t *testing.T) {
	cfg := testConfig(t)
	cfg.MappedFileSizeConsumeQueue = 10 * CQEntrySize
	s := mustOpen(t, cfg)
	defer s.Close()
	for i := range 3 {
		mustPut(t, s, newMsg("OLD", 0, body(i), nil))
	}
	fillSegments(t, s, "NEW", 3)
	if n := s.CleanExpiredConsumeQueues(); n != 0 {
		t.Fatalf("removed %d queues while every message is stored", n)
	}

	// Disk nearly full: retention removes the oldest segments, OLD's messages with them.
	s.cfg.DiskUsage = func(string) (float64, error) { return 0.99, nil }
	if st := s.CleanExpired(); st.CommitLogSegments == 0 {
		t.Fatal("no segment removed")
	}
	if n := s.CleanExpiredConsumeQueues(); n != 1 {
		t.Fatalf("removed %d queues, want OLD's", n)
	}
	if s.queue("OLD", 0) != nil || s.queue("NEW", 0) == nil {
		t.Fatal("wrong queues left")
	}
	if _, err := os.Stat(filepath.Join(cfg.consumeQueueDir(), "OLD")); !os.IsNotExist(err) {
		t.Fatalf("OLD's directory: %v", err)
	}
	// A new message starts the queue again, as in Java.
	if r := mustPut(t, s, newMsg("OLD", 0, "again", nil)); r.QueueOffset != 0 {
		t.Fatalf("queue offset after the clean: %d", r.QueueOffset)
	}
}
