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
// of MiB of garbage. So the soft memory limit follows the live heap: twice the live
// heap (Go's default GOGC=100) plus the memory outside the heap, never below floor nor
// above ceiling (tuneGC's limit). While five times the live heap stays below floor,
// nothing changes; above, the GC runs as often as Go's default would, never more,
// since the limit rises with the live heap.
type gcHeadroom struct {
	floor, ceiling int64
}

// headroomFloor: five times the live heap of a broker under ordinary load (under
// 10 MiB) stays below it, so GOGC=400 rules there; it is issue 19's memory budget.
const headroomFloor = 64 << 20

// headroomInterval: how often the limit follows the live heap. Until it does, a jump
// in live heap costs GC cycles, bounded by the runtime's cap on GC CPU under a limit.
const headroomInterval = 250 * time.Millisecond

// limit is the soft memory limit for a live heap of live bytes and other bytes of
// memory outside the heap (stacks, runtime structures).
func (h gcHeadroom) limit(live, other int64) int64 {
	return min(h.ceiling, max(h.floor, 2*live+other))
}

// run sets the limit every headroomInterval, for the life of the process.
func (h gcHeadroom) run() {
	samples := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	tick := time.NewTicker(headroomInterval)
	defer tick.Stop()
	for {
		metrics.Read(samples)
		v := func(i int) int64 { return int64(samples[i].Value.Uint64()) }
		live := v(0)
		other := v(1) - v(2) - v(3) - v(4) - v(5)
		debug.SetMemoryLimit(h.limit(live, max(other, 0)))
		<-tick.C
	}
}
