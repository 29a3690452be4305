package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// gcHeadroom bounds the garbage that GOGC=400 lets pile up once the live heap is no
// longer small. GOGC=400 lets the heap grow to five times what is live, which saves
// CPU while the live heap is a few MiB; under overload the send queues hold tens of
// MiB (sendThreadPoolQueueCapacity, MaxWaitingBytes), and five times that is hundreds
// of MiB of garbage. So GOGC follows the live heap: the heap may grow to five times
// what is live up to floor, and past it to twice (Go's default GOGC=100), never less.
// It steers GOGC, not the soft memory limit, which stays the memory budget that other
// defaults derive from (pkg/remoting's queue bounds read it).
type gcHeadroom struct {
	floor int64 // heap size up to which GOGC=max rules
	max   int   // the GOGC of a small heap (defaultGOGC)
}

// headroomFloor: five times the live heap of a broker under ordinary load (under
// 10 MiB) stays below it, so GOGC=400 rules there; it is issue 19's memory budget.
const headroomFloor = 64 << 20

// headroomInterval: how often GOGC follows the live heap between collections; it also
// follows it at the end of each (gcEnded).
const headroomInterval = 250 * time.Millisecond

// percent is the GOGC for a live heap of live bytes: the heap may reach the larger of
// floor and twice live, and no more than GOGC=max allows.
func (h gcHeadroom) percent(live int64) int {
	if live <= 0 {
		return h.max
	}
	goal := max(h.floor, 2*live)
	return int(min(int64(h.max), max(100, (goal-live)*100/live)))
}

// run sets GOGC after every collection and every headroomInterval, for the life of the
// process. After a collection: the live heap it found sets the next one's goal, and a
// flood of large requests can raise it several-fold in one cycle, which GOGC=400 would
// then let grow fivefold until the next tick (TestOverload's 256 KiB phase peaked past
// its bound that way).
func (h gcHeadroom) run() {
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	ended := make(chan struct{}, 1)
	gcEnded(ended)
	tick := time.NewTicker(headroomInterval)
	defer tick.Stop()
	current := h.max
	for {
		metrics.Read(live)
		if p := h.percent(int64(live[0].Value.Uint64())); p != current {
			debug.SetGCPercent(p)
			current = p
		}
		select {
		case <-ended:
		case <-tick.C:
		}
	}
}

// gcEnded signals ended (without blocking) after each garbage collection, for the life
// of the process: a finalizer runs once the collection that found its object
// unreachable ends, and re-arms itself on a new one.
func gcEnded(ended chan<- struct{}) {
	sentinel := new([16]byte) // not a tiny allocation, which may share a finalizer's block
	runtime.SetFinalizer(sentinel, func(*[16]byte) {
		select {
		case ended <- struct{}{}:
		default:
		}
		gcEnded(ended)
	})
}
