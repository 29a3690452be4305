package remoting

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/openrmq/rocketmq-operator/internal/testlog"
	"github.com/openrmq/rocketmq-operator/pkg/tlsconfig/tlstest"
)

// tlsFixture is a CA, a server certificate for 127.0.0.1 and a client certificate.
type tlsFixture struct {
	ca             *tlstest.CA
	server, client *tlstest.Leaf
}

func newTLSFixture(t *testing.T) *tlsFixture {
	ca := tlstest.NewCA(t, "test CA")
	return &tlsFixture{ca: ca, server: ca.Issue(t, "server", tlstest.Options{}), client: ca.Issue(t, "client", tlstest.Options{})}
}

func (f *tlsFixture) serverTLS(mode TLSMode) *ServerTLS {
	return &ServerTLS{Mode: mode, Config: &tls.Config{Certificates: []tls.Certificate{f.server.Pair}}}
}

// verifying is a client configuration that checks the server's certificate as crypto/tls
// does by default: chain, validity and host name.
func (f *tlsFixture) verifying() *tls.Config { return &tls.Config{RootCAs: f.ca.Pool()} }

func newTLSClient(t *testing.T, cfg *tls.Config) *Client {
	t.Helper()
	cl := NewClient(ClientConfig{TLS: cfg, Logger: slog.New(slog.DiscardHandler), DialTimeout: 5 * time.Second})
	t.Cleanup(func() { cl.Close() })
	return cl
}

// echoOver sends a request with body over cl and checks the body comes back.
func echoOver(t *testing.T, cl *Client, addr string, body []byte) error {
	t.Helper()
	resp, err := cl.Invoke(testContext(t), addr, NewRequest(HeartBeat, map[string]string{"k": "v"}, body))
	if err != nil {
		return err
	}
	if resp.Code != Success || !bytes.Equal(resp.Body, body) || resp.ExtFields["k"] != "v" {
		t.Fatalf("echo: code %d, %d bytes back of %d, fields %v", resp.Code, len(resp.Body), len(body), resp.ExtFields)
	}
	return nil
}

func TestTLSPermissiveServesTLSAndPlainOnOnePort(t *testing.T) {
	f := newTLSFixture(t)
	srv := startServer(t, ServerConfig{TLS: f.serverTLS(TLSPermissive)}, func(s *Server) { s.Handle(HeartBeat, echo, nil) })
	secure := newTLSClient(t, f.verifying())
	plain := newTestClient(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: many TLS records each way
	for _, body := range [][]byte{[]byte("small"), big} {
		if err := echoOver(t, secure, srv.addr, body); err != nil {
			t.Fatalf("TLS client: %v", err)
		}
		if err := echoOver(t, plain, srv.addr, body); err != nil {
			t.Fatalf("plain-text client: %v", err)
		}
	}
	c, err := secure.Conn(testContext(t), srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := c.TLS(); !ok || st.Version < tls.VersionTLS12 {
		t.Errorf("client connection: TLS %v, version %x", ok, st.Version)
	}
	var tlsConns, plainConns int
	for _, sc := range srv.Conns() {
		if _, ok := sc.TLS(); ok {
			tlsConns++
		} else {
			plainConns++
		}
	}
	if tlsConns != 1 || plainConns != 1 {
		t.Errorf("server connections: %d TLS, %d plain; want one of each", tlsConns, plainConns)
	}
	if n := srv.TLSCounters(); n.TLS.Load() != 1 || n.Plain.Load() != 1 {
		t.Errorf("counters: %d TLS, %d plain", n.TLS.Load(), n.Plain.Load())
	}
}

func TestTLSEnforcingRefusesPlainText(t *testing.T) {
	f := newTLSFixture(t)
	onClose, closed := closeErrors()
	srv := startServer(t, ServerConfig{TLS: f.serverTLS(TLSEnforcing), OnClose: onClose}, func(s *Server) { s.Handle(HeartBeat, echo, nil) })
	for i := range 3 {
		plain := newTestClient(t)
		if err := echoOver(t, plain, srv.addr, []byte("x")); !errors.Is(err, ErrClosed) {
			t.Fatalf("plain-text request %d: %v, want the connection closed", i, err)
		}
		if err := <-closed; !errors.Is(err, ErrPlainRefused) {
			t.Fatalf("closed with %v, want ErrPlainRefused", err)
		}
	}
	if err := echoOver(t, newTLSClient(t, f.verifying()), srv.addr, []byte("x")); err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	if logs := srv.logs.String(); !containsN(logs, evPlainRefused.msg, 1) {
		t.Errorf("three refusals from one address, want one line:\n%s", logs)
	}
	if n := srv.TLSCounters().PlainRefused.Load(); n != 3 {
		t.Errorf("PlainRefused = %d, want 3", n)
	}
}

func TestTLSDisabledRefusesClientHello(t *testing.T) {
	f := newTLSFixture(t)
	srv := startServer(t, ServerConfig{TLS: &ServerTLS{Mode: TLSDisabled}}, func(s *Server) { s.Handle(HeartBeat, echo, nil) })
	if err := echoOver(t, newTLSClient(t, f.verifying()), srv.addr, []byte("x")); err == nil {
		t.Fatal("a TLS client was served by a server with TLS disabled")
	}
	if err := echoOver(t, newTestClient(t), srv.addr, []byte("x")); err != nil {
		t.Fatalf("plain-text client: %v", err)
	}
	if logs := srv.logs.String(); !containsN(logs, evTLSRefused.msg, 1) {
		t.Errorf("refusal not logged once:\n%s", logs)
	}
}

// keepTLSConn opens a TLS connection and proves it works; the test then checks that
// what it does to other connections leaves this one working.
func keepTLSConn(t *testing.T, f *tlsFixture, addr string) *Client {
	t.Helper()
	cl := newTLSClient(t, f.verifying())
	if err := echoOver(t, cl, addr, []byte("before")); err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	return cl
}

// errRawPeer is what a peer of raw bytes returns: it is never served.
var errRawPeer = errors.New("raw bytes")

func TestTLSBadHandshakesCloseOnlyTheirConnection(t *testing.T) {
	f := newTLSFixture(t)
	other := tlstest.NewCA(t, "another CA")
	const handshake = 300 * time.Millisecond
	cases := []struct {
		name   string
		mode   TLSMode
		verify bool // the server asks for and verifies client certificates
		peer   func(t *testing.T, addr string) error
		event  *logEvent
		want   error // the error the server closes with
	}{
		{"garbage instead of a ClientHello", TLSPermissive, false, func(t *testing.T, addr string) error {
			c := dialRaw(t, addr)
			c.write(append([]byte{0x16}, bytes.Repeat([]byte{0xff}, 64)...))
			expectClosed(t, c)
			return errRawPeer
		}, evHandshakeFailed, ErrHandshake},
		{"a ClientHello that never finishes", TLSPermissive, false, func(t *testing.T, addr string) error {
			c := dialRaw(t, addr)
			sent := time.Now()
			c.write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}) // a record header of 512 bytes, then one
			expectClosed(t, c)
			if waited := time.Since(sent); waited < handshake {
				t.Errorf("closed after %v, before the handshake timeout of %v", waited, handshake)
			}
			return errRawPeer
		}, evHandshakeTimeout, ErrHandshakeTimeout},
		{"a peer that sends nothing", TLSEnforcing, false, func(t *testing.T, addr string) error {
			c := dialRaw(t, addr)
			expectClosed(t, c)
			return errRawPeer
		}, evHandshakeTimeout, ErrHandshakeTimeout},
		{"an expired server certificate", TLSPermissive, false, nil, evHandshakeFailed, ErrHandshake},
		{"a server certificate for another host", TLSPermissive, false, nil, evHandshakeFailed, ErrHandshake},
		{"a client certificate from another CA", TLSEnforcing, true, func(t *testing.T, addr string) error {
			cfg := f.verifying()
			cfg.Certificates = []tls.Certificate{other.Issue(t, "intruder", tlstest.Options{}).Pair}
			return echoOver(t, newTLSClient(t, cfg), addr, []byte("x"))
		}, evHandshakeFailed, ErrHandshake},
		{"no client certificate where one is required", TLSEnforcing, true, func(t *testing.T, addr string) error {
			return echoOver(t, newTLSClient(t, f.verifying()), addr, []byte("x"))
		}, evHandshakeFailed, ErrHandshake},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := f.serverTLS(tc.mode)
			st.HandshakeTimeout = handshake
			pair := f.server.Pair
			switch tc.name {
			case "an expired server certificate":
				now := time.Now()
				pair = f.ca.Issue(t, "expired", tlstest.Options{NotBefore: now.Add(-2 * time.Hour), NotAfter: now.Add(-time.Hour)}).Pair
			case "a server certificate for another host":
				pair = f.ca.Issue(t, "elsewhere", tlstest.Options{DNSNames: []string{"broker.elsewhere.example"}}).Pair
			}
			// Connections that are meant to work get the good certificate (SNI
			// "localhost"); the test's own ones dial 127.0.0.1 and get pair.
			good := f.server.Pair
			st.Config = &tls.Config{GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
				if h.ServerName == "localhost" {
					return &good, nil
				}
				return &pair, nil
			}}
			if tc.verify {
				st.Config.ClientAuth, st.Config.ClientCAs = tls.RequireAndVerifyClientCert, f.ca.Pool()
			}
			onClose, closed := closeErrors()
			srv := startServer(t, ServerConfig{TLS: st, OnClose: onClose}, func(s *Server) { s.Handle(HeartBeat, echo, nil) })
			_, port, _ := net.SplitHostPort(srv.addr)
			goodCfg := f.verifying()
			goodCfg.ServerName = "localhost"
			goodCfg.Certificates = []tls.Certificate{f.client.Pair}
			kept := newTLSClient(t, goodCfg)
			if err := echoOver(t, kept, srv.addr, []byte("before")); err != nil {
				t.Fatalf("TLS client: %v", err)
			}

			peer := tc.peer
			if peer == nil { // a verifying client that dials 127.0.0.1, so gets pair
				peer = func(t *testing.T, addr string) error {
					return echoOver(t, newTLSClient(t, f.verifying()), net.JoinHostPort("127.0.0.1", port), []byte("x"))
				}
			}
			if err := peer(t, srv.addr); err == nil {
				t.Fatal("the bad peer was served")
			}
			select {
			case err := <-closed:
				if !errors.Is(err, tc.want) {
					t.Errorf("server closed the connection with %v, want %v", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the server did not close the bad connection")
			}
			if logs := srv.logs.String(); !containsN(logs, tc.event.msg, 1) {
				t.Errorf("want one %q line:\n%s", tc.event.msg, logs)
			}
			if err := echoOver(t, kept, srv.addr, []byte("after")); err != nil {
				t.Errorf("the other connection: %v", err)
			}
			if len(srv.Conns()) != 1 {
				t.Errorf("%d connections open, want the kept one", len(srv.Conns()))
			}
		})
	}
}

// A peer that connects and leaves without a byte (a TCP probe) is no log line.
func TestTLSProbeIsNotLogged(t *testing.T) {
	f := newTLSFixture(t)
	onClose, closed := closeErrors()
	srv := startServer(t, ServerConfig{TLS: f.serverTLS(TLSEnforcing), OnClose: onClose}, nil)
	nc, err := net.Dial("tcp", srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	<-closed
	if logs := srv.logs.String(); strings.Contains(logs, "level=WARN") {
		t.Errorf("a probe was logged:\n%s", logs)
	}
}

// A server in handshake with a silent peer still accepts and serves others.
func TestTLSSilentPeerDoesNotHoldAccept(t *testing.T) {
	f := newTLSFixture(t)
	srv := startServer(t, ServerConfig{TLS: f.serverTLS(TLSEnforcing)}, func(s *Server) { s.Handle(HeartBeat, echo, nil) })
	for range 3 {
		dialRaw(t, srv.addr) // silent until the test ends
	}
	for range 2 {
		keepTLSConn(t, f, srv.addr)
	}
}

func TestClientTLSConfigSetsServerName(t *testing.T) {
	base := &tls.Config{RootCAs: x509.NewCertPool()}
	got := ClientTLSConfig(base, "broker-0.example:10911")
	if got.ServerName != "broker-0.example" || got.MinVersion != tls.VersionTLS12 || base.ServerName != "" {
		t.Errorf("ServerName %q MinVersion %x; base changed: %q", got.ServerName, got.MinVersion, base.ServerName)
	}
	if ClientTLSConfig(got, "other:1") != got {
		t.Error("a complete configuration was copied")
	}
}

func TestParseTLSMode(t *testing.T) {
	for s, want := range map[string]TLSMode{"disabled": TLSDisabled, "Permissive": TLSPermissive, "ENFORCING": TLSEnforcing} {
		if m, err := ParseTLSMode(s); err != nil || m != want {
			t.Errorf("ParseTLSMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseTLSMode("strict"); err == nil {
		t.Error("strict accepted")
	}
}

// WrapListener (the HA port): the first Read negotiates; deadlines set before it
// still apply after.
func TestTLSWrapListener(t *testing.T) {
	f := newTLSFixture(t)
	for _, mode := range []TLSMode{TLSPermissive, TLSEnforcing} {
		t.Run(mode.String(), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			logs := &testlog.Buffer{}
			wl := f.serverTLS(mode).WrapListener(ln, slog.New(slog.NewTextHandler(logs, nil)))
			defer wl.Close()
			served := make(chan error, 4)
			go func() {
				for {
					c, err := wl.Accept()
					if err != nil {
						return
					}
					go func() {
						defer c.Close()
						c.SetReadDeadline(time.Now().Add(5 * time.Second))
						buf := make([]byte, 8)
						if _, err := io.ReadFull(c, buf); err != nil {
							served <- err
							return
						}
						_, err := c.Write(buf)
						served <- err
					}()
				}
			}()
			roundTrip := func(nc net.Conn) error {
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(5 * time.Second))
				msg := []byte{0, 0, 0, 0, 0, 0, 1, 2} // an HA report: offset 258
				if _, err := nc.Write(msg); err != nil {
					return err
				}
				back := make([]byte, 8)
				if _, err := io.ReadFull(nc, back); err != nil {
					return err
				}
				if !bytes.Equal(back, msg) {
					t.Errorf("echoed %v", back)
				}
				return nil
			}
			tc, err := tls.Dial("tcp", ln.Addr().String(), f.verifying())
			if err != nil {
				t.Fatal(err)
			}
			if err := roundTrip(tc); err != nil {
				t.Fatalf("TLS: %v", err)
			}
			if err := <-served; err != nil {
				t.Fatalf("TLS, server side: %v", err)
			}
			pc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			err = roundTrip(pc)
			serr := <-served
			if mode == TLSEnforcing {
				if err == nil || !errors.Is(serr, ErrPlainRefused) {
					t.Fatalf("plain text under enforcing: client %v, server %v", err, serr)
				}
				if !strings.Contains(logs.String(), evPlainRefused.msg) {
					t.Errorf("refusal not logged:\n%s", logs)
				}
			} else if err != nil || serr != nil {
				t.Fatalf("plain text under permissive: client %v, server %v", err, serr)
			}
		})
	}
}

// BenchmarkTLSConnect is one new connection and a first request (TLS 1.3, ECDSA P-256,
// no resumption), against plain text: the cost of a handshake, both sides on one
// machine.
func BenchmarkTLSConnect(b *testing.B) {
	ca := tlstest.NewCA(b, "bench CA")
	leaf := ca.Issue(b, "server", tlstest.Options{})
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
	}{{"plain", nil}, {"tls", &tls.Config{RootCAs: ca.Pool()}}} {
		b.Run(tc.name, func(b *testing.B) {
			s := NewServer(ServerConfig{Logger: slog.New(slog.DiscardHandler), TLS: &ServerTLS{Mode: TLSPermissive,
				Config: &tls.Config{Certificates: []tls.Certificate{leaf.Pair}, SessionTicketsDisabled: true}}})
			s.Handle(HeartBeat, echo, nil)
			l, err := s.Listen("127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer s.Shutdown(context.Background())
			for b.Loop() {
				cl := NewClient(ClientConfig{TLS: tc.cfg, Logger: slog.New(slog.DiscardHandler)})
				if _, err := cl.Invoke(context.Background(), l.Addr().String(), NewRequest(HeartBeat, nil, nil)); err != nil {
					b.Fatal(err)
				}
				cl.Close()
			}
		})
	}
}

// BenchmarkTLSRoundTrip is BenchmarkRoundTrip's sync case with 1 KiB bodies over one
// established connection, plain text against TLS.
func BenchmarkTLSRoundTrip(b *testing.B) {
	ca := tlstest.NewCA(b, "bench CA")
	leaf := ca.Issue(b, "server", tlstest.Options{})
	s := NewServer(ServerConfig{Logger: slog.New(slog.DiscardHandler), TLS: &ServerTLS{Mode: TLSPermissive,
		Config: &tls.Config{Certificates: []tls.Certificate{leaf.Pair}}}})
	s.Handle(SendMessageV2, HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
		return req.NewResponse(Success, "")
	}), s.NewPool("send", 4, 10000))
	l, err := s.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
	}{{"plain", nil}, {"tls", &tls.Config{RootCAs: ca.Pool()}}} {
		b.Run(tc.name, func(b *testing.B) {
			cl := NewClient(ClientConfig{TLS: tc.cfg, Logger: slog.New(slog.DiscardHandler)})
			defer cl.Close()
			b.SetBytes(1024)
			for b.Loop() {
				if _, err := cl.Invoke(context.Background(), l.Addr().String(), sendCommand(JSON)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
