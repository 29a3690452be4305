package metadata

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// fuzzDir writes data as dir/name and returns dir.
func fuzzDir(t *testing.T, name string, data []byte) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// FuzzLoadTopics loads arbitrary topics.json files (fastjson's bare keys
// included). Loading may fail, but what loads must be usable (every entry
// readable through Get and Snapshot) and survive Persist and a reload.
func FuzzLoadTopics(f *testing.F) {
	for _, s := range []string{javaTopics, `{"topicConfigTable":{0:{"topicName":"x"}}}`, `{}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := fuzzDir(t, TopicsFile, data)
		topics, err := LoadTopics(dir, opts())
		if err != nil {
			return
		}
		snap := topics.Snapshot()
		for name, tc := range snap.TopicConfigTable {
			if got, ok := topics.Get(name); !ok || tc == nil || got != *tc {
				t.Fatalf("topic %q: Get = %+v, %v; Snapshot has %+v", name, got, ok, tc)
			}
		}
		if err := topics.Persist(); err != nil {
			t.Fatal(err)
		}
		again, err := LoadTopics(dir, opts())
		if err != nil {
			t.Fatalf("reloading what Persist wrote: %v", err)
		}
		if !reflect.DeepEqual(again.Snapshot(), snap) {
			t.Fatalf("reload differs:\n%+v\n%+v", snap, again.Snapshot())
		}
	})
}

// FuzzLoadGroups does the same for subscriptionGroup.json.
func FuzzLoadGroups(f *testing.F) {
	for _, s := range []string{javaGroups, `{"subscriptionGroupTable":{"g":{}}}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := fuzzDir(t, SubscriptionGroupFile, data)
		groups, err := LoadGroups(dir)
		if err != nil {
			return
		}
		for _, name := range groups.Names() {
			if _, ok := groups.Get(name); !ok {
				t.Fatalf("group %q listed but not found", name)
			}
		}
		enc := groups.Encode()
		if err := groups.Persist(); err != nil {
			t.Fatal(err)
		}
		again, err := LoadGroups(dir)
		if err != nil {
			t.Fatalf("reloading what Persist wrote: %v", err)
		}
		if got := again.Encode(); !bytes.Equal(got, enc) {
			t.Fatalf("reload differs:\n%s\n%s", enc, got)
		}
	})
}

// FuzzLoadOffsets does the same for consumerOffset.json, whose queue ids
// Java writes as bare integer keys.
func FuzzLoadOffsets(f *testing.F) {
	for _, s := range []string{javaOffsets, `{"offsetTable":{"t@g":{"1":2}}}`, `{"offsetTable":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := fuzzDir(t, ConsumerOffsetFile, data)
		offsets, err := LoadOffsets(dir)
		if err != nil {
			return
		}
		for k, qs := range offsets.table {
			topic, group, ok := splitKey(k)
			for q, off := range qs {
				if got := offsets.Query(group, topic, q); ok && got != off {
					t.Fatalf("Query(%q, %q, %d) = %d, table has %d", group, topic, q, got, off)
				}
			}
		}
		offsets.Commit("g", "t", 0, 1) // a null queue table must take a commit
		enc := offsets.Encode()
		if err := offsets.Persist(true); err != nil {
			t.Fatal(err)
		}
		again, err := LoadOffsets(dir)
		if err != nil {
			t.Fatalf("reloading what Persist wrote: %v", err)
		}
		if got := again.Encode(); !bytes.Equal(got, enc) || again.Query("g", "t", 0) != 1 {
			t.Fatalf("reload differs:\n%s\n%s", enc, got)
		}
	})
}
