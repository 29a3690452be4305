package main

import (
	"runtime"
	"testing"
	"time"
)

// GOGC stays at its maximum while five times the live heap fits under the floor, then
// lets the heap reach the floor, then twice the live heap (GOGC=100), never less.
func TestGCHeadroomPercent(t *testing.T) {
	h := gcHeadroom{floor: 64 << 20, max: 400}
	for _, c := range []struct {
		live int64
		want int
	}{
		{live: 0, want: 400},        // before the first cycle
		{live: 5 << 20, want: 400},  // ordinary load: 25 MiB, under the floor
		{live: 16 << 20, want: 300}, // the heap may reach the floor: 64 = 16 x 4
		{live: 32 << 20, want: 100}, // twice the live heap is the floor
		{live: 40 << 20, want: 100}, // overload: twice the live heap
		{live: 1 << 30, want: 100},  // never below Go's default
	} {
		if got := h.percent(c.live); got != c.want {
			t.Errorf("percent(live %d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

// gcEnded signals after each collection, not only the first.
func TestGCEndedSignalsEachCollection(t *testing.T) {
	ended := make(chan struct{}, 1)
	gcEnded(ended)
	for i := range 3 {
		runtime.GC()
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatalf("collection %d: no signal within 10s", i+1)
		}
	}
}
