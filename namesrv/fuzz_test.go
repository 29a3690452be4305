package namesrv

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// FuzzKVConfig loads arbitrary kvConfig.json files (Java's
// KVConfigSerializeWrapper). What loads must answer every lookup, take a
// put, and come back the same after persisting and reloading.
func FuzzKVConfig(f *testing.F) {
	for _, s := range []string{
		`{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicA":"broker-a:4"}}}`, `{"configTable":{"NS":null}}`,
		`{"configTable":null}`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "kvConfig.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, _, err := openKVStore(path)
		if err != nil {
			return
		}
		for ns, kv := range s.table {
			if b := s.namespaceJSON(ns); kv != nil {
				var got protocol.KVTable
				if err := protocol.Decode(b, &got); err != nil || len(got.Table) != len(kv) {
					t.Fatalf("namespace %q: %s (%v), table has %d keys", ns, b, err, len(kv))
				}
			}
			for k, v := range kv {
				if got, ok := s.get(ns, k); !ok || got != v {
					t.Fatalf("get(%q, %q) = %q, %v; table has %q", ns, k, got, ok, v)
				}
			}
		}
		for ns := range s.table {
			if err := s.put(ns, "fuzz", "v"); err != nil { // a null namespace must take a put
				t.Fatal(err)
			}
		}
		if err := s.put(protocol.NamespaceOrderTopicConfig, "fuzz", "v"); err != nil {
			t.Fatal(err)
		}
		again, _, err := openKVStore(path)
		if err != nil {
			t.Fatalf("reloading what persist wrote: %v", err)
		}
		if !reflect.DeepEqual(again.table, s.table) {
			t.Fatalf("reload differs:\n%v\n%v", s.table, again.table)
		}
	})
}
