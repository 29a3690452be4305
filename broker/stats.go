package broker

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// stats counts messages put and transferred for GET_BROKER_RUNTIME_INFO, and keeps
// the named counters of VIEW_BROKER_STATS_DATA (items).
type stats struct {
	put, got atomic.Int64 // since start

	items sync.Map // statsKey -> *statsItem

	mu sync.Mutex
	// the last hour and day samples of the items; the first are at start, as Java's
	// schedules begin then
	hourAt, dayAt  time.Time
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
	return &stats{lastAt: now, dayStart: midnight(now), hourAt: now, dayAt: now}
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
	s.sampleItems(now)
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

// Names of the VIEW_BROKER_STATS_DATA counters the broker keeps (Java's
// BrokerStatsManager); the keys are a topic, and topic@group.
const (
	statsTopicPutNums = "TOPIC_PUT_NUMS"
	statsTopicPutSize = "TOPIC_PUT_SIZE"
	statsGroupGetNums = "GROUP_GET_NUMS"
	statsGroupGetSize = "GROUP_GET_SIZE"
)

// topicPut counts a stored send of msgs messages (one call) as Java's send processor
// does: under the topic stored, so delayed messages count in SCHEDULE_TOPIC_XXXX.
func (s *stats) topicPut(topic string, msgs, bytes int) {
	s.put.Add(int64(msgs))
	s.item(statsTopicPutNums, topic).add(int64(msgs))
	s.item(statsTopicPutSize, topic).add(int64(bytes))
}

// groupGet counts a pull that found msgs messages, as Java's pull processor does.
func (s *stats) groupGet(group, topic string, msgs, bytes int) {
	s.got.Add(int64(msgs))
	key := groupGetKey(topic, group)
	s.item(statsGroupGetNums, key).add(int64(msgs))
	s.item(statsGroupGetSize, key).add(int64(bytes))
}

type statsKey struct{ name, key string }

// callSnapshot is a counter's state at one sample.
type callSnapshot struct {
	at           time.Time
	times, value int64
}

// statsItem is one named counter (Java's StatsItem): value is the count, times the
// number of increments; minute, hour and day hold the samples of the last minute (every
// 10 s), hour (every 10 min) and day (every hour).
type statsItem struct {
	value, times atomic.Int64

	mu                sync.Mutex
	minute, hour, day []callSnapshot
}

// item returns the counter name/key, created on first use as Java's are.
func (s *stats) item(name, key string) *statsItem {
	k := statsKey{name, key}
	if it, ok := s.items.Load(k); ok {
		return it.(*statsItem)
	}
	it, _ := s.items.LoadOrStore(k, &statsItem{})
	return it.(*statsItem)
}

// lookup returns the counter name/key if anything was ever counted in it.
func (s *stats) lookup(name, key string) (*statsItem, bool) {
	it, ok := s.items.Load(statsKey{name, key})
	if !ok {
		return nil, false
	}
	return it.(*statsItem), true
}

func (it *statsItem) add(n int64) {
	it.value.Add(n)
	it.times.Add(1)
}

// sampleItems takes the minute samples, and the hour and day samples when due; s.mu is
// held.
func (s *stats) sampleItems(now time.Time) {
	hour := now.Sub(s.hourAt) >= 10*time.Minute
	day := now.Sub(s.dayAt) >= time.Hour
	if hour {
		s.hourAt = now
	}
	if day {
		s.dayAt = now
	}
	s.items.Range(func(_, v any) bool {
		it := v.(*statsItem)
		cs := callSnapshot{at: now, times: it.times.Load(), value: it.value.Load()}
		it.mu.Lock()
		it.minute = appendSnapshot(it.minute, cs, 10*time.Second, 7)
		if hour {
			it.hour = appendSnapshot(it.hour, cs, 10*time.Minute, 7)
		}
		if day {
			it.day = appendSnapshot(it.day, cs, time.Hour, 25)
		}
		it.mu.Unlock()
		return true
	})
}

// appendSnapshot adds cs to list, keeping the last keep; a first sample is preceded by a
// zero one a period earlier, so that a new counter's first count shows at once (as Java).
func appendSnapshot(list []callSnapshot, cs callSnapshot, period time.Duration, keep int) []callSnapshot {
	if len(list) == 0 {
		list = append(list, callSnapshot{at: cs.at.Add(-period)})
	}
	list = append(list, cs)
	if len(list) > keep {
		list = append(list[:0], list[len(list)-keep:]...)
	}
	return list
}

// window summarizes samples as Java's StatsItem.computeStatsData: the count between the
// first and the last, per second, and per increment.
func window(list []callSnapshot) protocol.BrokerStatsItem {
	var w protocol.BrokerStatsItem
	if len(list) < 2 {
		return w
	}
	first, last := list[0], list[len(list)-1]
	w.Sum = last.value - first.value
	if ms := last.at.Sub(first.at).Milliseconds(); ms > 0 {
		w.Tps = float64(w.Sum) * 1000 / float64(ms)
	}
	if n := last.times - first.times; n > 0 {
		w.Avgpt = float64(w.Sum) / float64(n)
	}
	return w
}

// data returns the counter's minute, hour and day windows.
func (it *statsItem) data() protocol.BrokerStatsData {
	it.mu.Lock()
	defer it.mu.Unlock()
	return protocol.BrokerStatsData{StatsMinute: window(it.minute), StatsHour: window(it.hour), StatsDay: window(it.day)}
}

// minuteTps is the counter's rate over the last minute, 0 for one never counted.
func (s *stats) minuteTps(name, key string) float64 {
	it, ok := s.lookup(name, key)
	if !ok {
		return 0
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	return window(it.minute).Tps
}
