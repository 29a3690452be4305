package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// hostileTopics are names a client or a damaged file may carry; none is a topic.
var hostileTopics = []string{"../../sentinel", "../sentinel", "/tmp/abs", "a/b", "..", ".", "a\x00b", "%RETRY%../x", ""}

// TestNamesNeverLeaveTheStore: no put, delete, dispatched record or directory found at
// start turns an illegal topic name into a path, and the legal ones around it are served.
func TestNamesNeverLeaveTheStore(t *testing.T) {
	parent := t.TempDir()
	sentinel := filepath.Join(parent, "sentinel")
	if err := os.Mkdir(sentinel, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.StorePathRootDir = filepath.Join(parent, "store")
	s := mustOpen(t, cfg)
	defer func() { s.Close() }()
	mustPut(t, s, newMsg("Legal", 0, "kept", nil))

	for _, topic := range hostileTopics {
		if _, err := s.PutMessage(newMsg(topic, 0, "x", nil)); !errors.Is(err, ErrBadMessage) {
			t.Errorf("put to %q: %v, want ErrBadMessage", topic, err)
		}
		if err := s.DeleteTopic(topic); !errors.Is(err, ErrBadTopic) {
			t.Errorf("DeleteTopic(%q): %v, want ErrBadTopic", topic, err)
		}
	}
	if _, err := s.PutMessage(newMsg("Legal", -1, "x", nil)); !errors.Is(err, ErrBadMessage) {
		t.Errorf("put to queue -1: %v", err)
	}

	// A replicated record with an illegal topic: not queued, and dispatch goes on.
	master := mustOpen(t, testConfig(t))
	defer master.Close()
	mustPut(t, master, newMsg("Legal", 0, "kept", nil)) // the same bytes as the slave's first record
	mustPut(t, master, newMsg("AAAAAAAAAAAAAA", 0, "hostile", nil))
	mustPut(t, master, newMsg("Legal", 0, "after", nil))
	data, release := master.ReadRaw(s.CommitLogMaxOffset(), 1<<20)
	raw := bytes.Clone(data)
	release()
	i := bytes.Index(raw, []byte("AAAAAAAAAAAAAA"))
	copy(raw[i:], "../../sentinel")
	if err := s.AppendRaw(s.CommitLogMaxOffset(), raw); err != nil {
		t.Fatal(err)
	}
	waitDispatched(t, s)
	if got := readAll(t, s, "Legal", 0); len(got) != 2 || string(got[1].Body) != "after" {
		t.Fatalf("legal queue after the hostile record: %d messages", len(got))
	}
	if s.unqueueable.Load() != 1 {
		t.Fatalf("%d records skipped, want 1", s.unqueueable.Load())
	}

	// A directory under consumequeue that no topic can name is left alone at start.
	odd := filepath.Join(cfg.consumeQueueDir(), "not.a.topic", "0")
	if err := os.MkdirAll(odd, 0o755); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = mustOpen(t, cfg)
	if _, err := os.Stat(odd); err != nil {
		t.Fatalf("odd directory: %v", err)
	}
	if got := readAll(t, s, "Legal", 0); len(got) != 2 {
		t.Fatalf("after reopen: %d messages", len(got))
	}
	if _, err := os.Stat(sentinel); err != nil {
		t.Fatalf("sentinel beside the store: %v", err)
	}
	ents, _ := os.ReadDir(parent)
	if len(ents) != 2 {
		t.Fatalf("the store's parent holds %d entries, want store and sentinel", len(ents))
	}
}

func TestQueueDir(t *testing.T) {
	cfg := Config{StorePathRootDir: "/data/store"}
	if dir, err := cfg.queueDir("%RETRY%g", 3); err != nil || dir != "/data/store/consumequeue/%RETRY%g/3" {
		t.Fatalf("queueDir = %q, %v", dir, err)
	}
	for _, topic := range hostileTopics {
		if dir, err := cfg.queueDir(topic, 0); !errors.Is(err, ErrBadTopic) {
			t.Errorf("queueDir(%q) = %q, %v", topic, dir, err)
		}
	}
	if _, err := cfg.queueDir("T", -1); !errors.Is(err, ErrBadTopic) {
		t.Error("negative queue id accepted")
	}
}
