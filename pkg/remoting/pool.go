package remoting

import (
	"fmt"
	"sync"
	"time"
)

// Pool is a fixed set of workers with a bounded queue, so that one kind of request
// (say, pulls) cannot starve another (say, sends) and overload is refused, not queued
// without bound.
//
// The queue is fair between connections. Each connection waits in a line of its own
// and the workers serve the lines in turn, one request each, so a connection that
// floods the pool delays the others by one request, not by its backlog; a
// connection's requests still run in the order they came. When the queue is full, a
// request from a connection with a shorter line than the longest takes the place of
// the longest line's newest request, which is refused instead (longest queue drop):
// a flood is answered SYSTEM_BUSY while the others are served. A request from the
// longest line is refused itself, which leaves the behaviour of a pool full for all.
//
// The queue is bounded in bytes too (the frames as they arrived): a queue of large
// messages fills long before its count, and what it holds is memory. Past the bytes, a
// request is refused, or displaces the longest line's newest, as past the count; a
// request that finds nothing waiting is taken whatever its size.
//
// A request that waits too long is refused too (ExpireWaiting, RocketMQ's broker fast
// failure): a client is better served by SYSTEM_BUSY, which it can take elsewhere, than
// by an answer after its own timeout.
type Pool struct {
	name     string
	limit    int          // requests waiting, all lines together
	maxBytes int64        // bytes of the requests waiting, all lines together; 0: no bound
	now      func() int64 // monotonic nanoseconds; tests replace it

	mu           sync.Mutex
	work         sync.Cond
	lines        map[*Conn]*line
	turns        fifo[*line] // the lines with requests, in the order they are served
	waiting      int         // requests in lines
	waitingBytes int64       // their sizes added up
	idle         int         // workers waiting for a request (or yet to look for one) and not yet woken
	spare        []*line     // drained lines kept for reuse, to spare an allocation per request
	stopped      bool
	wg           sync.WaitGroup
}

// task serves a request on a worker (refusal ""), or answers it SYSTEM_BUSY with the
// refusal as remark. Either way it runs once.
type task func(refusal string)

// queuedTask is a task, its request's size and when it was queued.
type queuedTask struct {
	run  task
	size int64
	at   int64 // Pool.now at submit
}

// line is one connection's requests waiting in a pool.
type line struct {
	conn    *Conn
	tasks   fifo[queuedTask]
	inTurns bool // in Pool.turns; may be while empty, after a displacement or expiry
}

const maxSpareLines = 64

func newPool(name string, workers, queue int, maxBytes int64) *Pool {
	p := &Pool{name: name, limit: max(queue, 0), maxBytes: max(maxBytes, 0), now: monoNow, lines: make(map[*Conn]*line)}
	p.work.L = &p.mu
	workers = max(workers, 1)
	// Idle from the start: a request that comes before a worker first waits is queued
	// for it, as for one waiting, not refused by a pool of queue 0 (submit's wake-up
	// is lost then, but a worker looks for work before it waits).
	p.idle = workers
	p.wg.Add(workers)
	for range workers {
		go p.serve()
	}
	return p
}

// Waiting is the number of requests queued, not yet on a worker.
func (p *Pool) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting
}

// HeadWait is how long the oldest waiting request has waited, 0 when none waits
// (RocketMQ's ...ThreadPoolQueueHeadWaitTimeMills).
func (p *Pool) HeadWait() time.Duration {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	var oldest time.Duration
	for _, l := range p.turns.items[p.turns.head:] {
		if l.tasks.len() > 0 {
			oldest = max(oldest, time.Duration(now-l.tasks.front().at))
		}
	}
	return oldest
}

func (p *Pool) serve() {
	defer p.wg.Done()
	p.mu.Lock()
	counted := true // in idle since newPool, which counts a worker before it runs
	for {
		t, ok := p.nextLocked()
		if !ok {
			if p.stopped {
				p.mu.Unlock()
				return
			}
			if !counted {
				p.idle++
			}
			counted = false // whoever wakes it takes it out of idle
			p.work.Wait()
			continue
		}
		counted = false
		p.mu.Unlock()
		t("")
		p.mu.Lock()
	}
}

// submit queues t, a request of size bytes, on c's line, or refuses it (or the
// requests it displaces) when the queue is full or the pool stopped. An idle worker
// takes a request at once, as from an unbuffered channel: a pool with queue 0 serves
// only what finds a worker free.
func (p *Pool) submit(c *Conn, size int64, t task) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		t(p.fullRemark())
		return
	}
	l := p.lines[c]
	var displaced []task
	for p.fullLocked(size) {
		long := p.longestLocked()
		if long == nil || l != nil && long.tasks.len() <= l.tasks.len() {
			p.mu.Unlock()
			for _, d := range displaced {
				d(p.fullRemark())
			}
			t(p.fullRemark())
			return
		}
		d := long.tasks.popBack()
		p.waiting--
		p.waitingBytes -= d.size
		displaced = append(displaced, d.run)
	}
	if l == nil {
		l = p.newLineLocked(c)
	}
	l.tasks.push(queuedTask{t, size, p.now()})
	p.waiting++
	p.waitingBytes += size
	if !l.inTurns {
		l.inTurns = true
		p.turns.push(l)
	}
	if p.idle > 0 {
		p.idle--
		p.work.Signal()
	}
	p.mu.Unlock()
	for _, d := range displaced {
		d(p.fullRemark())
	}
}

// fullLocked says whether one more request of size bytes is past the queue's count or
// bytes. The bytes bind only while no worker is idle and something waits.
func (p *Pool) fullLocked(size int64) bool {
	if p.waiting >= p.limit+p.idle {
		return true
	}
	return p.maxBytes > 0 && p.idle == 0 && p.waiting > 0 && p.waitingBytes+size > p.maxBytes
}

func (p *Pool) fullRemark() string {
	return fmt.Sprintf("[OVERLOAD] %s pool is full, try again later", p.name)
}

// ExpireWaiting refuses the requests that have waited maxWait or longer, as RocketMQ's
// BrokerFastFailure cleans the head of a queue, with its remark ([TIMEOUT_CLEAN_QUEUE]).
// It returns how many it refused. Each line is in arrival order, so only its head needs
// a look.
func (p *Pool) ExpireWaiting(maxWait time.Duration) int {
	return p.refuse("[TIMEOUT_CLEAN_QUEUE]", func(waited time.Duration) bool { return waited >= maxWait })
}

// RefuseWaiting refuses every waiting request, with a remark that starts with tag: the
// store cannot take writes now (see PCBUSY_CLEAN_QUEUE). It returns how many it refused.
func (p *Pool) RefuseWaiting(tag string) int {
	return p.refuse(tag, func(time.Duration) bool { return true })
}

// refuse takes, from the head of every line, the requests for which due(time waited)
// says so, and answers each, outside the lock, with RocketMQ's remark: tag, the time it
// waited and the requests still waiting.
func (p *Pool) refuse(tag string, due func(waited time.Duration) bool) int {
	type refused struct {
		run    task
		remark string
	}
	var out []refused
	now := p.now()
	p.mu.Lock()
	for _, l := range p.turns.items[p.turns.head:] {
		for l.tasks.len() > 0 {
			waited := time.Duration(now - l.tasks.front().at)
			if !due(waited) {
				break
			}
			qt := l.tasks.pop()
			p.waiting--
			p.waitingBytes -= qt.size
			out = append(out, refused{qt.run, fmt.Sprintf("%sbroker busy, start flow control for a while, period in queue: %dms, size of queue: %d",
				tag, waited.Milliseconds(), p.waiting)})
		}
	}
	p.mu.Unlock()
	for _, r := range out {
		r.run(r.remark)
	}
	return len(out)
}

// nextLocked takes the first request of the line whose turn it is, and sends that
// line to the back when it has more.
func (p *Pool) nextLocked() (task, bool) {
	for p.turns.len() > 0 {
		l := p.turns.pop()
		l.inTurns = false
		if l.tasks.len() == 0 { // emptied by a displacement or refusals
			p.dropLineLocked(l)
			continue
		}
		qt := l.tasks.pop()
		p.waiting--
		p.waitingBytes -= qt.size
		if l.tasks.len() > 0 {
			l.inTurns = true
			p.turns.push(l)
		} else {
			p.dropLineLocked(l)
		}
		return qt.run, true
	}
	return nil, false
}

// longestLocked returns the line with the most requests, nil when none has any.
func (p *Pool) longestLocked() *line {
	var long *line
	for _, l := range p.turns.items[p.turns.head:] {
		if long == nil || l.tasks.len() > long.tasks.len() {
			long = l
		}
	}
	if long == nil || long.tasks.len() == 0 {
		return nil
	}
	return long
}

func (p *Pool) newLineLocked(c *Conn) *line {
	var l *line
	if n := len(p.spare); n > 0 {
		l, p.spare = p.spare[n-1], p.spare[:n-1]
	} else {
		l = &line{}
	}
	l.conn = c
	p.lines[c] = l
	return l
}

// dropLineLocked forgets an empty line that is not in turns.
func (p *Pool) dropLineLocked(l *line) {
	delete(p.lines, l.conn)
	l.conn = nil
	if len(p.spare) < maxSpareLines {
		p.spare = append(p.spare, l)
	}
}

// stop lets the workers finish what is queued, then ends them; later requests are
// refused.
func (p *Pool) stop() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		p.wg.Wait()
		return
	}
	p.stopped = true
	p.work.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}

// fifo is a queue in a slice, which it reuses once drained.
type fifo[T any] struct {
	items []T
	head  int
}

func (q *fifo[T]) len() int { return len(q.items) - q.head }

func (q *fifo[T]) front() T { return q.items[q.head] }

func (q *fifo[T]) push(v T) { q.items = append(q.items, v) }

func (q *fifo[T]) pop() T {
	var zero T
	v := q.items[q.head]
	q.items[q.head] = zero
	q.head++
	q.compact()
	return v
}

func (q *fifo[T]) popBack() T {
	var zero T
	last := len(q.items) - 1
	v := q.items[last]
	q.items[last] = zero
	q.items = q.items[:last]
	q.compact()
	return v
}

// compact moves the items to the front once the slice is more than half consumed, so
// that a queue that never drains does not grow without bound.
func (q *fifo[T]) compact() {
	switch {
	case q.head == len(q.items):
		q.items, q.head = q.items[:0], 0
	case q.head >= 32 && 2*q.head >= len(q.items):
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
}
