package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/cache"
)

func TestWatchedNamespaces(t *testing.T) {
	if got := watched(""); got != nil {
		t.Errorf("empty list must watch all namespaces, got %v", got)
	}
	want := map[string]cache.Config{"a": {}, "b": {}}
	if got := watched(" a, ,b "); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v", got)
	}
}

func TestOperatorNamespace(t *testing.T) {
	sa := filepath.Join(t.TempDir(), "namespace")
	if err := os.WriteFile(sa, []byte("from-sa\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "POD_NAMESPACE" {
				return v
			}
			return ""
		}
	}
	if got := operatorNamespace(env("rocketmq-system"), sa); got != "rocketmq-system" {
		t.Errorf("POD_NAMESPACE must win, got %q", got)
	}
	if got := operatorNamespace(env(""), sa); got != "from-sa" {
		t.Errorf("without POD_NAMESPACE the service account's namespace, got %q", got)
	}
	if got := operatorNamespace(env(""), filepath.Join(t.TempDir(), "missing")); got != "" {
		t.Errorf("out of cluster: empty, got %q", got)
	}
}
