package remoting

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"
)

// pipeConn returns a Conn over one end of a synchronous in-memory pipe, and the other
// end: nothing reaches the peer until it reads.
func pipeConn(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	local, peer := net.Pipe()
	c := newConn(local, dialedConnConfig(DefaultMaxFrameSize, slog.New(slog.DiscardHandler)), func(*Conn, *Command) {})
	go c.readLoop()
	t.Cleanup(func() { peer.Close(); c.closeWith(ErrClosed) })
	return c, peer
}

func TestSendWaitsForSlowPeer(t *testing.T) {
	c, peer := pipeConn(t)
	const frameSize = 1 << 20
	sent := make(chan int, 64)
	go func() {
		for i := range 16 {
			if err := c.Send(&Command{Opaque: int32(i), Body: make([]byte, frameSize)}); err != nil {
				return
			}
			sent <- i
		}
	}()
	time.Sleep(100 * time.Millisecond)
	// Send queues up to maxUnsentBytes (4 MiB, counting the frame stuck in the write)
	// and then waits.
	if n := len(sent); n > 5 {
		t.Fatalf("%d frames of 1 MiB queued for a peer that reads nothing", n)
	}
	r := bufio.NewReader(peer)
	for i := range 16 {
		frame, err := ReadFrame(r, DefaultMaxFrameSize)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if cmd, err := Decode(frame); err != nil || cmd.Opaque != int32(i) || len(cmd.Body) != frameSize {
			t.Fatalf("frame %d decoded as %v, %v", i, cmd, err)
		}
	}
	if n := len(sent); n != 16 {
		t.Fatalf("%d of 16 sends returned once the peer read everything", n)
	}
}

func TestCloseWritesQueuedFrames(t *testing.T) {
	c, peer := pipeConn(t)
	closed := make(chan struct{})
	go func() {
		for i := range 3 {
			c.Send(&Command{Opaque: int32(i), Flag: flagResponse})
		}
		c.Close()
		close(closed)
	}()
	r := bufio.NewReader(peer)
	for i := range 3 {
		frame, err := ReadFrame(r, DefaultMaxFrameSize)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if cmd, _ := Decode(frame); cmd == nil || cmd.Opaque != int32(i) {
			t.Fatalf("frame %d: %v", i, cmd)
		}
	}
	if _, err := ReadFrame(r, DefaultMaxFrameSize); !errors.Is(err, io.EOF) {
		t.Fatalf("after the queued frames: %v, want EOF", err)
	}
	<-closed
	if err := c.Send(&Command{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close: %v, want ErrClosed", err)
	}
	if _, err := c.Invoke(t.Context(), NewRequest(HeartBeat, nil, nil)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Invoke after Close: %v, want ErrClosed", err)
	}
}

func TestCloseFailsPendingInvoke(t *testing.T) {
	c, peer := pipeConn(t)
	go io.Copy(io.Discard, peer)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Invoke(t.Context(), NewRequest(HeartBeat, nil, nil))
		errc <- err
	}()
	for c.pendingCount() == 0 {
		time.Sleep(time.Millisecond)
	}
	peer.Close() // the peer goes away without answering
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("pending Invoke: %v, want ErrClosed", err)
	}
	if c.Err() == nil || !bytes.Contains([]byte(c.Err().Error()), []byte("EOF")) {
		t.Errorf("Err() = %v, want the EOF that closed it", c.Err())
	}
}

func TestInvokeGivesUpOnFullSendQueue(t *testing.T) {
	c, _ := pipeConn(t) // the peer never reads
	for c.queuedBytes() < maxUnsentBytes {
		if err := c.Send(&Command{Body: make([]byte, 1<<20)}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	for name, invoke := range map[string]func() error{
		"Invoke": func() error { _, err := c.Invoke(ctx, NewRequest(HeartBeat, nil, nil)); return err },
		"InvokeAsync": func() error {
			return c.InvokeAsync(ctx, NewRequest(HeartBeat, nil, nil), func(*Command, error) {})
		},
		"InvokeOnewayContext": func() error { return c.InvokeOnewayContext(ctx, NewRequest(HeartBeat, nil, nil)) },
	} {
		if err := invoke(); !errors.Is(err, ErrTimeout) {
			t.Errorf("%s with a full send queue: %v, want ErrTimeout", name, err)
		}
	}
	if n := c.pendingCount(); n != 0 {
		t.Errorf("%d invocations left pending", n)
	}
}

func (c *Conn) queuedBytes() int64 { return c.unsent.Load() }
