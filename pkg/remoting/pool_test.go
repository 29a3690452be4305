package remoting

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// One connection fills a pool of one worker and a queue of four; a request from
// another connection displaces the flood's newest and is served second in line, not
// behind the whole backlog.
func TestPoolIsFairBetweenConnections(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 16)
	var mu sync.Mutex
	var served []string
	srv := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(SendMessage, HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
			mu.Lock()
			served = append(served, req.ExtFields["from"])
			mu.Unlock()
			started <- struct{}{}
			<-release
			return req.NewResponse(Success, "")
		}), s.NewPool("send", 1, 4))
	})
	request := func(from string) *Command { return NewRequest(SendMessage, map[string]string{"from": from}, nil) }
	flood, other := dialRaw(t, srv.addr), dialRaw(t, srv.addr)

	first := request("flood")
	flood.send(first)
	<-started // the only worker is busy
	queued := []*Command{first}
	for i := range 9 {
		req := request("flood")
		flood.send(req)
		if i < 4 {
			queued = append(queued, req) // the rest are refused
		}
	}
	for range 5 {
		if resp := flood.mustRead(); resp.Code != SystemBusy {
			t.Fatalf("request past the full queue answered %v, want SYSTEM_BUSY", resp)
		}
	}

	mine := request("other")
	other.send(mine)
	if resp := flood.mustRead(); resp.Code != SystemBusy || resp.Opaque != queued[4].Opaque {
		t.Fatalf("flood's newest queued request (opaque %d) answered %v, want SYSTEM_BUSY: displaced", queued[4].Opaque, resp)
	}

	close(release)
	if resp := other.mustRead(); resp.Opaque != mine.Opaque || resp.Code != Success {
		t.Fatalf("other connection's request answered %v", resp)
	}
	for _, want := range queued[:4] {
		if resp := flood.mustRead(); resp.Opaque != want.Opaque || resp.Code != Success {
			t.Fatalf("flood's queued request %d answered %v", want.Opaque, resp)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// The one running, then the lines in turn: flood's second, other, flood's rest.
	if want := []string{"flood", "flood", "other", "flood", "flood"}; !slices.Equal(served, want) {
		t.Errorf("served in the order %v, want %v: the lines take turns", served, want)
	}
}

// The queue is bounded in bytes as well as in count: 64 KiB requests from one
// connection fill a pool whose bytes hold three of them, long before its count of 100;
// the next are refused, and another connection's large request displaces the flood's
// newest, as past the count.
func TestPoolBoundsWaitingBytes(t *testing.T) {
	const body = 64 << 10
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	started := make(chan struct{}, 16)
	srv := startServer(t, ServerConfig{MaxWaitingBytes: 3 * (body + 1024)}, func(s *Server) {
		s.Handle(SendMessage, HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
			started <- struct{}{}
			<-release
			return req.NewResponse(Success, "")
		}), s.NewPool("send", 1, 100))
	})
	t.Cleanup(releaseOnce) // before the server's Shutdown, which waits for the handlers
	request := func() *Command { return NewRequest(SendMessage, nil, make([]byte, body)) }
	flood, other := dialRaw(t, srv.addr), dialRaw(t, srv.addr)

	first := request()
	flood.send(first)
	<-started // the only worker is busy
	var queued []*Command
	for i := range 5 {
		req := request()
		flood.send(req)
		if i < 3 {
			queued = append(queued, req)
		}
	}
	for range 2 {
		if resp := flood.mustRead(); resp.Code != SystemBusy || !strings.HasPrefix(resp.Remark, "[OVERLOAD]") {
			t.Fatalf("request past the queue's bytes answered %v, want SYSTEM_BUSY [OVERLOAD]", resp)
		}
	}

	mine := request()
	other.send(mine)
	if resp := flood.mustRead(); resp.Code != SystemBusy || resp.Opaque != queued[2].Opaque {
		t.Fatalf("flood's newest queued request (opaque %d) answered %v, want SYSTEM_BUSY: displaced", queued[2].Opaque, resp)
	}
	releaseOnce()
	for _, want := range []*Command{first, queued[0], queued[1]} {
		if resp := flood.mustRead(); resp.Opaque != want.Opaque || resp.Code != Success {
			t.Fatalf("flood's request %d answered %v", want.Opaque, resp)
		}
	}
	if resp := other.mustRead(); resp.Opaque != mine.Opaque || resp.Code != Success {
		t.Fatalf("other connection's request answered %v", resp)
	}
}

// A request that finds nothing waiting is queued whatever its size: the bytes bound a
// queue, not a request (the frame size does).
func TestPoolTakesOneRequestOverItsBytes(t *testing.T) {
	p, _, hold := stuckPool()
	p.maxBytes = 1024
	c := &Conn{}
	large, small := make(chan string, 1), make(chan string, 1)
	p.submit(c, 4096, func(r string) { large <- r })
	p.submit(c, 1, func(r string) { small <- r })
	if r := <-small; !strings.HasPrefix(r, "[OVERLOAD]") {
		t.Fatalf("a second request past the bytes answered %q, want an [OVERLOAD] refusal", r)
	}
	close(hold)
	if r := <-large; r != "" {
		t.Errorf("the one request waiting, over the bytes, was refused: %s", r)
	}
	p.stop()
}

// Lines take turns with several connections, keep each connection's order, and a pool
// stopped with requests queued serves them first.
func TestPoolTurnsAndStop(t *testing.T) {
	p := newPool("test", 1, 100, 0)
	conns := []*Conn{{}, {}, {}}
	hold, held := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var order []int
	p.submit(conns[0], 0, func(string) { close(held); <-hold })
	<-held // the worker is busy and every line empty
	for i := range 3 {
		for _, c := range conns[:3-i] { // conns[0] queues 3, conns[1] 2, conns[2] 1
			n := slices.Index(conns, c)*10 + i
			p.submit(c, 0, func(refusal string) {
				if refusal != "" {
					t.Errorf("request %d refused: %s", n, refusal)
				}
				mu.Lock()
				order = append(order, n)
				mu.Unlock()
			})
		}
	}
	close(hold)
	p.stop()
	if want := []int{0, 10, 20, 1, 11, 2}; !slices.Equal(order, want) {
		t.Errorf("served %v, want %v", order, want)
	}
	refusal := ""
	p.submit(conns[0], 0, func(r string) { refusal = r })
	if !strings.HasPrefix(refusal, "[OVERLOAD]") {
		t.Errorf("stopped pool answered %q, want an [OVERLOAD] refusal", refusal)
	}
}

// A pool of queue 0 serves a request that comes before its worker first waited, as one
// that finds it waiting: a new pool's workers are idle from the start.
func TestPoolOfQueueZeroTakesARequestAtOnce(t *testing.T) {
	for range 20 { // the worker seldom runs before the first submit: each pool is a try
		p := newPool("test", 1, 0, 0)
		refusal := make(chan string, 1)
		p.submit(&Conn{}, 0, func(r string) { refusal <- r })
		if r := <-refusal; r != "" {
			t.Fatalf("the first request to a new pool of queue 0 was refused: %s", r)
		}
		p.stop()
	}
}

// stuckPool is a pool of one worker, busy until hold is closed, on the clock returned
// (monotonic nanoseconds, 0 at the start).
func stuckPool() (p *Pool, clock *atomic.Int64, hold chan struct{}) {
	p = newPool("send", 1, 100, 0)
	clock = new(atomic.Int64)
	p.now = clock.Load
	hold, held := make(chan struct{}), make(chan struct{})
	p.submit(&Conn{}, 0, func(string) { close(held); <-hold })
	<-held
	return p, clock, hold
}

// Requests that waited maxWait or longer are refused with RocketMQ's
// [TIMEOUT_CLEAN_QUEUE] remark, in every line, oldest first; younger ones stay queued
// and are served. The pool's clock is the test's.
func TestPoolExpireWaiting(t *testing.T) {
	p, clock, hold := stuckPool()

	var mu sync.Mutex
	answers := map[string]string{} // request -> refusal, "" when served
	submit := func(c *Conn, name string) {
		p.submit(c, 0, func(refusal string) {
			mu.Lock()
			answers[name] = refusal
			mu.Unlock()
		})
	}
	a, b := &Conn{}, &Conn{}
	submit(a, "a0") // queued at 0
	clock.Store(int64(50 * time.Millisecond))
	submit(b, "b0")
	clock.Store(int64(150 * time.Millisecond))
	submit(a, "a1")
	submit(b, "b1")

	clock.Store(int64(199 * time.Millisecond))
	if got := p.HeadWait(); got != 199*time.Millisecond {
		t.Errorf("the oldest request waited %v, want 199ms", got)
	}
	if n := p.ExpireWaiting(200 * time.Millisecond); n != 0 {
		t.Fatalf("refused %d requests younger than the limit", n)
	}
	clock.Store(int64(250 * time.Millisecond)) // a0 waited 250 ms, b0 200 ms, the others 100 ms
	if n := p.ExpireWaiting(200 * time.Millisecond); n != 2 {
		t.Fatalf("refused %d requests, want a0 and b0", n)
	}
	if got := p.Waiting(); got != 2 {
		t.Errorf("%d requests waiting after the expiry, want 2", got)
	}
	close(hold)
	p.stop()
	want := map[string]string{
		"a0": "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 250ms, size of queue: 3",
		"b0": "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 200ms, size of queue: 2",
		"a1": "", "b1": "",
	}
	if !maps.Equal(answers, want) {
		t.Errorf("answers %q\nwant %q", answers, want)
	}
}

// RefuseWaiting empties the queue with the tag given, and the pool serves what comes
// after.
func TestPoolRefuseWaiting(t *testing.T) {
	p, clock, hold := stuckPool()
	var refusals []string
	for range 2 {
		p.submit(&Conn{}, 0, func(r string) { refusals = append(refusals, r) })
	}
	clock.Store(int64(30 * time.Millisecond))
	if n := p.RefuseWaiting("[PCBUSY_CLEAN_QUEUE]"); n != 2 {
		t.Fatalf("refused %d, want 2", n)
	}
	served := make(chan string, 1)
	p.submit(&Conn{}, 0, func(r string) { served <- r })
	close(hold)
	if r := <-served; r != "" {
		t.Errorf("a request after the clean-up was refused: %s", r)
	}
	p.stop()
	want := []string{
		"[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 30ms, size of queue: 1",
		"[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 30ms, size of queue: 0",
	}
	if !slices.Equal(refusals, want) {
		t.Errorf("refusals %q\nwant %q", refusals, want)
	}
}
