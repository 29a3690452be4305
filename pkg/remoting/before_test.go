package remoting

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestBeforeHandle: the hook answers instead of the handler when it returns a response,
// lets the handler run when it returns nil, and a panic in it becomes SYSTEM_ERROR.
func TestBeforeHandle(t *testing.T) {
	const refused, allowed, panics int16 = 901, 902, 903
	var handled atomic.Int32
	remotes := make(chan string, 3)
	counting := HandlerFunc(func(ctx context.Context, c *Conn, req *Command) *Command {
		handled.Add(1)
		return echo(ctx, c, req)
	})
	srv := startServer(t, ServerConfig{BeforeHandle: func(c *Conn, req *Command) *Command {
		remotes <- c.RemoteAddr()
		switch req.Code {
		case refused:
			return req.NewResponse(NoPermission, "refused by hook")
		case panics:
			panic("hook failed")
		}
		return nil
	}}, func(s *Server) {
		pool := s.NewPool("hooked", 1, 10)
		for _, code := range []int16{refused, allowed, panics} {
			s.Handle(code, counting, pool)
		}
	})
	cl := newTestClient(t)
	ctx := testContext(t)

	resp, err := cl.Invoke(ctx, srv.addr, NewRequest(refused, nil, nil))
	if err != nil || resp.Code != NoPermission || resp.Remark != "refused by hook" {
		t.Fatalf("refused: %v %v", resp, err)
	}
	if n := handled.Load(); n != 0 {
		t.Fatalf("handler ran %d times for a refused request", n)
	}
	resp, err = cl.Invoke(ctx, srv.addr, NewRequest(allowed, map[string]string{"k": "v"}, nil))
	if err != nil || resp.Code != Success || resp.Field("k") != "v" || handled.Load() != 1 {
		t.Fatalf("allowed: %v %v (handled %d)", resp, err, handled.Load())
	}
	resp, err = cl.Invoke(ctx, srv.addr, NewRequest(panics, nil, nil))
	if err != nil || resp.Code != SystemError || handled.Load() != 1 {
		t.Fatalf("panicking hook: %v %v (handled %d)", resp, err, handled.Load())
	}
	for range 3 {
		if addr := <-remotes; addr == "" {
			t.Fatal("hook saw no remote address")
		}
	}
}

// TestBeforeHandleRefusedOneway: a oneway request the hook refuses gets no answer and
// does not reach its handler.
func TestBeforeHandleRefusedOneway(t *testing.T) {
	const code int16 = 904
	seen := make(chan struct{}, 1)
	var handled atomic.Int32
	srv := startServer(t, ServerConfig{BeforeHandle: func(_ *Conn, req *Command) *Command {
		seen <- struct{}{}
		return req.NewResponse(NoPermission, "no")
	}}, func(s *Server) {
		s.Handle(code, HandlerFunc(func(context.Context, *Conn, *Command) *Command {
			handled.Add(1)
			return nil
		}), nil)
	})
	rc := dialRaw(t, srv.addr)
	req := NewRequest(code, nil, nil)
	req.MarkOneway()
	rc.send(req)
	select {
	case <-seen:
	case <-time.After(5 * time.Second):
		t.Fatal("hook not called within 5s")
	}
	// A request sent after it is answered; nothing for the oneway came first.
	rc.send(NewRequest(code, nil, nil))
	resp := rc.mustRead()
	if resp.Opaque == req.Opaque || resp.Code != NoPermission {
		t.Fatalf("got %v, want only the answer to the second request", resp)
	}
	if handled.Load() != 0 {
		t.Fatal("handler ran for a refused oneway request")
	}
}
