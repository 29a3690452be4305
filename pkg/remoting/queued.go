package remoting

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// ErrSlowPeer is why a connection whose peer does not read what it is sent was closed.
var ErrSlowPeer = errors.New("remoting: peer does not read")

// queued counts the bytes waiting to be written on every Conn of the process, so that
// peers that do not read cannot, between them, queue without bound: a send that would
// take the count past its connection's limit closes the connection with the most bytes
// queued (see take). Invariant: bytes is the sum of every open Conn's unsent plus the
// frames between take and their queueing, and stays at most the limit in force,
// unless one frame alone is larger.
var queued = queueBudget{conns: make(map[*Conn]struct{})}

type queueBudget struct {
	bytes atomic.Int64
	peak  atomic.Int64 // the most bytes counted at once, for tests

	evictMu sync.Mutex // one eviction at a time: concurrent senders close one conn, not one each
	mu      sync.Mutex // guards conns
	conns   map[*Conn]struct{}
}

// QueuedBytes returns the bytes queued for writing on all connections of the process.
func QueuedBytes() int64 { return queued.bytes.Load() }

// defaultMaxQueuedBytesTotal is DefaultMaxQueuedBytesTotal, or a quarter of the Go
// soft memory limit (cmd/broker sets half the memory) when that is lower: replies
// nobody reads must not be what runs the process out of memory.
func defaultMaxQueuedBytesTotal() int64 {
	return min(DefaultMaxQueuedBytesTotal, debug.SetMemoryLimit(-1)/4)
}

func (q *queueBudget) register(c *Conn) {
	q.mu.Lock()
	q.conns[c] = struct{}{}
	q.mu.Unlock()
}

func (q *queueBudget) unregister(c *Conn) {
	q.mu.Lock()
	delete(q.conns, c)
	q.mu.Unlock()
}

// take counts n bytes for c, a frame about to be queued, keeping the total within
// limit. When it would not fit, it closes the connections with the most bytes queued,
// one after the other, until it does; if that is c, or nothing else is left to close,
// c is closed and take reports false.
func (q *queueBudget) take(c *Conn, n, limit int64) bool {
	if q.tryTake(n, limit) {
		return true
	}
	q.evictMu.Lock()
	defer q.evictMu.Unlock()
	for !q.tryTake(n, limit) {
		victim := q.largest()
		if victim == nil {
			victim = c
		}
		victim.closeSlow("the process's queued bytes are at their limit", limit)
		if victim == c {
			return false
		}
	}
	return true
}

// tryTake counts n bytes if they fit under limit; a lone frame always fits.
func (q *queueBudget) tryTake(n, limit int64) bool {
	for {
		cur := q.bytes.Load()
		if cur > 0 && cur+n > limit {
			return false
		}
		if q.bytes.CompareAndSwap(cur, cur+n) {
			// Raise the peak, unless a concurrent take raised it higher.
			for p := q.peak.Load(); cur+n > p && !q.peak.CompareAndSwap(p, cur+n); p = q.peak.Load() {
			}
			return true
		}
	}
}

func (q *queueBudget) give(n int64) {
	if n != 0 {
		q.bytes.Add(-n)
	}
}

// largest returns the open connection with the most bytes queued, nil when none has any.
func (q *queueBudget) largest() *Conn {
	q.mu.Lock()
	defer q.mu.Unlock()
	var most *Conn
	var mostBytes int64
	for c := range q.conns {
		if n := c.unsent.Load(); n > mostBytes {
			most, mostBytes = c, n
		}
	}
	return most
}

// closeSlow closes c because its peer does not read, logging why.
func (c *Conn) closeSlow(why string, limit int64) {
	if c.Err() != nil {
		return
	}
	queuedBytes := c.unsent.Load()
	c.event(evUnread, "queued", queuedBytes, "limit", limit, "reason", why)
	c.closeWith(fmt.Errorf("%w: %w: %d bytes queued: %s (limit %d)", ErrClosed, ErrSlowPeer, queuedBytes, why, limit))
}
