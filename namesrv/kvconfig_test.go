package namesrv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

func TestKVConfigPersistsAcrossRestart(t *testing.T) {
	cfg := testConfig(t.TempDir())
	ns := startNameServer(t, cfg)
	cl := newClient(t)
	putKV := func(addr, namespace, k, v string) {
		mustSucceed(t, invoke(t, cl, addr, remoting.PutKVConfig, &protocol.PutKVConfigRequestHeader{Namespace: namespace, Key: k, Value: v}, nil))
	}
	putKV(ns.Addr(), "NS1", "k1", "v1")
	putKV(ns.Addr(), "NS1", "k2", "v2")
	putKV(ns.Addr(), "NS1", "k1", "v1b")
	mustSucceed(t, invoke(t, cl, ns.Addr(), remoting.DeleteKVConfig, &protocol.DeleteKVConfigRequestHeader{Namespace: "NS1", Key: "k2"}, nil))
	if _, err := os.Stat(cfg.KVConfigPath + ".bak"); err != nil {
		t.Errorf("no backup file: %v", err)
	}
	if _, err := os.Stat(cfg.KVConfigPath + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temp file left behind: %v", err)
	}

	ctx := context.Background()
	ns.Shutdown(ctx)
	ns2 := startNameServer(t, cfg)
	resp := mustSucceed(t, invoke(t, cl, ns2.Addr(), remoting.GetKVConfig, &protocol.GetKVConfigRequestHeader{Namespace: "NS1", Key: "k1"}, nil))
	if resp.Field("value") != "v1b" {
		t.Errorf("k1 after restart = %q", resp.Field("value"))
	}
	resp = invoke(t, cl, ns2.Addr(), remoting.GetKVConfig, &protocol.GetKVConfigRequestHeader{Namespace: "NS1", Key: "k2"}, nil)
	if resp.Code != remoting.QueryNotFound {
		t.Errorf("deleted k2: code %d", resp.Code)
	}
	resp = mustSucceed(t, invoke(t, cl, ns2.Addr(), remoting.GetKVListByNamespace, &protocol.GetKVListByNamespaceRequestHeader{Namespace: "NS1"}, nil))
	if string(resp.Body) != `{"table":{"k1":"v1b"}}` {
		t.Errorf("kv list = %s", resp.Body)
	}
	resp = invoke(t, cl, ns2.Addr(), remoting.GetKVListByNamespace, &protocol.GetKVListByNamespaceRequestHeader{Namespace: "none"}, nil)
	if resp.Code != remoting.QueryNotFound {
		t.Errorf("missing namespace: code %d", resp.Code)
	}
}

func TestOrderTopicConf(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		t.Run(fmt.Sprintf("orderMessageEnable=%v", enabled), func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.OrderMessageEnable = enabled
			testOrderTopicConf(t, cfg)
		})
	}
}

func testOrderTopicConf(t *testing.T, cfg Config) {
	ns := startNameServer(t, cfg)
	cl := newClient(t)
	mustSucceed(t, invoke(t, cl, ns.Addr(), remoting.PutKVConfig, &protocol.PutKVConfigRequestHeader{
		Namespace: protocol.NamespaceOrderTopicConfig, Key: "OrderT", Value: "broker-a:4"}, nil))
	resp := fakeBroker{cluster: "c", name: "broker-a", addr: "10.0.0.1:10911", topics: topics("OrderT", "Plain")}.register(t, cl, ns.Addr(), false)
	if string(resp.Body) != `{"table":{"OrderT":"broker-a:4"}}` {
		t.Errorf("register response body = %s", resp.Body)
	}
	want := ""
	if cfg.OrderMessageEnable {
		want = "broker-a:4" // Java adds it only when orderMessageEnable is on
	}
	if rd, _ := getRoute(t, cl, ns.Addr(), "OrderT"); rd.OrderTopicConf != want {
		t.Errorf("orderTopicConf = %q, want %q", rd.OrderTopicConf, want)
	}
	if _, resp := getRoute(t, cl, ns.Addr(), "Plain"); string(resp.Body) == "" || containsKey(resp.Body, "orderTopicConf") {
		t.Errorf("plain topic route = %s", resp.Body)
	}
}

func containsKey(body []byte, key string) bool {
	var m map[string]any
	if err := protocol.Decode(body, &m); err != nil {
		return false
	}
	_, ok := m[key]
	return ok
}

func TestKVStoreFallsBackToBackup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.json")
	s, _, err := openKVStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.put("ns", "a", "1"); err != nil {
		t.Fatal(err)
	}
	if err := s.put("ns", "b", "2"); err != nil {
		t.Fatal(err)
	}
	// A torn main file: the backup (the state before the last change) is loaded.
	if err := os.WriteFile(path, []byte(`{"configTable":{"ns":{"a":`), 0o644); err != nil {
		t.Fatal(err)
	}
	s2, warnings, err := openKVStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s2.get("ns", "a"); v != "1" || len(warnings) != 1 {
		t.Errorf("after fallback a=%q warnings=%v", v, warnings)
	}
	os.WriteFile(path+".bak", []byte("garbage"), 0o644)
	if _, _, err := openKVStore(path); err == nil {
		t.Error("both files corrupt: no error")
	}
}
