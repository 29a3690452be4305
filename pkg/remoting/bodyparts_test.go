package remoting

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// releaseCounter counts OnWritten calls of the commands it made.
type releaseCounter struct {
	t     *testing.T
	calls atomic.Int64
	over  atomic.Int64 // commands released more than once
}

func (rc *releaseCounter) cmd(opaque int32, parts ...string) *Command {
	c := &Command{Opaque: opaque, Flag: flagResponse, Body: []byte("<")}
	for _, p := range parts {
		c.BodyParts = append(c.BodyParts, []byte(p))
	}
	var once atomic.Int32
	c.OnWritten = func() {
		if once.Add(1) > 1 {
			rc.over.Add(1)
		}
		rc.calls.Add(1)
	}
	return c
}

// wait fails unless exactly want commands were released, each once.
func (rc *releaseCounter) wait(want int64) {
	rc.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for rc.calls.Load() < want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // a late second call would show now
	if got, over := rc.calls.Load(), rc.over.Load(); got != want || over != 0 {
		rc.t.Fatalf("OnWritten ran %d times (%d commands more than once), want %d", got, over, want)
	}
}

func TestEncodeWithBodyParts(t *testing.T) {
	rc := &releaseCounter{t: t}
	c := rc.cmd(7, "ab", "", "cde")
	frame, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(frame[4:])
	if err != nil || string(got.Body) != "<abcde" || got.Opaque != 7 {
		t.Fatalf("decoded %v, %v; want body <abcde", got, err)
	}
	if c.BodyLen() != 6 || rc.calls.Load() != 0 {
		t.Fatalf("BodyLen %d, OnWritten ran %d times; Encode must not run it", c.BodyLen(), rc.calls.Load())
	}
}

func TestBodyPartsWritten(t *testing.T) {
	c, peer := pipeConn(t)
	rc := &releaseCounter{t: t}
	go func() {
		for i := range 3 {
			c.Send(rc.cmd(int32(i), "part1-", strings.Repeat("x", 100<<10), "", "-end"))
		}
	}()
	r := bufio.NewReader(peer)
	for i := range 3 {
		frame, err := ReadFrame(r, DefaultMaxFrameSize)
		if err != nil {
			t.Fatal(err)
		}
		cmd, err := Decode(frame)
		want := "<part1-" + strings.Repeat("x", 100<<10) + "-end"
		if err != nil || cmd.Opaque != int32(i) || string(cmd.Body) != want {
			t.Fatalf("frame %d: %v, %v", i, cmd, err)
		}
	}
	rc.wait(3)
}

// TestBodyPartsOverTCP sends responses with parts through Server and Client, batched
// by the writer, and a oneway request whose response the server drops.
func TestBodyPartsOverTCP(t *testing.T) {
	rc := &releaseCounter{t: t}
	s := NewServer(ServerConfig{Logger: slog.New(slog.DiscardHandler)})
	served := make(chan struct{}, 1)
	s.Handle(PullMessage, HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
		defer func() { served <- struct{}{} }()
		return rc.cmd(0, "hello ", req.Field("who"))
	}), nil)
	l, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	cl := NewClient(ClientConfig{})
	defer cl.Close()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			who := strings.Repeat("w", i)
			resp, err := cl.Invoke(t.Context(), l.Addr().String(), NewRequest(PullMessage, map[string]string{"who": who}, nil))
			if err != nil || string(resp.Body) != "<hello "+who {
				t.Errorf("response %v, %v", resp, err)
			}
			<-served
		})
	}
	wg.Wait()
	rc.wait(50)

	if err := cl.InvokeOneway(t.Context(), l.Addr().String(), NewRequest(PullMessage, nil, nil)); err != nil {
		t.Fatal(err)
	}
	<-served
	rc.wait(51)
}

// errWriteConn fails every write; reads block on the pipe.
type errWriteConn struct{ net.Conn }

func (errWriteConn) Write([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestBodyPartsReleasedOnWriteError(t *testing.T) {
	local, peer := net.Pipe()
	defer peer.Close()
	c := newConn(errWriteConn{local}, dialedConnConfig(DefaultMaxFrameSize, slog.New(slog.DiscardHandler)), func(*Conn, *Command) {})
	go c.readLoop()
	defer c.closeWith(ErrClosed)
	rc := &releaseCounter{t: t}
	if err := c.Send(rc.cmd(1, "a", "b")); err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	if !strings.Contains(c.Err().Error(), "disk on fire") {
		t.Errorf("Err() = %v", c.Err())
	}
	c.Send(rc.cmd(2, "c")) // closed by now
	rc.wait(2)
}

func TestBodyPartsReleasedWhenClosedBeforeWrite(t *testing.T) {
	c, _ := pipeConn(t) // the peer never reads: the first write blocks, the rest queue
	rc := &releaseCounter{t: t}
	big := strings.Repeat("x", 1<<20)
	n := 0
	for ; c.queuedBytes() < maxUnsentBytes; n++ {
		if err := c.Send(rc.cmd(int32(n), big)); err != nil {
			t.Fatal(err)
		}
	}
	// Senders waiting for room, one of them until its context ends.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	if err := c.InvokeOnewayContext(ctx, rc.cmd(100, big)); !errors.Is(err, ErrTimeout) {
		t.Fatalf("send to a full queue: %v, want ErrTimeout", err)
	}
	blocked := make(chan error)
	go func() { blocked <- c.Send(rc.cmd(101, big)) }()
	time.Sleep(20 * time.Millisecond)
	c.closeWith(ErrClosed)
	if err := <-blocked; !errors.Is(err, ErrClosed) {
		t.Fatalf("send waiting for room: %v, want ErrClosed", err)
	}
	if err := c.Send(rc.cmd(7, "late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after close: %v", err)
	}
	if _, err := c.Invoke(t.Context(), rc.cmd(8, "late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Invoke after close: %v", err)
	}
	if err := c.InvokeAsync(t.Context(), rc.cmd(9, "late"), func(*Command, error) {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("InvokeAsync after close: %v", err)
	}
	rc.wait(int64(n) + 5)
}

func TestBodyPartsReleasedOnEncodeError(t *testing.T) {
	c, _ := pipeConn(t)
	rc := &releaseCounter{t: t}
	cmd := rc.cmd(1, "a")
	cmd.Serialize = Binary
	cmd.ExtFields = map[string]string{strings.Repeat("k", 1<<15): "v"}
	if err := c.Send(cmd); !errors.Is(err, ErrFieldTooLong) {
		t.Fatalf("Send: %v, want ErrFieldTooLong", err)
	}
	rc.wait(1)
	// The server answers SYSTEM_ERROR in its place; the first one is still released once.
	cmd = rc.cmd(2, "b")
	cmd.ExtFields = map[string]string{strings.Repeat("k", 1<<15): "v"}
	req := &Command{Opaque: 2, Serialize: Binary}
	go sendResponse(slog.New(slog.DiscardHandler), c, req, cmd)
	rc.wait(2)
}

func TestClientReleasesWhenItCannotConnect(t *testing.T) {
	cl := NewClient(ClientConfig{DialTimeout: time.Second})
	cl.Close()
	rc := &releaseCounter{t: t}
	cl.Invoke(t.Context(), "127.0.0.1:1", rc.cmd(1))
	cl.InvokeAsync(t.Context(), "127.0.0.1:1", rc.cmd(2), func(*Command, error) {})
	cl.InvokeOneway(t.Context(), "127.0.0.1:1", rc.cmd(3))
	rc.wait(3)
}

// TestBodyPartsReleasedUnderRace closes a connection while many goroutines send: every
// command is released exactly once whether written, dropped from the queue or refused.
func TestBodyPartsReleasedUnderRace(t *testing.T) {
	for round := range 20 {
		c, peer := pipeConn(t)
		rc := &releaseCounter{t: t}
		go func() {
			r := bufio.NewReader(peer)
			for i := 0; i < round*3; i++ {
				if _, err := ReadFrame(r, DefaultMaxFrameSize); err != nil {
					return
				}
			}
			peer.Close()
		}()
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 20 {
					c.Send(rc.cmd(int32(g*100+i), "p", string(bytes.Repeat([]byte{'y'}, i*100))))
				}
			})
		}
		wg.Wait()
		c.closeWith(ErrClosed)
		rc.wait(8 * 20)
	}
}
