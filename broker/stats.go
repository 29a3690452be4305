package broker

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// stats counts messages put and transferred for GET_BROKER_RUNTIME_INFO.
type stats struct {
	put, got atomic.Int64 // since start

	mu             sync.Mutex
	lastPut        int64
	lastGot        int64
	lastAt         time.Time
	putTps, getTps float64
	dayStart       time.Time
	putAtDayStart  int64
	getAtDayStart  int64
	putYesterday   int64 // put count at the start of yesterday, when known
	getYesterday   int64
}

func newStats() *stats {
	now := time.Now()
	return &stats{lastAt: now, dayStart: midnight(now)}
}

func midnight(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

// sample updates the rates; the broker calls it every 10 s.
func (s *stats) sample() {
	now := time.Now()
	put, got := s.put.Load(), s.got.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	if secs := now.Sub(s.lastAt).Seconds(); secs > 0 {
		s.putTps = float64(put-s.lastPut) / secs
		s.getTps = float64(got-s.lastGot) / secs
	}
	s.lastPut, s.lastGot, s.lastAt = put, got, now
	if m := midnight(now); m.After(s.dayStart) {
		s.putYesterday, s.getYesterday = s.putAtDayStart, s.getAtDayStart
		s.putAtDayStart, s.getAtDayStart, s.dayStart = put, got, m
	}
}

// table adds the counters in the keys Java's runtime info uses (mqadmin clusterList
// and brokerStatus parse them).
func (s *stats) table(t map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tps := func(v float64) string { return fmt.Sprintf("%.2f %.2f %.2f", v, v, v) }
	t["putTps"] = tps(s.putTps)
	t["getTransferedTps"] = tps(s.getTps)
	t["getFoundTps"] = tps(s.getTps)
	t["msgPutTotalTodayNow"] = fmt.Sprint(s.put.Load())
	t["msgGetTotalTodayNow"] = fmt.Sprint(s.got.Load())
	t["msgPutTotalTodayMorning"] = fmt.Sprint(s.putAtDayStart)
	t["msgGetTotalTodayMorning"] = fmt.Sprint(s.getAtDayStart)
	t["msgPutTotalYesterdayMorning"] = fmt.Sprint(s.putYesterday)
	t["msgGetTotalYesterdayMorning"] = fmt.Sprint(s.getYesterday)
}
