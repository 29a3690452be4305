package remoting

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/internal/testlog"
)

func containsN(s, substr string, n int) bool { return strings.Count(s, substr) == n }

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func testLimiter() (*logLimiter, *fakeClock, *testlog.Buffer, *slog.Logger) {
	logs := &testlog.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return newLogLimiter(log, clock.now), clock, logs, log
}

func TestLogLimiterLogsFirstAndCountsTheRest(t *testing.T) {
	l, clock, logs, log := testLimiter()
	for range 38 {
		l.event(evMalformed, "10.0.0.1", log, "err", "bad")
		clock.t = clock.t.Add(time.Second)
	}
	l.event(evMalformed, "10.0.0.2", log) // another address: its own first line
	l.event(evIdle, "10.0.0.1", log)      // another event: likewise
	if got := logs.String(); !containsN(got, evMalformed.msg, 2) || !containsN(got, evIdle.msg, 1) || strings.Contains(got, "more") {
		t.Fatalf("before the minute is over:\n%s", got)
	}

	clock.t = clock.t.Add(logWindow - 38*time.Second - time.Nanosecond)
	l.flush() // a nanosecond short of 10.0.0.1's minute
	if got := logs.String(); strings.Contains(got, "more") {
		t.Fatalf("count logged before the minute was over:\n%s", got)
	}
	clock.t = clock.t.Add(time.Nanosecond)
	l.flush()
	got := logs.String()
	if !containsN(got, "remoting: 37 more malformed frames from 10.0.0.1 in the last minute", 1) || strings.Count(got, "more") != 1 {
		t.Fatalf("after 10.0.0.1's minute, want its count only (the others have none):\n%s", got)
	}

	l.event(evMalformed, "10.0.0.1", log) // a new minute begins with a line again
	if got := logs.String(); !containsN(got, evMalformed.msg, 3) {
		t.Fatalf("first event of a new minute not logged:\n%s", got)
	}
}

// Events that go on past the minute get their count logged by the next one, flush or not.
func TestLogLimiterCountsWithoutFlush(t *testing.T) {
	l, clock, logs, log := testLimiter()
	for range 3 {
		l.event(evRefused, "10.0.0.1", log)
	}
	clock.t = clock.t.Add(logWindow)
	l.event(evRefused, "10.0.0.1", log)
	if got := logs.String(); !containsN(got, "remoting: 2 more refused connections from 10.0.0.1 in the last minute", 1) || !containsN(got, evRefused.msg, 2) {
		t.Fatalf("logs:\n%s", got)
	}
}

// Past maxLogKeys addresses, further ones share one count: a peer with many addresses
// cannot grow the limiter's memory either.
func TestLogLimiterBoundsAddresses(t *testing.T) {
	l, clock, logs, log := testLimiter()
	for i := range maxLogKeys + 10 {
		l.event(evMalformed, fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), log)
	}
	if n := len(l.seen); n != maxLogKeys+1 {
		t.Errorf("%d addresses tracked, want %d and one for the rest", n, maxLogKeys+1)
	}
	clock.t = clock.t.Add(logWindow)
	l.flush()
	if got := logs.String(); !containsN(got, evMalformed.msg, maxLogKeys+1) || !strings.Contains(got, "remoting: 9 more malformed frames from other addresses") {
		t.Fatalf("logs end:\n%s", got[max(0, len(got)-500):])
	}
	if len(l.seen) != 0 {
		t.Errorf("%d entries left after their minute", len(l.seen))
	}
}

func TestNilLogLimiterLogsEverything(t *testing.T) {
	logs := &testlog.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	var l *logLimiter
	for range 3 {
		l.event(evMalformed, "10.0.0.1", log)
	}
	if got := logs.String(); !containsN(got, evMalformed.msg, 3) {
		t.Fatalf("logs:\n%s", got)
	}
}
