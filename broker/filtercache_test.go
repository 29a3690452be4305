package broker

import (
	"fmt"
	"testing"

	"github.com/openrmq/rocketmq-operator/broker/filter"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// An expression is compiled once and its filter shared; errors are kept as well; the
// cache stays within its bound.
func TestFilterCacheCompilesOnce(t *testing.T) {
	var c filterCache
	f1, err := c.get(filter.TypeTag, "a || b")
	if err != nil || f1 == nil {
		t.Fatalf("tag filter: %v, %v", f1, err)
	}
	if !f1.MatchTagsCode(message.TagsCode("a")) || f1.MatchTagsCode(message.TagsCode("c")) {
		t.Fatal("tag filter matches wrongly")
	}
	if _, err := c.get(filter.TypeTag, "a || b"); err != nil || len(c.m) != 1 {
		t.Fatalf("%d entries after the same expression twice (%v)", len(c.m), err)
	}
	if f, err := c.get(filter.TypeTag, "*"); err != nil || f != nil {
		t.Fatalf("*: %v, %v", f, err)
	}
	if _, err := c.get(filter.TypeSQL92, "a >"); err == nil {
		t.Fatal("bad SQL92 compiled")
	}
	if cf, ok := c.m[filterKey{filter.TypeSQL92, "a >"}]; !ok || cf.err == nil {
		t.Fatal("compile error not kept")
	}
	for i := range filterCacheMax + 10 {
		if _, err := c.get(filter.TypeTag, fmt.Sprintf("t%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.m) > filterCacheMax {
		t.Fatalf("%d entries, bound %d", len(c.m), filterCacheMax)
	}
}
