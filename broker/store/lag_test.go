package store

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkDispatchLagUnderLoad appends 1 KiB messages from 4 writers at
// full speed and reports, over every message, the worst time from the
// append's return to its arrival callback (worst-lag-ms). A flush or a new
// index file holding the dispatcher back shows here as tens of ms.
func BenchmarkDispatchLagUnderLoad(b *testing.B) {
	for b.Loop() {
		b.ReportMetric(float64(dispatchLag(b).Microseconds())/1000, "worst-lag-ms")
	}
}

func dispatchLag(t testing.TB) time.Duration {
	cfg := testConfig(t)
	cfg.MappedFileSizeCommitLog = 64 << 20
	cfg.MappedFileSizeConsumeQueue = 100000 * CQEntrySize
	cfg.MaxHashSlotNum, cfg.MaxIndexNum = 100000, 400000
	s := mustOpen(t, cfg)
	defer s.Close()
	const writers, per = 4, 10000
	var acked [writers][per]atomic.Int64 // ns timestamps of acknowledgement
	var worst atomic.Int64
	s.OnArrival(func(a *Arrival) {
		now := time.Now().UnixNano()
		for {
			at := acked[a.QueueID][a.QueueOffset].Load()
			if at != 0 {
				if d := now - at; d > worst.Load() {
					worst.Store(d)
				}
				return
			}
			// Arrived before the writer recorded its ack: no lag.
			if acked[a.QueueID][a.QueueOffset].CompareAndSwap(0, -1) {
				return
			}
		}
	})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := benchMsg(int32(w))
			for i := range per {
				if _, err := s.PutMessage(m); err != nil {
					t.Error(err)
					return
				}
				acked[w][i].CompareAndSwap(0, time.Now().UnixNano())
			}
		}()
	}
	wg.Wait()
	waitDispatched(t, s)
	return time.Duration(worst.Load())
}
