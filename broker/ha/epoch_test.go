package ha

import (
	"errors"
	"testing"
)

func TestDivergence(t *testing.T) {
	for _, tc := range []struct {
		name          string
		local, master History
		end           int64
		offset        int64
		cut           bool
		stale         bool
	}{
		{name: "4.x group, no history", end: 500},
		{name: "slave behind the promoted slave", master: History{{1, 1000}}, end: 800, offset: 1000},
		{name: "old master with an unreplicated tail", master: History{{1, 1000}}, end: 1300, offset: 1000, cut: true},
		{name: "old master of epoch 1 after epoch 2", local: History{{1, 1000}}, master: History{{1, 1000}, {2, 5000}},
			end: 5600, offset: 5000, cut: true},
		{name: "slave that knows the master's epochs", local: History{{1, 1000}, {2, 5000}}, master: History{{1, 1000}, {2, 5000}}, end: 9000},
		{name: "stale master", local: History{{2, 5000}}, master: History{{1, 1000}}, end: 5000, stale: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			off, cut, err := Divergence(tc.local, tc.master, tc.end)
			if tc.stale {
				if !errors.Is(err, ErrStaleMaster) {
					t.Fatalf("err = %v, want ErrStaleMaster", err)
				}
				return
			}
			if err != nil || cut != tc.cut || (cut && off != tc.offset) {
				t.Fatalf("Divergence = %d, %v, %v; want %d, %v", off, cut, err, tc.offset, tc.cut)
			}
		})
	}
}

func TestHistoryBeginAndParse(t *testing.T) {
	h, err := History{{1, 1000}, {2, 5000}}.Begin(3, 4000)
	if err != nil {
		t.Fatal(err)
	}
	// Epoch 2 began past this broker's end: it never held a byte of it.
	if want := "1:1000,3:4000"; h.String() != want {
		t.Fatalf("Begin = %s, want %s", h, want)
	}
	if _, err := h.Begin(3, 6000); err == nil {
		t.Fatal("Begin accepted an epoch that is not above the last")
	}
	back, err := ParseHistory(h.String())
	if err != nil || back.String() != h.String() {
		t.Fatalf("ParseHistory(%q) = %v, %v", h.String(), back, err)
	}
	for _, bad := range []string{"1", "1:x", "2:10,1:20", "1:20,2:10", "-1:0"} {
		if _, err := ParseHistory(bad); err == nil {
			t.Errorf("ParseHistory(%q) accepted", bad)
		}
	}
}
