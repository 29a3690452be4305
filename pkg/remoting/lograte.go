package remoting

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// logEvent is something a peer can make happen as often as it likes: the first time
// from an address it is logged, after that it is counted for a minute (see logLimiter).
type logEvent struct {
	level  slog.Level
	msg    string // the line logged the first time
	plural string // what the summary counts
	kind   ConnEvent
}

var (
	evMalformed    = &logEvent{slog.LevelWarn, "closing connection after a malformed frame", "malformed frames", EventMalformed}
	evOversized    = &logEvent{slog.LevelWarn, "closing connection after a malformed frame", "malformed frames", EventOversized}
	evFrameTimeout = &logEvent{slog.LevelWarn, "closing connection: frame not received in time", "frame timeouts", EventFrameTimeout}
	evIdle         = &logEvent{slog.LevelInfo, "closing idle connection", "idle timeouts", EventIdle}
	evUnread       = &logEvent{slog.LevelWarn, "closing connection whose peer does not read", "closes for unread data", EventUnread}
	evRefused      = &logEvent{slog.LevelWarn, "refusing connection", "refused connections", EventRefused}

	evPlainRefused     = &logEvent{slog.LevelWarn, "refusing plain-text connection: tls.server.mode is enforcing", "plain-text connections refused", EventPlainRefused}
	evTLSRefused       = &logEvent{slog.LevelWarn, "refusing TLS connection: tls.server.mode is disabled", "TLS connections refused", EventTLSRefused}
	evHandshakeFailed  = &logEvent{slog.LevelWarn, "closing connection: TLS handshake failed", "failed TLS handshakes", EventHandshakeFailed}
	evHandshakeTimeout = &logEvent{slog.LevelWarn, "closing connection: TLS handshake not finished in time", "TLS handshake timeouts", EventHandshakeTimeout}
)

// ConnEvent is a kind of connection a server closed or refused for misbehaving.
type ConnEvent int

// Connection events, as ServerStats counts them.
const (
	EventMalformed        ConnEvent = iota // a frame or header that does not decode
	EventOversized                         // a frame longer than the server's maximum
	EventFrameTimeout                      // a frame not whole in time (serverFrameReadTimeoutMillis)
	EventIdle                              // nothing received for serverChannelMaxIdleTimeSeconds
	EventUnread                            // a peer that does not read its replies
	EventRefused                           // a connection over the connection limits
	EventPlainRefused                      // plain text under tls.server.mode=enforcing
	EventTLSRefused                        // a TLS ClientHello under tls.server.mode=disabled
	EventHandshakeFailed                   // a TLS handshake that failed
	EventHandshakeTimeout                  // a TLS handshake not finished in time
	numConnEvents
)

// Name is the event's label value in metrics.
func (e ConnEvent) Name() string {
	return [...]string{"malformed", "oversized", "frame_timeout", "idle", "unread", "refused",
		"plain_refused", "tls_refused", "tls_handshake_failed", "tls_handshake_timeout"}[e]
}

// ConnEvents lists every ConnEvent.
func ConnEvents() []ConnEvent {
	out := make([]ConnEvent, numConnEvents)
	for i := range out {
		out[i] = ConnEvent(i)
	}
	return out
}

// eventCounts counts a server's connection events.
type eventCounts [numConnEvents]atomic.Int64

const (
	logWindow = time.Minute
	// maxLogKeys bounds the addresses tracked at once; events from further addresses
	// are counted together under otherAddresses.
	maxLogKeys     = 4096
	otherAddresses = "other addresses"
)

// logLimiter rate-limits logEvents per remote address: one line when an event first
// happens from an address, then the count of the rest once the minute is over
// ("remoting: 37 more malformed frames from 10.0.0.1 in the last minute"). A hostile
// peer thus costs two lines a minute, not one per connection. A nil limiter logs
// every event.
type logLimiter struct {
	log *slog.Logger     // for the summaries
	now func() time.Time // injected by tests

	mu   sync.Mutex
	seen map[logKey]*logCount
}

type logKey struct {
	ev   *logEvent
	addr string
}

type logCount struct {
	since time.Time // when the event was logged
	more  int       // counted since
}

func newLogLimiter(log *slog.Logger, now func() time.Time) *logLimiter {
	return &logLimiter{log: log, now: now, seen: make(map[logKey]*logCount)}
}

// event logs ev on log with args when it is the first from addr this minute, and
// counts it otherwise.
func (l *logLimiter) event(ev *logEvent, addr string, log *slog.Logger, args ...any) {
	if l != nil && !l.first(ev, addr) {
		return
	}
	log.Log(context.Background(), ev.level, ev.msg, args...)
}

func (l *logLimiter) first(ev *logEvent, addr string) bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	k := logKey{ev, addr}
	if _, ok := l.seen[k]; !ok && len(l.seen) >= maxLogKeys {
		k.addr = otherAddresses
	}
	if c, ok := l.seen[k]; ok && now.Sub(c.since) < logWindow {
		c.more++
		return false
	} else if ok {
		l.summarizeLocked(k, c)
	}
	l.seen[k] = &logCount{since: now}
	return true
}

// flush logs the counts of the minutes that are over and forgets them. The server
// calls it every few seconds, so a count is logged even when the events stop.
func (l *logLimiter) flush() {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, c := range l.seen {
		if now.Sub(c.since) >= logWindow {
			l.summarizeLocked(k, c)
			delete(l.seen, k)
		}
	}
}

func (l *logLimiter) summarizeLocked(k logKey, c *logCount) {
	if c.more > 0 {
		l.log.Log(context.Background(), k.ev.level,
			fmt.Sprintf("remoting: %d more %s from %s in the last minute", c.more, k.ev.plural, k.addr))
	}
}
