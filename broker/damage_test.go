package broker

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/openrmq/rocketmq-operator/broker/metadata"
	"github.com/openrmq/rocketmq-operator/pkg/atomicfile"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
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

// TestPullSkipsDamagedRecords damages the bodies of messages 2 and 4 of 5
// on disk while the broker is stopped (a clean stop: nothing is scanned at
// start): a pull from 0 gets 0, 1 and 3 (next begin offset 5), a pull at 4
// is answered PULL_RETRY_IMMEDIATELY with next begin offset 5, as Java
// answers for a removed message, lookups by offset refuse both, and the
// runtime info counts the refusals.
func TestPullSkipsDamagedRecords(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, nil)
	tb.createTopic("DP", 1)
	for i := range 5 {
		if resp := tb.sendV2("DP", 0, "t", "body-"+strconv.Itoa(i)); resp.Code != remoting.Success {
			t.Fatalf("send %d: %v", i, resp)
		}
	}
	waitFor(t, func() bool { return tb.store.MaxOffsetInQueue("DP", 0) == 5 })
	entries, _, _, _ := tb.store.ConsumeQueueEntries("DP", 0, 0, 5)
	tb.stop()
	seg, err := os.OpenFile(filepath.Join(dir, "commitlog", "00000000000000000000"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{2, 4} {
		rec := make([]byte, entries[i].Size)
		seg.ReadAt(rec, entries[i].PhyOffset)
		at := bytes.Index(rec, []byte("body-"+strconv.Itoa(i)))
		seg.WriteAt([]byte{'B'}, entries[i].PhyOffset+int64(at))
	}
	seg.Close()

	tb = startBroker(t, dir, nil)
	resp := tb.invoke(remoting.PullMessage, pullFields("g", "DP", 0, 0, pullSubscription, "*"), nil)
	var got []string
	for _, m := range decodeAll(t, resp.Body) { // CRC-checked
		got = append(got, string(m.Body))
	}
	if resp.Code != remoting.Success || strings.Join(got, ",") != "body-0,body-1,body-3" || resp.Field("nextBeginOffset") != "5" {
		t.Fatalf("pull from 0: code %d, %v, next %s", resp.Code, got, resp.Field("nextBeginOffset"))
	}
	resp = tb.invoke(remoting.PullMessage, pullFields("g", "DP", 0, 4, pullSubscription, "*"), nil)
	if resp.Code != remoting.PullRetryImmediately || resp.Field("nextBeginOffset") != "5" || len(resp.Body) != 0 {
		t.Fatalf("pull at the damaged last message: code %d, next %s, %d bytes", resp.Code, resp.Field("nextBeginOffset"), len(resp.Body))
	}
	for _, i := range []int{2, 4} {
		if _, err := tb.store.CopyRawMessage(entries[i].PhyOffset); err == nil {
			t.Fatalf("damaged message %d read by its offset", i)
		}
	}
	info := tb.invoke(remoting.GetBrokerRuntimeInfo, nil, nil)
	var kv struct{ Table map[string]string }
	if err := protocol.Decode(info.Body, &kv); err != nil {
		t.Fatal(err)
	}
	if kv.Table["commitLogDamagedRanges"] != "2" || kv.Table["commitLogDamagedReads"] == "0" {
		t.Fatalf("runtime info: ranges %s, reads %s", kv.Table["commitLogDamagedRanges"], kv.Table["commitLogDamagedReads"])
	}
}
