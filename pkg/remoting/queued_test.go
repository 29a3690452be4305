package remoting

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// serverPipeConn is a server-side Conn over a pipe whose peer never reads: the first
// frame sent blocks in the write, the rest queue.
func serverPipeConn(t *testing.T, perConn, total int64) *Conn {
	t.Helper()
	local, peer := net.Pipe()
	c := newConn(local, connConfig{
		maxFrame:       DefaultMaxFrameSize,
		maxQueued:      perConn,
		closeSlow:      true,
		maxQueuedTotal: total,
		log:            slog.New(slog.DiscardHandler),
	}, func(*Conn, *Command) {})
	go c.readLoop()
	t.Cleanup(func() { peer.Close(); c.closeWith(ErrClosed) })
	return c
}

func sendBody(t *testing.T, c *Conn, size int) error {
	t.Helper()
	return c.Send(&Command{Flag: flagResponse, Body: make([]byte, size)})
}

func TestPeerOverItsQueueLimitClosed(t *testing.T) {
	c := serverPipeConn(t, 1<<20, 1<<30)
	for range 3 {
		if err := sendBody(t, c, 300<<10); err != nil {
			t.Fatal(err)
		}
	}
	if err := sendBody(t, c, 300<<10); !errors.Is(err, ErrClosed) || !errors.Is(c.Err(), ErrSlowPeer) {
		t.Fatalf("send past 1 MiB queued: %v, Err %v; want the connection closed as a slow peer", err, c.Err())
	}
	if n := c.queuedBytes(); n != 0 {
		t.Errorf("%d bytes still counted for the closed connection", n)
	}
}

func TestOneFrameLargerThanTheLimitsIsSent(t *testing.T) {
	c := serverPipeConn(t, 64<<10, 64<<10)
	if err := sendBody(t, c, 1<<20); err != nil || c.Err() != nil {
		t.Fatalf("a lone frame larger than the limits: %v, %v", err, c.Err())
	}
}

// When the process's queued bytes would pass the limit, the connection with the most
// queued is closed, not the one sending.
func TestProcessQueueLimitClosesTheLargest(t *testing.T) {
	if n := QueuedBytes(); n != 0 {
		t.Fatalf("%d bytes queued before the test", n)
	}
	const limit = 1 << 20
	large, small, sender := serverPipeConn(t, limit, limit), serverPipeConn(t, limit, limit), serverPipeConn(t, limit, limit)
	for _, s := range []struct {
		c    *Conn
		size int
	}{{large, 300 << 10}, {large, 300 << 10}, {small, 100 << 10}, {sender, 400 << 10}} {
		if err := sendBody(t, s.c, s.size); err != nil {
			t.Fatal(err)
		}
	}
	if !errors.Is(large.Err(), ErrSlowPeer) || small.Err() != nil || sender.Err() != nil {
		t.Fatalf("errors large %v, small %v, sender %v; want only the largest closed", large.Err(), small.Err(), sender.Err())
	}
	if n, want := QueuedBytes(), small.queuedBytes()+sender.queuedBytes(); n != want || n > limit {
		t.Errorf("process counts %d bytes; the open connections hold %d, the limit is %d", n, want, limit)
	}
}

// Fifty clients flood requests whose replies they never read, while a healthy one
// sends its requests one after the other on its own connection: the process's queued
// bytes stay within the limit, the flooders are closed, and every healthy request is
// answered, none refused as busy. They share one pool.
func TestNonReadingFloodersClosedHealthyServed(t *testing.T) {
	const (
		flooders  = 50
		perConn   = 256 << 10
		total     = 1 << 20 // four flooders near their own limit reach it
		replySize = 64 << 10
		batch     = 100 // requests per write
		writes    = 200 // at most, per flooder: each writes until the server closes it
	)
	queued.peak.Store(QueuedBytes())
	reply := make([]byte, replySize)
	var slowClosed atomic.Int32
	allClosed := make(chan struct{})
	srv := startServer(t, ServerConfig{
		MaxQueuedBytesPerConnection: perConn,
		MaxQueuedBytesTotal:         total,
		OnClose: func(c *Conn) {
			if errors.Is(c.Err(), ErrSlowPeer) && slowClosed.Add(1) == flooders {
				close(allClosed)
			}
		},
	}, func(s *Server) {
		// The broker's send pool. Its workers used to wait on replies the flooders did
		// not read, until it was full and refused everyone.
		pool := s.NewPool("send", 4, 10000)
		s.Handle(SendMessage, HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
			resp := req.NewResponse(Success, "")
			resp.BodyParts = [][]byte{reply}
			return resp
		}), pool)
		s.Handle(HeartBeat, echo, pool)
	})

	var requests []byte
	for range batch {
		frame, err := Encode(NewRequest(SendMessage, nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		requests = append(requests, frame...)
	}
	var wg sync.WaitGroup
	for range flooders {
		nc, err := net.Dial("tcp", srv.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		nc.(*net.TCPConn).SetReadBuffer(4 << 10)
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc.SetWriteDeadline(time.Now().Add(20 * time.Second))
			for range writes {
				if _, err := nc.Write(requests); err != nil {
					return // closed by the server
				}
			}
		}()
	}

	healthy := dialRaw(t, srv.addr)
	answered, deadline := 0, time.Now().Add(60*time.Second)
	for flooding := true; flooding || answered < 20; answered++ {
		select {
		case <-allClosed:
			flooding = false
		default:
		}
		if resp := healthy.roundTrip(HeartBeat); resp.Code != Success {
			t.Fatalf("healthy request %d answered %v during the flood", answered, resp)
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d healthy requests, %d of %d flooders closed", answered, slowClosed.Load(), flooders)
		}
	}
	wg.Wait()
	if peak := queued.peak.Load(); peak > total {
		t.Errorf("%d bytes queued at the peak, limit %d", peak, total)
	}
	t.Logf("%d healthy requests answered; peak queued %d KiB", answered, queued.peak.Load()>>10)
	if logs := srv.logs.String(); !containsN(logs, evUnread.msg, 1) {
		t.Errorf("want one line for the closes from 127.0.0.1, the rest counted:\n%.2000s", logs)
	}
	healthy.roundTrip(HeartBeat)
}
