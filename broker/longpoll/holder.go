// Package longpoll holds pull requests that found no message until one arrives for
// their queue, their suspend timeout passes, or a periodic re-check finds data.
package longpoll

import (
	"sync"
	"sync/atomic"
	"time"
)

// Request is a held pull.
type Request struct {
	Topic    string
	QueueID  int32
	Offset   int64            // the offset the pull asked for
	Deadline time.Time        // answer by then, whatever happens
	Match    func(int64) bool // tag-hash filter; nil matches all
	Resume   func()           // re-runs the pull without suspending and answers it
	Done     <-chan struct{}  // closed when the client's connection closes
	once     sync.Once
	timer    *time.Timer     // fires at Deadline; set under Holder.mu
	running  *sync.WaitGroup // the holder's running resumes
}

// resume answers r once; it reports whether this call did.
func (r *Request) resume() (answered bool) {
	r.once.Do(func() {
		answered = true
		if r.timer != nil {
			r.timer.Stop()
		}
		if r.running == nil {
			go r.Resume()
			return
		}
		r.running.Add(1)
		go func() {
			defer r.running.Done()
			r.Resume()
		}()
	})
	return answered
}

type queueKey struct {
	topic string
	qid   int32
}

// Holder keeps held pulls by queue.
type Holder struct {
	interval  time.Duration
	maxOffset func(topic string, qid int32) int64
	now       func() time.Time

	mu      sync.Mutex
	waiting map[queueKey][]*Request
	closed  bool

	stop    chan struct{}
	wg      sync.WaitGroup
	running sync.WaitGroup // resumes in progress

	woken, rechecked, expired atomic.Int64 // see Stats
}

// Stats counts how held pulls were answered: woken by an arrival, found by
// the periodic re-check, or at their deadline.
type Stats struct{ Woken, Rechecked, Expired int64 }

// Stats returns the counts so far.
func (h *Holder) Stats() Stats {
	return Stats{Woken: h.woken.Load(), Rechecked: h.rechecked.Load(), Expired: h.expired.Load()}
}

// New returns a holder that re-checks every interval against maxOffset, for arrivals
// that woke no one (the broker passes 1 s, or shortPollingTimeMills when long polling is
// off and that is shorter).
func New(interval time.Duration, maxOffset func(topic string, qid int32) int64) *Holder {
	h := &Holder{interval: interval, maxOffset: maxOffset, now: time.Now,
		waiting: map[queueKey][]*Request{}, stop: make(chan struct{})}
	h.wg.Add(1)
	go h.run()
	return h
}

// Hold parks r. If a message arrived between the pull's read and now, it resumes at once.
func (h *Holder) Hold(r *Request) {
	k := queueKey{r.Topic, r.QueueID}
	r.running = &h.running
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		r.resume()
		return
	}
	h.waiting[k] = append(h.waiting[k], r)
	r.timer = time.AfterFunc(time.Until(r.Deadline), func() { h.expire(k, r) })
	h.mu.Unlock()
	if h.maxOffset(r.Topic, r.QueueID) > r.Offset {
		h.wake(k, -1, 0, true)
	}
}

// Notify is called when a message lands in a queue: pulls waiting below maxOffset whose
// filter matches tagsCode resume.
func (h *Holder) Notify(topic string, qid int32, maxOffset, tagsCode int64) {
	h.wake(queueKey{topic, qid}, maxOffset, tagsCode, false)
}

func (h *Holder) wake(k queueKey, maxOffset, tagsCode int64, anyTag bool) {
	if maxOffset < 0 {
		maxOffset = h.maxOffset(k.topic, k.qid)
	}
	h.mu.Lock()
	list := h.waiting[k]
	if len(list) == 0 {
		h.mu.Unlock()
		return
	}
	var keep, ready []*Request
	for _, r := range list {
		if maxOffset > r.Offset && (anyTag || r.Match == nil || r.Match(tagsCode)) {
			ready = append(ready, r)
		} else {
			keep = append(keep, r)
		}
	}
	h.setLocked(k, keep)
	h.mu.Unlock()
	for _, r := range ready {
		if r.resume() {
			h.woken.Add(1)
		}
	}
}

func (h *Holder) setLocked(k queueKey, list []*Request) {
	if len(list) == 0 {
		delete(h.waiting, k)
	} else {
		h.waiting[k] = list
	}
}

func (h *Holder) run() {
	defer h.wg.Done()
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			h.check()
		}
	}
}

// check resumes pulls whose queue has grown, whose deadline passed or whose client left.
func (h *Holder) check() {
	h.mu.Lock()
	keys := make([]queueKey, 0, len(h.waiting))
	for k := range h.waiting {
		keys = append(keys, k)
	}
	h.mu.Unlock()
	now := h.now()
	for _, k := range keys {
		maxOff := h.maxOffset(k.topic, k.qid)
		h.mu.Lock()
		var keep, ready, late []*Request
		for _, r := range h.waiting[k] {
			gone := false
			select {
			case <-r.Done:
				gone = true
			default:
			}
			switch {
			case gone:
			case maxOff > r.Offset:
				ready = append(ready, r)
			case !now.Before(r.Deadline):
				late = append(late, r)
			default:
				keep = append(keep, r)
			}
		}
		h.setLocked(k, keep)
		h.mu.Unlock()
		for _, r := range ready {
			if r.resume() {
				h.rechecked.Add(1)
			}
		}
		for _, r := range late {
			if r.resume() {
				h.expired.Add(1)
			}
		}
	}
}

// expire answers r at its deadline.
func (h *Holder) expire(k queueKey, r *Request) {
	h.mu.Lock()
	list := h.waiting[k]
	for i, x := range list {
		if x == r {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	h.setLocked(k, list)
	h.mu.Unlock()
	if r.resume() {
		h.expired.Add(1)
	}
}

// Len returns the number of held pulls.
func (h *Holder) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, l := range h.waiting {
		n += len(l)
	}
	return n
}

// Close stops the re-check loop and resumes every held pull, so each gets its answer,
// and waits for the answers to be sent.
func (h *Holder) Close() {
	close(h.stop)
	h.wg.Wait()
	h.mu.Lock()
	h.closed = true
	all := h.waiting
	h.waiting = map[queueKey][]*Request{}
	h.mu.Unlock()
	for _, l := range all {
		for _, r := range l {
			r.resume()
		}
	}
	h.running.Wait()
}
