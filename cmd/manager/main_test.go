package main

import (
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
