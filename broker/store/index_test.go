package store

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func TestIndexQuery(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxHashSlotNum = 4 // force long chains and collisions
	cfg.MaxIndexNum = 50   // and several index files
	clock := time.UnixMilli(1_700_000_000_000)
	cfg.Now = func() time.Time { return clock }
	s := mustOpen(t, cfg)
	defer func() { s.Close() }() // s is reopened below
	var offs []int64
	for i := range 60 {
		clock = clock.Add(time.Second)
		r := mustPut(t, s, newMsg("I", 0, body(i), map[string]string{
			"KEYS": fmt.Sprintf("order-%d shared", i), "UNIQ_KEY": fmt.Sprintf("U%03d", i)}))
		offs = append(offs, r.PhysicalOffset)
	}
	mustPut(t, s, newMsg("Other", 0, "o", map[string]string{"KEYS": "shared"}))
	waitDispatched(t, s)
	if n := len(s.index.files); n < 3 {
		t.Fatalf("%d index files, want >= 3 (180 entries, 49 per file)", n)
	}
	all := [2]int64{0, clock.UnixMilli() + 1000}
	if got := s.QueryMessage("I", "order-7", 10, all[0], all[1]); len(got) != 1 || got[0] != offs[7] {
		t.Fatalf("order-7: %v want %d", got, offs[7])
	}
	if got := s.QueryMessage("I", "U042", 10, all[0], all[1]); len(got) != 1 || got[0] != offs[42] {
		t.Fatalf("U042: %v", got)
	}
	got := s.QueryMessage("I", "shared", 100, all[0], all[1])
	if len(got) != 60 {
		t.Fatalf("shared: %d hits, want 60 (topic Other excluded)", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i] >= got[i-1] {
			t.Fatalf("not newest first at %d: %v", i, got[:i+1])
		}
	}
	if got := s.QueryMessage("I", "shared", 5, all[0], all[1]); len(got) != 5 || got[0] != offs[59] {
		t.Fatalf("max 5: %v", got)
	}
	// Time window: messages 10..19 were stored at base+11s..base+20s.
	base := int64(1_700_000_000_000)
	got = s.QueryMessage("I", "shared", 100, base+11000, base+20000)
	if len(got) != 10 || got[0] != offs[19] || got[9] != offs[10] {
		t.Fatalf("window: %d hits", len(got))
	}
	if got := s.QueryMessage("I", "missing", 10, all[0], all[1]); len(got) != 0 {
		t.Fatalf("missing key hits %v", got)
	}
	// Index survives a restart.
	s.Close()
	s = mustOpen(t, cfg)
	if got := s.QueryMessage("I", "order-59", 10, all[0], all[1]); len(got) != 1 || got[0] != offs[59] {
		t.Fatalf("after reopen: %v", got)
	}
}

func TestIndexTruncateRestoresChains(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxHashSlotNum = 2
	s := mustOpen(t, cfg)
	defer s.Close()
	var offs []int64
	for i := range 20 {
		offs = append(offs, mustPut(t, s, newMsg("I", 0, body(i), map[string]string{"KEYS": fmt.Sprintf("k%d", i%5)})).PhysicalOffset)
	}
	waitDispatched(t, s)
	s.index.truncate(offs[12])
	now := time.Now().UnixMilli() + 1000
	for k := range 5 {
		got := s.QueryMessage("I", fmt.Sprintf("k%d", k), 100, 0, now)
		var want []int64
		for i := 11; i >= 0; i-- {
			if i%5 == k {
				want = append(want, offs[i])
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("k%d after truncate: %v want %v", k, got, want)
		}
	}
}

// TestIndexQueryUnboundedTimeRange: mqadmin queryMsgByKey asks for
// [0, Long.MAX_VALUE]; end+slack must not wrap around and hide every file.
func TestIndexQueryUnboundedTimeRange(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxIndexNum = 8 // several files
	s := mustOpen(t, cfg)
	defer s.Close()
	var offs []int64
	for i := range 10 {
		offs = append(offs, mustPut(t, s, newMsg("I", 0, body(i), map[string]string{"KEYS": "k"})).PhysicalOffset)
	}
	waitDispatched(t, s)
	for _, r := range [][2]int64{{0, math.MaxInt64}, {math.MinInt64, math.MaxInt64}, {math.MaxInt64 - 500, math.MaxInt64}, {math.MinInt64, math.MinInt64 + 10}} {
		got := s.QueryMessage("I", "k", 100, r[0], r[1])
		want := 0
		if r[0] <= 0 && r[1] == math.MaxInt64 {
			want = len(offs)
		}
		if len(got) != want {
			t.Errorf("QueryMessage in [%d, %d]: %d hits, want %d", r[0], r[1], len(got), want)
		}
	}
	if got := s.QueryMessage("I", "k", 100, math.MaxInt64, 0); len(got) != 0 {
		t.Errorf("begin > end: %d hits", len(got))
	}
}

func TestAddSat(t *testing.T) {
	for _, c := range [][3]int64{
		{1, 2, 3}, {math.MaxInt64, 1000, math.MaxInt64}, {math.MaxInt64 - 1, 1, math.MaxInt64},
		{math.MinInt64, -1, math.MinInt64}, {math.MinInt64, 1000, math.MinInt64 + 1000}, {-5, 0, -5},
	} {
		if got := addSat(c[0], c[1]); got != c[2] {
			t.Errorf("addSat(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
}
