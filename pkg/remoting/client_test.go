package remoting

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestOnewayGetsNoResponse(t *testing.T) {
	got := make(chan *Command, 1)
	srv := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(UnregisterClient, HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
			got <- req
			return req.NewResponse(Success, "") // dropped: the request is oneway
		}), nil)
		s.Handle(HeartBeat, echo, nil)
	})
	c := dialRaw(t, srv.addr)
	oneway := NewRequest(UnregisterClient, map[string]string{"clientID": "c1"}, nil)
	oneway.MarkOneway()
	c.send(oneway)
	if req := <-got; req.Field("clientID") != "c1" || !req.IsOneway() {
		t.Fatalf("handler got %v", req)
	}
	// The next frame on the connection answers the next request, not the oneway one.
	if resp := c.roundTrip(HeartBeat); resp.Code != Success {
		t.Fatalf("heartbeat answered %v", resp)
	}

	// Through the client too.
	cl := newTestClient(t)
	if err := cl.InvokeOneway(testContext(t), srv.addr, NewRequest(UnregisterClient, map[string]string{"clientID": "c2"}, nil)); err != nil {
		t.Fatal(err)
	}
	if req := <-got; req.Field("clientID") != "c2" {
		t.Fatalf("handler got %v", req)
	}
}

func TestInvokeAsync(t *testing.T) {
	release := make(chan struct{})
	srv := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(HeartBeat, echo, nil)
		s.Handle(PullMessage, HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
			<-release
			return req.NewResponse(PullNotFound, "")
		}), nil)
	})
	defer close(release)
	cl := newTestClient(t)
	type result struct {
		resp *Command
		err  error
	}
	done := make(chan result, 1)
	callback := func(resp *Command, err error) { done <- result{resp, err} }

	req := NewRequest(HeartBeat, map[string]string{"clientID": "c1"}, []byte("hi"))
	if err := cl.InvokeAsync(testContext(t), srv.addr, req, callback); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || r.resp.Opaque != req.Opaque || r.resp.Field("clientID") != "c1" || string(r.resp.Body) != "hi" {
		t.Fatalf("async result %v, %v", r.resp, r.err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := cl.InvokeAsync(ctx, srv.addr, NewRequest(PullMessage, nil, nil), callback); err != nil {
		t.Fatal(err)
	}
	if r := <-done; !errors.Is(r.err, ErrTimeout) {
		t.Fatalf("async invoke of a held request: %v, %v; want ErrTimeout", r.resp, r.err)
	}
}

func TestInvokeTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(PullMessage, HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
			<-release
			return req.NewResponse(Success, "late")
		}), nil)
		s.Handle(HeartBeat, echo, nil)
	})
	cl := newTestClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	resp, err := cl.Invoke(ctx, srv.addr, NewRequest(PullMessage, nil, nil))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Invoke = %v, %v; want ErrTimeout", resp, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("timed out after %v", d)
	}
	conn, err := cl.Conn(testContext(t), srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	if n := conn.pendingCount(); n != 0 {
		t.Errorf("%d invocations still pending after the timeout", n)
	}
	// The late response is dropped and the connection keeps working.
	close(release)
	if resp, err := cl.Invoke(testContext(t), srv.addr, NewRequest(HeartBeat, nil, nil)); err != nil || resp.Code != Success {
		t.Fatalf("after a timeout: %v, %v", resp, err)
	}
}

func (c *Conn) pendingCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

func TestResponseUsesRequestSerialization(t *testing.T) {
	srv := startServer(t, ServerConfig{}, func(s *Server) {
		// A handler that builds its response by hand, in the default (JSON) encoding.
		s.Handle(GetRouteInfoByTopic, HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
			return &Command{Code: TopicNotExist, Remark: "no route", ExtFields: map[string]string{"topic": req.Field("topic")}}
		}), nil)
	})
	c := dialRaw(t, srv.addr)
	for _, ser := range []SerializeType{Binary, JSON, Binary} {
		req := NewRequest(GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)
		req.Serialize = ser
		c.send(req)
		resp := c.mustRead()
		if resp.Serialize != ser || resp.Opaque != req.Opaque || resp.Code != TopicNotExist || resp.Field("topic") != "T" || !resp.IsResponse() {
			t.Errorf("answer to a %v request: %v in %v", ser, resp, resp.Serialize)
		}
	}
}

func TestServerCallsClientBack(t *testing.T) {
	conns := make(chan *Conn, 1)
	srv := startServer(t, ServerConfig{OnConnect: func(c *Conn) { conns <- c }}, nil)
	cl := newTestClient(t)
	notified := make(chan string, 1)
	cl.Handle(NotifyConsumerIDsChanged, HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
		notified <- req.Field("consumerGroup")
		return nil // oneway in RocketMQ; nothing owed
	}))
	cl.Handle(GetConsumerRunningInfo, HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
		resp := req.NewResponse(Success, "")
		resp.Body = []byte(`{"properties":{"group":"` + req.Field("consumerGroup") + `"}}`)
		return resp
	}))
	cl.Handle(ConsumeMessageDirectly, HandlerFunc(func(context.Context, *Conn, *Command) *Command { panic("boom") }))
	if _, err := cl.Conn(testContext(t), srv.addr); err != nil {
		t.Fatal(err)
	}
	server := <-conns

	for _, ser := range []SerializeType{JSON, Binary} {
		req := NewRequest(GetConsumerRunningInfo, map[string]string{"consumerGroup": "g1"}, nil)
		req.Serialize = ser
		resp, err := server.Invoke(testContext(t), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != Success || string(resp.Body) != `{"properties":{"group":"g1"}}` || resp.Serialize != ser {
			t.Errorf("client answered %v in %v", resp, resp.Serialize)
		}
	}

	notify := NewRequest(NotifyConsumerIDsChanged, map[string]string{"consumerGroup": "g2"}, nil)
	if err := server.InvokeOneway(notify); err != nil {
		t.Fatal(err)
	}
	if g := <-notified; g != "g2" {
		t.Errorf("client notified for %q", g)
	}

	for _, tc := range []struct {
		code int16
		want int16
	}{
		{ResetConsumerClientOffset, RequestCodeNotSupported}, // no handler on the client
		{ConsumeMessageDirectly, SystemError},                // the handler panics
	} {
		resp, err := server.Invoke(testContext(t), NewRequest(tc.code, nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != tc.want || resp.Remark == "" {
			t.Errorf("code %d answered %v, want code %d with a remark", tc.code, resp, tc.want)
		}
	}
}

func TestUnencodableResponseAnswersSystemError(t *testing.T) {
	srv := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(GetKVConfig, HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
			resp := req.NewResponse(Success, "")
			resp.SetField(strings.Repeat("k", 1<<15), "v") // too long a key for the binary header
			return resp
		}), nil)
	})
	req := NewRequest(GetKVConfig, nil, nil)
	req.Serialize = Binary
	resp, err := newTestClient(t).Invoke(testContext(t), srv.addr, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != SystemError || !strings.Contains(resp.Remark, "too long") {
		t.Fatalf("unencodable response replaced by %v", resp)
	}
}

func TestHandlerPanicAnswersSystemError(t *testing.T) {
	srv := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle(SendMessage, HandlerFunc(func(context.Context, *Conn, *Command) *Command { panic("boom") }), nil)
		s.Handle(HeartBeat, echo, nil)
	})
	c := dialRaw(t, srv.addr)
	if resp := c.roundTrip(SendMessage); resp.Code != SystemError {
		t.Fatalf("panicking handler answered %v", resp)
	}
	if resp := c.roundTrip(HeartBeat); resp.Code != Success {
		t.Fatalf("after a panic: %v", resp)
	}
}

func TestConcurrentInvokesCorrelate(t *testing.T) {
	srv := startServer(t, ServerConfig{}, func(s *Server) {
		pool := s.NewPool("echo", 8, 1000)
		// Random delays so that responses overtake one another.
		s.Handle(SendMessage, HandlerFunc(func(ctx context.Context, c *Conn, req *Command) *Command {
			time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
			return echo(ctx, c, req)
		}), pool)
	})
	cl := newTestClient(t)
	const goroutines, each = 8, 100
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("%d-%d", g, i)
				req := NewRequest(SendMessage, map[string]string{"id": id}, []byte(id))
				if i%2 == 1 {
					req.Serialize = Binary
				}
				resp, err := cl.Invoke(testContext(t), srv.addr, req)
				if err != nil {
					errs <- err
					return
				}
				if resp.Opaque != req.Opaque || resp.Field("id") != id || string(resp.Body) != id {
					errs <- fmt.Errorf("request %s got %v", id, resp)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(srv.Conns()); n != 1 {
		t.Errorf("client opened %d connections, want 1 reused", n)
	}
}

func TestClientReconnects(t *testing.T) {
	srv := startServer(t, ServerConfig{}, func(s *Server) { s.Handle(HeartBeat, echo, nil) })
	cl := newTestClient(t)
	if _, err := cl.Invoke(testContext(t), srv.addr, NewRequest(HeartBeat, nil, nil)); err != nil {
		t.Fatal(err) // the server has the connection now
	}
	first, err := cl.Conn(testContext(t), srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range srv.Conns() {
		c.Close()
	}
	select {
	case <-first.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("client did not notice the server closing the connection")
	}
	if _, err := first.Invoke(testContext(t), NewRequest(HeartBeat, nil, nil)); !errors.Is(err, ErrClosed) {
		t.Errorf("invoke on the closed connection: %v, want ErrClosed", err)
	}
	resp, err := cl.Invoke(testContext(t), srv.addr, NewRequest(HeartBeat, nil, nil))
	if err != nil || resp.Code != Success {
		t.Fatalf("after reconnect: %v, %v", resp, err)
	}
	second, _ := cl.Conn(testContext(t), srv.addr)
	if second == first {
		t.Errorf("client kept the closed connection")
	}
}

func TestClientConnectErrors(t *testing.T) {
	cl := newTestClient(t)
	// A port nobody listens on: bind one, then close it.
	srv := startServer(t, ServerConfig{}, nil)
	addr := srv.addr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	if _, err := cl.Invoke(testContext(t), addr, NewRequest(HeartBeat, nil, nil)); err == nil {
		t.Errorf("invoke on a closed port succeeded")
	}
	cl.Close()
	if _, err := cl.Invoke(testContext(t), addr, NewRequest(HeartBeat, nil, nil)); !errors.Is(err, ErrClosed) {
		t.Errorf("invoke on a closed client: %v, want ErrClosed", err)
	}
}

func TestShutdownGivesUpWithContext(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	s := NewServer(ServerConfig{})
	s.Handle(SendMessage, HandlerFunc(func(ctx context.Context, _ *Conn, req *Command) *Command {
		close(started)
		<-release
		return nil
	}), nil)
	l, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, l.Addr().String())
	c.send(NewRequest(SendMessage, nil, nil))
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	go func() { time.Sleep(200 * time.Millisecond); close(release) }()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
}
