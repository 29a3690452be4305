package remoting

import (
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"
)

// closeErrors returns an OnClose hook and the channel it sends each closed
// connection's Err to.
func closeErrors() (func(*Conn), chan error) {
	errs := make(chan error, 64)
	return func(c *Conn) { errs <- c.Err() }, errs
}

// expectClosed fails unless the server closes c: a read ends with EOF or a reset
// rather than a frame or rawConn's 5 s deadline.
func expectClosed(t *testing.T, c *rawConn) {
	t.Helper()
	if cmd, err := c.read(); !errors.Is(err, io.EOF) && !isConnReset(err) {
		t.Fatalf("server sent %v, %v; want the connection closed", cmd, err)
	}
}

func TestIdleConnectionClosed(t *testing.T) {
	const idle = 200 * time.Millisecond
	onClose, closed := closeErrors()
	srv := startServer(t, ServerConfig{IdleTimeout: idle, OnClose: onClose}, func(s *Server) { s.Handle(HeartBeat, echo, nil) })
	c := dialRaw(t, srv.addr)
	sent := time.Now() // the server receives the request after this
	c.roundTrip(HeartBeat)
	expectClosed(t, c)
	if waited := time.Since(sent); waited < idle {
		t.Errorf("closed %v after the last request, before the idle timeout of %v", waited, idle)
	}
	if err := <-closed; !errors.Is(err, ErrIdle) {
		t.Errorf("closed with %v, want ErrIdle", err)
	}
	if logs := srv.logs.String(); !containsN(logs, evIdle.msg, 1) {
		t.Errorf("idle close not logged once:\n%s", logs)
	}
}

// A connection that sends more often than the idle timeout stays open. Each attempt
// sends a heartbeat every idle/10 for three idle timeouts; an attempt in which the test
// itself stalled for half the timeout (a loaded machine) proves nothing and is retried.
func TestActiveConnectionNotClosedAsIdle(t *testing.T) {
	const idle = 200 * time.Millisecond
	srv := startServer(t, ServerConfig{IdleTimeout: idle}, func(s *Server) { s.Handle(HeartBeat, echo, nil) })
	for attempt := 1; attempt <= 5; attempt++ {
		c := dialRaw(t, srv.addr)
		start := time.Now()
		last, stalled := start, false
		for time.Since(start) < 3*idle && !stalled {
			req := NewRequest(HeartBeat, nil, nil)
			c.send(req)
			if now := time.Now(); now.Sub(last) >= idle/2 {
				stalled = true
			} else {
				last = now
			}
			resp, err := c.read()
			if err != nil && !stalled {
				t.Fatalf("connection sending every %v closed after %v: %v", idle/10, time.Since(start), err)
			}
			if err == nil && (resp.Opaque != req.Opaque || resp.Code != Success) {
				t.Fatalf("heartbeat answered %v", resp)
			}
			time.Sleep(idle / 10)
		}
		c.nc.Close()
		if !stalled {
			return
		}
		t.Logf("attempt %d: the test stalled for %v or more; again", attempt, idle/2)
	}
	t.Skip("the machine is too loaded to send every 20 ms")
}

func TestUnfinishedFrameClosed(t *testing.T) {
	const frameTimeout = 300 * time.Millisecond
	header := binary.BigEndian.AppendUint32(nil, 100) // announces 100 bytes
	for _, tc := range []struct {
		name  string
		write func(c *rawConn, stop <-chan struct{})
	}{
		{"slowloris", func(c *rawConn, stop <-chan struct{}) {
			// One byte every 20 ms: never idle, never a whole frame.
			for _, b := range append(header, make([]byte, 96)...) {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				if _, err := c.nc.Write([]byte{b}); err != nil {
					return
				}
			}
		}},
		{"frame shorter than announced", func(c *rawConn, _ <-chan struct{}) {
			c.nc.Write(append(header, make([]byte, 50)...))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onClose, closed := closeErrors()
			srv := startServer(t, ServerConfig{IdleTimeout: time.Minute, FrameTimeout: frameTimeout, OnClose: onClose}, func(s *Server) { s.Handle(HeartBeat, echo, nil) })
			good := dialRaw(t, srv.addr)
			c := dialRaw(t, srv.addr)
			stop := make(chan struct{})
			wrote := make(chan struct{})
			start := time.Now()
			go func() { defer close(wrote); tc.write(c, stop) }()
			expectClosed(t, c)
			close(stop)
			<-wrote
			if waited := time.Since(start); waited < frameTimeout {
				t.Errorf("closed %v after the frame began, before the frame timeout of %v", waited, frameTimeout)
			}
			if err := <-closed; !errors.Is(err, ErrFrameTimeout) {
				t.Errorf("closed with %v, want ErrFrameTimeout", err)
			}
			good.roundTrip(HeartBeat) // the other connection is not affected
		})
	}
}

func TestFrameTakingMoreThanOneReadIsServed(t *testing.T) {
	srv := startServer(t, ServerConfig{IdleTimeout: time.Minute, FrameTimeout: time.Minute}, func(s *Server) { s.Handle(HeartBeat, echo, nil) })
	c := dialRaw(t, srv.addr)
	req := NewRequest(HeartBeat, nil, make([]byte, 1<<20))
	frame, err := Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(frame); i += 64 << 10 {
		c.write(frame[i:min(i+64<<10, len(frame))])
	}
	if resp := c.mustRead(); resp.Opaque != req.Opaque || len(resp.Body) != 1<<20 {
		t.Fatalf("answer to a 1 MiB frame: %v", resp)
	}
	c.roundTrip(HeartBeat)
}
