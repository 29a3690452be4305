package remoting

import (
	"context"
	"slices"
	"sync"
	"testing"
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

// Lines take turns with several connections, keep each connection's order, and a pool
// stopped with requests queued serves them first.
func TestPoolTurnsAndStop(t *testing.T) {
	p := newPool("test", 1, 100)
	conns := []*Conn{{}, {}, {}}
	hold, held := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var order []int
	p.submit(conns[0], func(bool) { close(held); <-hold })
	<-held // the worker is busy and every line empty
	for i := range 3 {
		for _, c := range conns[:3-i] { // conns[0] queues 3, conns[1] 2, conns[2] 1
			n := slices.Index(conns, c)*10 + i
			p.submit(c, func(refused bool) {
				if refused {
					t.Errorf("request %d refused", n)
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
	refused := false
	p.submit(conns[0], func(r bool) { refused = r })
	if !refused {
		t.Errorf("stopped pool took a request")
	}
}
