package main

import "testing"

// The limit leaves GOGC=400 alone while the heap is small, follows twice the live heap
// past the floor, and never passes the ceiling.
func TestGCHeadroomLimit(t *testing.T) {
	h := gcHeadroom{floor: 64 << 20, ceiling: 1 << 30}
	for _, c := range []struct {
		live, other, want int64
	}{
		{live: 5 << 20, other: 8 << 20, want: 64 << 20},          // ordinary load: the floor, above 5 x live
		{live: 40 << 20, other: 8 << 20, want: 88 << 20},         // overload: twice the live heap plus the rest
		{live: 600 << 20, other: 8 << 20, want: 1 << 30},         // never past the ceiling
		{live: 0, other: 0, want: 64 << 20},                      // before the first cycle
		{live: 28 << 20, other: 8 << 20, want: 64 << 20},         // 2 x 28 + 8 = 64: the floor still
		{live: 29 << 20, other: 8 << 20, want: (2*29 + 8) << 20}, // just past it
	} {
		if got := h.limit(c.live, c.other); got != c.want {
			t.Errorf("limit(live %d MiB, other %d MiB) = %d MiB, want %d MiB", c.live>>20, c.other>>20, got>>20, c.want>>20)
		}
	}
}
