package broker

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openrmq/rocketmq-operator/broker/metadata"
	"github.com/openrmq/rocketmq-operator/pkg/atomicfile"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// TestGarbageMetadataStartsFromBackups writes garbage over topics.json,
// subscriptionGroup.json and consumerOffset.json of a stopped broker whose
// .bak copies are good: the broker starts from the backups, logs a WARN
// naming each file and what was wrong, and keeps each damaged file aside
// unchanged.
func TestGarbageMetadataStartsFromBackups(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, nil)
	tb.createTopic("Kept", 2)
	tb.commitOffset("g", "Kept", 1, 5)
	tb.invoke(remoting.PullMessage, pullFields("g", "Kept", 0, 0, pullSubscription, "*"), nil) // creates group g
	tb.stop()
	// A second run writes the files again, so that each .bak holds the state above.
	startBroker(t, dir, nil).stop()

	cfgDir := metadata.ConfigDir(dir)
	files := []string{metadata.TopicsFile, metadata.SubscriptionGroupFile, metadata.ConsumerOffsetFile}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(cfgDir, f+atomicfile.BackupSuffix)); err != nil {
			t.Fatalf("no backup of %s: %v", f, err)
		}
		if err := os.WriteFile(filepath.Join(cfgDir, f), []byte("\x00\x17garbage{"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	var logs bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	tb = startBroker(t, dir, nil)
	slog.SetDefault(old)

	for _, f := range files {
		path := filepath.Join(cfgDir, f)
		var line string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "level=WARN") && strings.Contains(l, "file="+path+" ") {
				line = l
			}
		}
		if line == "" || !strings.Contains(line, "reason=") || !strings.Contains(line, "kept="+path+atomicfile.CorruptSuffix) {
			t.Fatalf("no WARN naming %s, its damage and the kept copy; log:\n%s", path, logs.String())
		}
		kept, _ := filepath.Glob(path + atomicfile.CorruptSuffix + "*")
		if len(kept) != 1 {
			t.Fatalf("kept copies of %s: %v", f, kept)
		}
		if b, _ := os.ReadFile(kept[0]); string(b) != "\x00\x17garbage{" {
			t.Fatalf("kept copy of %s holds %q", f, b)
		}
	}
	if _, ok := tb.topics.Get("Kept"); !ok {
		t.Fatal("topic Kept lost: the backup was not used")
	}
	if _, ok := tb.groups.Get("g"); !ok {
		t.Fatal("group g lost: the backup was not used")
	}
	if got := tb.offsets.Query("g", "Kept", 1); got != 5 {
		t.Fatalf("offset of g in Kept/1 is %d, want 5 from the backup", got)
	}
}
