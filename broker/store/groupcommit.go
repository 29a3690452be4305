package store

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// groupCommit implements SYNC_FLUSH: appenders wait until the flushed
// offset covers their records; one flush goroutine runs fdatasync for
// everybody who arrived meanwhile.
type groupCommit struct {
	s    *Store
	kick chan struct{}
	mu   sync.Mutex
	done chan struct{} // closed and replaced after every flush

	inflight atomic.Int64 // appenders between entry and acknowledgement
	waiting  atomic.Int64 // appenders that appended and wait for the flush
}

func newGroupCommit(s *Store) *groupCommit {
	return &groupCommit{s: s, kick: make(chan struct{}, 1), done: make(chan struct{})}
}

// wait blocks until offset end is durable; false on SyncFlushTimeout or a
// flush error (the sticky write error then fails the next appends).
func (g *groupCommit) wait(end int64) bool {
	timer := time.NewTimer(g.s.cfg.SyncFlushTimeout)
	defer timer.Stop()
	for {
		g.mu.Lock()
		ch := g.done
		g.mu.Unlock()
		if g.s.cl.flushed.Load() >= end {
			return true
		}
		g.waiting.Add(1) // reset by broadcast: counts blocked appenders of this round
		select {
		case g.kick <- struct{}{}:
		default:
		}
		select {
		case <-ch:
		case <-timer.C:
			return g.s.cl.flushed.Load() >= end
		case <-g.s.stop:
			return g.s.cl.flushed.Load() >= end
		}
	}
}

func (g *groupCommit) run() {
	defer g.s.wg.Done()
	for {
		select {
		case <-g.s.stop:
			g.s.noteWriteErr(g.s.cl.flush())
			g.broadcast()
			return
		case <-g.kick:
		}
		g.gather()
		// The appenders waiting now have their records in the mapping (they wait only
		// after appending), so this sync covers them all.
		covered := int(g.waiting.Load())
		g.s.noteWriteErr(g.s.cl.flush())
		g.broadcast()
		if f := g.s.cfg.OnGroupCommit; f != nil && covered > 0 {
			f(covered)
		}
	}
}

// gather lets appenders that are already on their way finish their
// append before the sync starts, so one fdatasync covers them too: it
// yields until every in-flight appender waits, or the tail stops moving,
// for at most gatherMax.
func (g *groupCommit) gather() {
	const gatherMax = 200 * time.Microsecond
	deadline := time.Now().Add(gatherMax)
	last := g.s.cl.wrote.Load()
	for g.waiting.Load() < g.inflight.Load() && time.Now().Before(deadline) {
		runtime.Gosched()
		if cur := g.s.cl.wrote.Load(); cur != last {
			last = cur
			continue
		}
		runtime.Gosched()
		if g.s.cl.wrote.Load() == last {
			return // nobody else is appending
		}
	}
}

func (g *groupCommit) broadcast() {
	g.mu.Lock()
	g.waiting.Store(0)
	close(g.done)
	g.done = make(chan struct{})
	g.mu.Unlock()
}
