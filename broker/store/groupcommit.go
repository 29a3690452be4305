package store

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// groupCommit implements SYNC_FLUSH. An appender registers the end of its records and
// what to do once they are durable; one flush goroutine runs fdatasync for every
// registration made meanwhile and then runs their callbacks, in the order they came.
//
// Nobody waits on a goroutine or a timer of their own: at 64 concurrent sends, a
// goroutine and a timer per waiting send (their stacks growing, the timer heap's lock)
// took a fifth of the broker's CPU. One timer expires the registrations a stuck flush
// holds past SyncFlushTimeout.
//
// Invariant: every registration is answered exactly once, by the flush that covers it,
// by a failed flush, by the timer, or at stop; and it is removed from waiters, under
// mu, before its callback runs.
type groupCommit struct {
	s    *Store
	kick chan struct{}

	mu      sync.Mutex
	waiters []durableWaiter // registered, not yet answered, in registration order
	spare   []durableWaiter // the answered round's slice, reused for the next
	armed   bool            // the timeout timer is pending
	stopped bool            // run has answered its last round: answer at registration
	timer   *time.Timer

	inflight atomic.Int64 // appenders between entry and registration
}

// durableWaiter is one registration: records up to end, registered at at.
type durableWaiter struct {
	end  int64
	at   time.Time
	done func(PutStatus)
}

func newGroupCommit(s *Store) *groupCommit {
	g := &groupCommit{s: s, kick: make(chan struct{}, 1)}
	g.timer = time.AfterFunc(time.Hour, g.expire)
	g.timer.Stop()
	return g
}

// notify runs done once the commitlog is durable up to end: PutOK, or
// PutFlushDiskTimeout after SyncFlushTimeout or a failed flush (the sticky write error
// then fails the next appends). It runs on the flush goroutine (or the caller's, when
// end is durable already), so done must not block.
func (g *groupCommit) notify(end int64, done func(PutStatus)) {
	defer g.inflight.Add(-1)
	if g.s.cl.flushed.Load() >= end {
		done(PutOK)
		return
	}
	g.mu.Lock()
	if g.stopped { // the last flush covered every append: Close holds putMu
		g.mu.Unlock()
		done(g.status(end))
		return
	}
	g.waiters = append(g.waiters, durableWaiter{end: end, at: time.Now(), done: done})
	if !g.armed {
		g.armed = true
		g.timer.Reset(g.s.cfg.SyncFlushTimeout)
	}
	g.mu.Unlock()
	kick(g.kick) // unless a flush is due already
}

func (g *groupCommit) status(end int64) PutStatus {
	if g.s.cl.flushed.Load() >= end {
		return PutOK
	}
	return PutFlushDiskTimeout
}

func (g *groupCommit) run() {
	defer g.s.wg.Done()
	for {
		stopping := false
		select {
		case <-g.s.stop:
			stopping = true
		case <-g.kick:
			g.gather()
		}
		err := g.s.cl.flush()
		g.s.noteWriteErr(err)
		g.answer(err != nil, stopping)
		if stopping {
			g.timer.Stop() // nothing is left for it to expire
			return
		}
	}
}

// answer runs the callbacks of the registrations the last flush covered; after a failed
// flush, or at stop, of every registration. Those registered after the flush read its
// target stay for the next round, which their kick asked for.
func (g *groupCommit) answer(failed, stopping bool) {
	g.mu.Lock()
	flushed := g.s.cl.flushed.Load()
	due, keep := g.waiters, g.spare[:0]
	for _, w := range due {
		if w.end > flushed && !failed && !stopping {
			keep = append(keep, w)
		}
	}
	g.waiters = keep
	g.stopped = stopping
	g.mu.Unlock()

	covered := 0
	for i, w := range due {
		switch {
		case w.end <= flushed:
			covered++
			w.done(PutOK)
		case failed || stopping:
			w.done(PutFlushDiskTimeout)
		}
		due[i] = durableWaiter{}
	}
	g.mu.Lock()
	g.spare = due[:0] // waiters now lives in the former spare
	g.mu.Unlock()
	if f := g.s.cfg.OnGroupCommit; f != nil && covered > 0 {
		f(covered)
	}
}

// expire answers PutFlushDiskTimeout to the registrations that have waited
// SyncFlushTimeout (a flush is stuck: a disk that does not answer), and sets the timer
// for the oldest of the others.
func (g *groupCommit) expire() {
	timeout := g.s.cfg.SyncFlushTimeout
	now := time.Now()
	g.mu.Lock()
	n := 0
	for n < len(g.waiters) && now.Sub(g.waiters[n].at) >= timeout {
		n++ // registration order is arrival order: the expired ones are a prefix
	}
	expired := append([]durableWaiter(nil), g.waiters[:n]...)
	g.waiters = append(g.waiters[:0], g.waiters[n:]...)
	g.armed = len(g.waiters) > 0
	if g.armed {
		g.timer.Reset(timeout - now.Sub(g.waiters[0].at))
	}
	g.mu.Unlock()
	for _, w := range expired {
		w.done(g.status(w.end))
	}
}

// gather lets appenders that are already on their way finish their
// append before the sync starts, so one fdatasync covers them too: it
// yields until every in-flight appender has registered, or the tail stops
// moving, for at most gatherMax.
func (g *groupCommit) gather() {
	const gatherMax = 200 * time.Microsecond
	deadline := time.Now().Add(gatherMax)
	last := g.s.cl.wrote.Load()
	for g.inflight.Load() > 0 && time.Now().Before(deadline) {
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
