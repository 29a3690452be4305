package store

import (
	"runtime"
	"sync"
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
		g.s.noteWriteErr(g.s.cl.flush())
		g.broadcast()
	}
}

// gather lets appenders that are already runnable finish their append
// before the sync starts, so one fdatasync covers them too: it yields
// while the tail keeps moving, for at most gatherMax.
func (g *groupCommit) gather() {
	const gatherMax = 200 * time.Microsecond
	deadline := time.Now().Add(gatherMax)
	last := g.s.cl.wrote.Load()
	for time.Now().Before(deadline) {
		runtime.Gosched()
		runtime.Gosched()
		cur := g.s.cl.wrote.Load()
		if cur == last {
			return
		}
		last = cur
	}
}

func (g *groupCommit) broadcast() {
	g.mu.Lock()
	close(g.done)
	g.done = make(chan struct{})
	g.mu.Unlock()
}
