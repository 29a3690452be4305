package main

import (
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

// headroomInterval: how often GOGC follows the live heap.
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

// run sets GOGC every headroomInterval, for the life of the process.
func (h gcHeadroom) run() {
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	tick := time.NewTicker(headroomInterval)
	defer tick.Stop()
	current := h.max
	for {
		metrics.Read(live)
		if p := h.percent(int64(live[0].Value.Uint64())); p != current {
			debug.SetGCPercent(p)
			current = p
		}
		<-tick.C
	}
}
