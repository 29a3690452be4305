// Package health serves the HTTP endpoints the kubelet probes a name server or broker on
// (their -http flag):
//
//	/livez     200 while the process answers
//	/startupz  200 once the process has started (a broker: its store is recovered and its
//	           ports listen), 503 "starting" before
//	/readyz    200 when the process serves what a client needs (see Ready), 503 and the
//	           reason otherwise
//
// The server listens before the slow part of a start, so probes see "starting" instead of
// a refused connection, and a caller can add its own handlers (the name server's address
// list).
package health

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// ErrStarting is the readiness of a process that has not started yet.
var ErrStarting = errors.New("starting")

// ErrStopping is the readiness of a process that is shutting down: it leaves the
// Services' endpoints before it stops serving.
var ErrStopping = errors.New("shutting down")

// Server is the probe endpoint of one process.
type Server struct {
	srv      *http.Server
	ln       net.Listener
	mux      *http.ServeMux
	ready    atomic.Pointer[func() error] // nil until Started
	stopping atomic.Bool
}

// Listen opens addr (":8080") and serves in the background.
func Listen(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, mux: http.NewServeMux()}
	s.mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) { answer(w, nil) })
	s.mux.HandleFunc("/startupz", func(w http.ResponseWriter, _ *http.Request) {
		if s.ready.Load() == nil {
			answer(w, ErrStarting)
			return
		}
		answer(w, nil)
	})
	s.mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { answer(w, s.Ready()) })
	s.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the listener's address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Handle adds a handler beside the probes.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Started marks the process started; from now on ready tells readiness (nil: ready).
func (s *Server) Started(ready func() error) {
	if ready == nil {
		ready = func() error { return nil }
	}
	s.ready.Store(&ready)
}

// Stopping makes /readyz fail from now on.
func (s *Server) Stopping() { s.stopping.Store(true) }

// Ready is what /readyz answers: nil, ErrStarting, ErrStopping or the process's reason.
func (s *Server) Ready() error {
	if s.stopping.Load() {
		return ErrStopping
	}
	f := s.ready.Load()
	if f == nil {
		return ErrStarting
	}
	return (*f)()
}

// Close stops serving.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

func answer(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(err.Error() + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
