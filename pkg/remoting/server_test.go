package remoting

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/internal/testlog"
)

type testServer struct {
	*Server
	addr string
	logs *testlog.Buffer
}

// startServer serves on a loopback port until the test ends. setup registers handlers.
func startServer(t *testing.T, cfg ServerConfig, setup func(*Server)) *testServer {
	t.Helper()
	logs := &testlog.Buffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := NewServer(cfg)
	if setup != nil {
		setup(s)
	}
	l, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return &testServer{Server: s, addr: l.Addr().String(), logs: logs}
}

func newTestClient(t *testing.T) *Client {
	t.Helper()
	cl := NewClient(ClientConfig{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { cl.Close() })
	return cl
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// echo answers with the request's fields and body.
var echo = HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
	resp := req.NewResponse(Success, "")
	resp.ExtFields = req.ExtFields
	resp.Body = req.Body
	return resp
})

// rawConn is a plain TCP connection for writing arbitrary bytes at a server.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (c *rawConn) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *rawConn) send(cmd *Command) {
	c.t.Helper()
	frame, err := Encode(cmd)
	if err != nil {
		c.t.Fatal(err)
	}
	c.write(frame)
}

// read returns the next command the server sent, or the read error.
func (c *rawConn) read() (*Command, error) {
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	frame, err := ReadFrame(c.r, DefaultMaxFrameSize)
	if err != nil {
		return nil, err
	}
	return Decode(frame)
}

func (c *rawConn) mustRead() *Command {
	c.t.Helper()
	cmd, err := c.read()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return cmd
}

// roundTrip sends a request for code and checks that its answer has the same opaque.
func (c *rawConn) roundTrip(code int16) *Command {
	c.t.Helper()
	req := NewRequest(code, nil, nil)
	c.send(req)
	resp := c.mustRead()
	if !resp.IsResponse() || resp.Opaque != req.Opaque {
		c.t.Fatalf("answer to opaque %d: %v", req.Opaque, resp)
	}
	return resp
}

func TestUnknownCodeAnswersNotSupported(t *testing.T) {
	srv := startServer(t, ServerConfig{}, func(s *Server) { s.Handle(HeartBeat, echo, nil) })
	cl := newTestClient(t)
	for _, ser := range []SerializeType{JSON, Binary} {
		req := NewRequest(9999, nil, nil)
		req.Serialize = ser
		resp, err := cl.Invoke(testContext(t), srv.addr, req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != RequestCodeNotSupported || !strings.Contains(resp.Remark, "9999") || !strings.Contains(resp.Remark, "not supported") {
			t.Errorf("%v: unknown code answered %v", ser, resp)
		}
		if resp.Serialize != ser {
			t.Errorf("answer to a %v request came in %v", ser, resp.Serialize)
		}
	}
}

func TestMalformedFrameClosesOnlyThatConnection(t *testing.T) {
	const maxFrame = 1024
	frame := func(mark uint32, header string) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(4+len(header)))
		b = binary.BigEndian.AppendUint32(b, mark)
		return append(b, header...)
	}
	for _, tc := range []struct {
		name  string
		bytes []byte
		log   string
	}{
		{"oversize frame", binary.BigEndian.AppendUint32(nil, maxFrame+1), "exceeds the maximum"},
		{"oversize 2 GiB frame", binary.BigEndian.AppendUint32(nil, 1<<31), "exceeds the maximum"},
		{"frame shorter than its header length field", []byte{0, 0, 0, 2, 0, 0}, "shorter than its header length"},
		{"header length beyond the frame", frame(200, `{"code":34}`), "header length exceeds the frame"},
		{"garbage JSON header", frame(12, `{"code":34,"`), "undecodable header"},
		{"binary header cut short", frame(1<<24|8, "\x00\x22\x00\x01\xb1\x00\x00\x00"), "undecodable header"},
		{"binary extFields past the header", frame(1<<24|21, "\x00\x22\x00\x01\xb1\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x09"), "undecodable header"},
		{"unknown serialize type", frame(3<<24|2, "{}"), "unknown header serialize type"},
		{"null JSON header", frame(4, "null"), "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, ServerConfig{MaxFrameSize: maxFrame}, func(s *Server) { s.Handle(HeartBeat, echo, nil) })
			good := dialRaw(t, srv.addr)
			good.roundTrip(HeartBeat)

			bad := dialRaw(t, srv.addr)
			bad.roundTrip(HeartBeat) // a healthy connection first, then it sends garbage
			bad.write(tc.bytes)
			if cmd, err := bad.read(); !errors.Is(err, io.EOF) && !isConnReset(err) {
				t.Fatalf("after %s the server sent %v, %v; want the connection closed", tc.name, cmd, err)
			}
			if logs := srv.logs.String(); !strings.Contains(logs, "closing connection after a malformed frame") || !strings.Contains(logs, tc.log) {
				t.Errorf("log does not report %q:\n%s", tc.log, logs)
			}
			// Counted (for metrics) before the connection closes, as what it is.
			want := [numConnEvents]int64{EventMalformed: 1}
			if strings.HasPrefix(tc.name, "oversize") {
				want = [numConnEvents]int64{EventOversized: 1}
			}
			if got := srv.Stats().Events; got != want {
				t.Errorf("connection events %v, want %v", got, want)
			}

			good.roundTrip(HeartBeat)
			dialRaw(t, srv.addr).roundTrip(HeartBeat)
		})
	}
}

// The (N+1)th connection is closed at once, with one log line for all refused from an
// address; once one closes, a new one is served again.
func TestConnectionLimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    ServerConfig
		reason string
	}{
		{"per server", ServerConfig{MaxConnections: 3}, "the server's limit"},
		{"per address", ServerConfig{MaxConnectionsPerAddress: 3}, "the limit per address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, tc.cfg, func(s *Server) { s.Handle(HeartBeat, echo, nil) })
			var open []*rawConn
			for range 3 {
				c := dialRaw(t, srv.addr)
				c.roundTrip(HeartBeat)
				open = append(open, c)
			}
			for range 2 {
				expectClosed(t, dialRaw(t, srv.addr))
			}
			if logs := srv.logs.String(); !containsN(logs, evRefused.msg, 1) || !strings.Contains(logs, tc.reason) {
				t.Errorf("want one refusal logged, naming %q:\n%s", tc.reason, logs)
			}

			open[0].nc.Close()
			deadline := time.Now().Add(5 * time.Second)
			for len(srv.Conns()) > 2 {
				if time.Now().After(deadline) {
					t.Fatalf("%d connections still open after one closed", len(srv.Conns()))
				}
				time.Sleep(time.Millisecond)
			}
			dialRaw(t, srv.addr).roundTrip(HeartBeat)
			open[1].roundTrip(HeartBeat)
		})
	}
}

func isConnReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "reset")
}

func TestFullPoolAnswersSystemBusy(t *testing.T) {
	started := make(chan struct{}, 4)
	release := make(chan struct{})
	srv := startServer(t, ServerConfig{}, func(s *Server) {
		pool := s.NewPool("send", 1, 1)
		s.Handle(SendMessage, HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
			started <- struct{}{}
			<-release
			return req.NewResponse(Success, "")
		}), pool)
		s.Handle(PullMessage, echo, nil) // another pool is not affected
	})
	c := dialRaw(t, srv.addr)
	first := NewRequest(SendMessage, nil, nil)
	c.send(first)
	<-started // the only worker is busy
	queued := NewRequest(SendMessage, nil, nil)
	c.send(queued) // fills the queue of one
	refused := NewRequest(SendMessage, nil, nil)
	c.send(refused)
	resp := c.mustRead()
	if resp.Opaque != refused.Opaque || resp.Code != SystemBusy || !strings.Contains(resp.Remark, "send") {
		t.Fatalf("third request answered %v; want SYSTEM_BUSY naming the pool", resp)
	}
	if resp := c.roundTrip(PullMessage); resp.Code != Success {
		t.Fatalf("request on the default pool answered %v", resp)
	}
	close(release)
	got := map[int32]int16{}
	for range 2 {
		resp := c.mustRead()
		got[resp.Opaque] = resp.Code
	}
	if got[first.Opaque] != Success || got[queued.Opaque] != Success {
		t.Fatalf("after release: %v", got)
	}
}

func TestShutdownFinishesInFlightRequest(t *testing.T) {
	started := make(chan struct{})
	finish := make(chan struct{})
	logs := &testlog.Buffer{}
	s := NewServer(ServerConfig{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	s.Handle(SendMessage, HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
		close(started)
		<-finish
		return req.NewResponse(Success, "stored")
	}), nil)
	s.Handle(HeartBeat, echo, nil)
	l, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, l.Addr().String())
	req := NewRequest(SendMessage, nil, nil)
	c.send(req)
	<-started

	shutdown := make(chan error, 1)
	go func() { shutdown <- s.Shutdown(testContext(t)) }()
	// Until the handler returns, Shutdown waits and the connection stays open; once
	// Shutdown has begun, new requests are refused.
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp := c.roundTrip(HeartBeat)
		if resp.Code == ServiceNotAvailable {
			break
		}
		if resp.Code != Success || time.Now().After(deadline) {
			t.Fatalf("heartbeat during Shutdown answered %v", resp)
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown returned %v before the in-flight request finished", err)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := net.DialTimeout("tcp", l.Addr().String(), time.Second); err == nil {
		t.Errorf("Shutdown still accepts connections")
	}

	close(finish)
	resp := c.mustRead()
	if resp.Opaque != req.Opaque || resp.Code != Success || resp.Remark != "stored" {
		t.Fatalf("in-flight request answered %v", resp)
	}
	if err := <-shutdown; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := c.read(); err == nil {
		t.Fatalf("connection still open after Shutdown")
	}
}

// flakyListener fails its first Accept the way a process out of file descriptors does.
type flakyListener struct {
	net.Listener
	failed atomic.Bool
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if !l.failed.Swap(true) {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: errors.New("too many open files")}
	}
	return l.Listener.Accept()
}

func TestServeSurvivesAcceptError(t *testing.T) {
	logs := &testlog.Buffer{}
	s := NewServer(ServerConfig{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	s.Handle(HeartBeat, echo, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(&flakyListener{Listener: l}) }()
	if resp := dialRaw(t, l.Addr().String()).roundTrip(HeartBeat); resp.Code != Success {
		t.Fatalf("after an accept error: %v", resp)
	}
	if !strings.Contains(logs.String(), "too many open files") {
		t.Errorf("accept error not logged:\n%s", logs)
	}
	if err := s.Shutdown(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve returned %v after Shutdown, want net.ErrClosed", err)
	}
}

// A handler that hands its answer to ReplyLater (a goroutine) or ReplyDeferred
// (a callback) gives its worker back: with one worker,
// a second request is served while the first still waits, and Shutdown waits for the
// late answer before closing the connection.
func TestLateReplyFreesTheWorkerAndDelaysShutdown(t *testing.T) {
	later := map[string]func(s *Server, c *Conn, req *Command, finish <-chan struct{}){
		"ReplyLater": func(s *Server, c *Conn, req *Command, finish <-chan struct{}) {
			s.ReplyLater(c, req, func() *Command {
				<-finish
				return req.NewResponse(Success, "durable")
			})
		},
		"ReplyDeferred": func(s *Server, c *Conn, req *Command, finish <-chan struct{}) {
			answer := s.ReplyDeferred(c, req)
			go func() {
				<-finish
				answer(req.NewResponse(Success, "durable"))
			}()
		},
	}
	for name, reply := range later {
		t.Run(name, func(t *testing.T) { testLateReply(t, reply) })
	}
}

func testLateReply(t *testing.T, reply func(s *Server, c *Conn, req *Command, finish <-chan struct{})) {
	finish := make(chan struct{})
	s := NewServer(ServerConfig{Logger: slog.New(slog.DiscardHandler)})
	pool := s.NewPool("one", 1, 0)
	s.Handle(SendMessage, HandlerFunc(func(_ context.Context, c *Conn, req *Command) *Command {
		reply(s, c, req, finish)
		return nil
	}), pool)
	s.Handle(HeartBeat, echo, pool)
	l, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, l.Addr().String())
	req := NewRequest(SendMessage, nil, nil)
	req.Serialize = Binary
	c.send(req)

	// The only worker is free again: the heartbeat is served, not refused as busy.
	deadline := time.Now().Add(5 * time.Second)
	for resp := c.roundTrip(HeartBeat); resp.Code != Success; resp = c.roundTrip(HeartBeat) {
		if resp.Code != SystemBusy || time.Now().After(deadline) {
			t.Fatalf("heartbeat beside a late reply answered %v", resp)
		}
		time.Sleep(time.Millisecond)
	}

	shutdown := make(chan error, 1)
	go func() { shutdown <- s.Shutdown(testContext(t)) }()
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown returned %v before the late reply was sent", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(finish)
	resp := c.mustRead()
	if resp.Opaque != req.Opaque || resp.Remark != "durable" || resp.Serialize != Binary {
		t.Fatalf("late reply %v (serialize %v), want opaque %d in the request's serialization", resp, resp.Serialize, req.Opaque)
	}
	if err := <-shutdown; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// OnReply sees every answer: the handler's, a refusal for an unknown code, a oneway
// request's dropped response, and one given later through Reply, each with its request.
func TestOnReplySeesEveryAnswer(t *testing.T) {
	type seen struct {
		req, resp int16
		suspended bool
		err       error
	}
	got := make(chan seen, 8)
	var held chan func()
	srv := startServer(t, ServerConfig{OnReply: func(req, resp *Command, elapsed time.Duration, err error) {
		if elapsed < 0 {
			t.Errorf("elapsed %v", elapsed)
		}
		got <- seen{req.Code, resp.Code, req.Suspended, err}
	}}, func(s *Server) {
		s.Handle(HeartBeat, echo, nil)
		held = make(chan func(), 1)
		s.Handle(PullMessage, HandlerFunc(func(_ context.Context, c *Conn, req *Command) *Command {
			req.Suspended = true
			held <- func() { s.Reply(c, req, req.NewResponse(PullNotFound, "")) }
			return nil
		}), nil)
	})
	cl := newTestClient(t)
	ctx := testContext(t)
	if _, err := cl.Invoke(ctx, srv.addr, NewRequest(HeartBeat, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if g := <-got; g != (seen{HeartBeat, Success, false, nil}) {
		t.Errorf("heartbeat: %+v", g)
	}
	if resp, err := cl.Invoke(ctx, srv.addr, NewRequest(999, nil, nil)); err != nil || resp.Code != RequestCodeNotSupported {
		t.Fatalf("unknown code: %v, %v", resp, err)
	}
	if g := <-got; g != (seen{999, RequestCodeNotSupported, false, nil}) {
		t.Errorf("unknown code: %+v", g)
	}
	ow := NewRequest(HeartBeat, nil, nil)
	ow.MarkOneway()
	if err := cl.InvokeOneway(ctx, srv.addr, ow); err != nil {
		t.Fatal(err)
	}
	if g := <-got; g != (seen{HeartBeat, Success, false, nil}) {
		t.Errorf("oneway: %+v", g)
	}
	done := make(chan *Command, 1)
	go func() {
		resp, _ := cl.Invoke(ctx, srv.addr, NewRequest(PullMessage, nil, nil))
		done <- resp
	}()
	(<-held)()
	if resp := <-done; resp == nil || resp.Code != PullNotFound {
		t.Fatalf("held request answered %v", resp)
	}
	if g := <-got; g != (seen{PullMessage, PullNotFound, true, nil}) {
		t.Errorf("held: %+v", g)
	}
}

func TestCodeNames(t *testing.T) {
	for code, want := range map[int16]string{SendMessageV2: "send_message_v2", HeartBeat: "heart_beat", 9999: "9999"} {
		if got := RequestCodeName(code); got != want {
			t.Errorf("RequestCodeName(%d) = %q, want %q", code, got, want)
		}
	}
	for code, want := range map[int16]string{Success: "success", SystemBusy: "system_busy", FlushDiskTimeout: "flush_disk_timeout", 777: "777"} {
		if got := ResponseCodeName(code); got != want {
			t.Errorf("ResponseCodeName(%d) = %q, want %q", code, got, want)
		}
	}
}

// An ErrHandlerFunc's error is answered SYSTEM_ERROR with the error text as remark; its
// response otherwise, nil (answered later) included.
func TestErrHandlerFunc(t *testing.T) {
	req := NewRequest(10, nil, nil)
	fail := ErrHandlerFunc(func(context.Context, *Conn, *Command) (*Command, error) {
		return nil, errors.New("bad header")
	})
	if resp := fail.ServeRemoting(context.Background(), nil, req); resp.Code != SystemError || resp.Remark != "bad header" {
		t.Errorf("error answered %d %q", resp.Code, resp.Remark)
	}
	ok := ErrHandlerFunc(func(_ context.Context, _ *Conn, r *Command) (*Command, error) {
		return r.NewResponse(TopicNotExist, "no topic"), nil
	})
	if resp := ok.ServeRemoting(context.Background(), nil, req); resp.Code != TopicNotExist || resp.Remark != "no topic" {
		t.Errorf("response became %d %q", resp.Code, resp.Remark)
	}
	later := ErrHandlerFunc(func(context.Context, *Conn, *Command) (*Command, error) { return nil, nil })
	if resp := later.ServeRemoting(context.Background(), nil, req); resp != nil {
		t.Errorf("answered later became %v", resp)
	}
}

// TestUnmappedFieldCodes: a JSON request whose code the server lists comes to its handler
// without an ExtFields map, its fields read alike through Field, LookupField, the header
// decoders and Fields; other codes and binary headers come with the map.
func TestUnmappedFieldCodes(t *testing.T) {
	type seen struct {
		mapped     bool
		topic      string
		missing    bool
		header     benchSendHeader
		decodeErr  error
		fieldsSize int
	}
	got := make(chan seen, 1)
	record := HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
		s := seen{mapped: req.ExtFields != nil, topic: req.Field("b")}
		_, found := req.LookupField("nope")
		s.missing = !found
		s.decodeErr = DecodeHeader(req, &s.header)
		s.fieldsSize = len(req.Fields())
		got <- s
		return req.NewResponse(Success, "")
	})
	srv := startServer(t, ServerConfig{UnmappedFieldCodes: []int16{SendMessageV2}}, func(s *Server) {
		s.Handle(SendMessageV2, record, nil)
		s.Handle(SendMessage, record, nil)
	})
	raw := dialRaw(t, srv.addr)
	for _, tc := range []struct {
		name       string
		code       int16
		serialize  SerializeType
		wantMapped bool
	}{
		{"JSON, listed", SendMessageV2, JSON, false},
		{"JSON, not listed", SendMessage, JSON, true},
		{"binary, listed", SendMessageV2, Binary, true},
	} {
		req := NewRequest(tc.code, maps.Clone(sendHeaderFields), nil)
		req.Serialize = tc.serialize
		raw.send(req)
		if resp := raw.mustRead(); resp.Code != Success {
			t.Fatalf("%s: %v", tc.name, resp)
		}
		s := <-got
		if s.mapped != tc.wantMapped {
			t.Errorf("%s: handler saw ExtFields mapped %v, want %v", tc.name, s.mapped, tc.wantMapped)
		}
		if s.topic != sendHeaderFields["b"] || !s.missing || s.decodeErr != nil ||
			s.header.Topic != sendHeaderFields["b"] || s.header.QueueID != 3 || s.fieldsSize != len(sendHeaderFields) {
			t.Errorf("%s: handler read %+v", tc.name, s)
		}
	}
	// Java's bytes, code first as fastjson writes it; and a name sent twice, whose last
	// value counts as it would in a map.
	raw.write(readFixture(t, "java_json_send"))
	raw.mustRead()
	if s := <-got; s.mapped || s.header.Topic != "TopicTest" || s.header.ProducerGroup != "please_rename_unique_group_name" {
		t.Errorf("Java's send: handler read %+v", s)
	}
	header := `{"code":310,"extFields":{"b":"first","a":"g","c":"T","d":"4","e":"1","f":"0","g":"1","h":"0","b":"last"},"flag":0,"opaque":7}`
	raw.write(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, uint32(4+len(header))), uint32(len(header))))
	raw.write([]byte(header))
	raw.mustRead()
	if s := <-got; s.mapped || s.topic != "last" || s.header.Topic != "last" || s.fieldsSize != 8 {
		t.Errorf("a repeated name: handler read %+v", s)
	}
}

// Requests of the codes in ReusedFrameCodes are read into reused buffers, of their
// frame's size class, and nothing else is: four connections pipeline requests whose
// bodies, of sizes across the classes and past the largest, each handler checks byte by
// byte against the pattern its header names, while the buffers go round (the race
// detector sees a buffer reused under a running handler).
func TestReusedFrames(t *testing.T) {
	type seen struct {
		code   int16
		size   int // the frame's
		reused bool
		class  int
		bodyOK bool
	}
	got := make(chan seen, 64)
	check := HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
		s := seen{code: req.Code, size: req.size, reused: req.frame != nil}
		if s.reused {
			s.class = frameClass(cap(*req.frame))
		}
		seed, _ := strconv.Atoi(req.Field("seed"))
		s.bodyOK = bytes.Equal(req.Body, patternBody(seed, len(req.Body)))
		got <- s
		return req.NewResponse(Success, "")
	})
	srv := startServer(t, ServerConfig{ReusedFrameCodes: []int16{SendMessage}}, func(s *Server) {
		s.Handle(SendMessage, check, s.NewPool("send", 2, 1000))
		s.Handle(PullMessage, check, nil)
	})
	sizes := []int{0, 100, 600, 1500, 4000, 40 << 10, maxReusedFrame - 200, maxReusedFrame + 1000}
	const conns, rounds = 4, 40
	var wg sync.WaitGroup
	for i := range conns {
		raw := dialRaw(t, srv.addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				seed := i*rounds + r
				code := SendMessage
				if r%5 == 4 {
					code = PullMessage
				}
				size := sizes[seed%len(sizes)]
				raw.send(NewRequest(code, map[string]string{"seed": strconv.Itoa(seed)}, patternBody(seed, size)))
			}
			for range rounds {
				if resp, err := raw.read(); err != nil || resp.Code != Success {
					t.Errorf("answered %v, %v", resp, err)
					return
				}
			}
		}()
	}
	var reused int
	for range conns * rounds {
		s := <-got
		if !s.bodyOK {
			t.Fatalf("a handler of code %d read a body other than the one sent", s.code)
		}
		want := s.code == SendMessage && s.size <= maxReusedFrame
		if s.reused != want || s.reused && s.class != frameClass(s.size) {
			t.Errorf("a frame of %d bytes, code %d: reused %v (class %d), want %v", s.size, s.code, s.reused, s.class, want)
		}
		if s.reused {
			reused++
		}
	}
	wg.Wait()
	if reused == 0 {
		t.Error("no frame was read into a reused buffer")
	}
}

func patternBody(seed, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*31 + i*7)
	}
	return b
}

func TestFrameClass(t *testing.T) {
	for _, tc := range []struct{ n, class int }{
		{1, 0}, {minReusedFrame, 0}, {minReusedFrame + 1, 1}, {1024, 1}, {1500, 2}, {maxReusedFrame, 7},
	} {
		if got := frameClass(tc.n); got != tc.class || minReusedFrame<<got < tc.n {
			t.Errorf("frameClass(%d) = %d, want %d", tc.n, got, tc.class)
		}
	}
}
