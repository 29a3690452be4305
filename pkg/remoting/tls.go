package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// TLSMode is RocketMQ's tls.server.mode: what a listener does with plain-text and TLS
// connections.
type TLSMode uint8

const (
	// TLSDisabled serves plain text only; a connection that opens with a TLS ClientHello
	// is closed (4.9's "disabled").
	TLSDisabled TLSMode = iota
	// TLSPermissive serves both on the same port, told apart by a connection's first
	// byte, so that clients can move to TLS one at a time (4.9's default).
	TLSPermissive
	// TLSEnforcing serves TLS only; a plain-text connection is closed at once.
	TLSEnforcing
)

// ParseTLSMode reads a tls.server.mode value: disabled, permissive or enforcing, in any
// case. Java takes anything else for permissive; we refuse it.
func ParseTLSMode(s string) (TLSMode, error) {
	for m := TLSDisabled; m <= TLSEnforcing; m++ {
		if equalFoldASCII(s, m.String()) {
			return m, nil
		}
	}
	return TLSDisabled, fmt.Errorf("remoting: TLS mode %q is not disabled, permissive or enforcing", s)
}

func (m TLSMode) String() string {
	switch m {
	case TLSDisabled:
		return "disabled"
	case TLSPermissive:
		return "permissive"
	case TLSEnforcing:
		return "enforcing"
	}
	return fmt.Sprintf("TLSMode(%d)", uint8(m))
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// ServerTLS is how a server's listeners speak TLS (ServerConfig.TLS, and the broker's HA
// port through WrapListener).
//
// Telling TLS from plain text: a TLS connection opens with a handshake record, whose
// first byte is 22 (0x16); a RocketMQ frame opens with the high byte of its length,
// which is at most 0x01 for frames up to 16 MiB (the broker's HA port opens with the
// high byte of a commitlog offset, 0x00 as well). So the first byte decides, as in
// 4.9's HandshakeHandler. It is read, with what else arrived with it, in the
// connection's own goroutine and under HandshakeTimeout, then handed on: to the frame
// reader for plain text, or to a TLS server handshake that must finish by the same
// deadline. A peer that sends nothing, or half a ClientHello, holds one goroutine and
// one connection slot until then.
type ServerTLS struct {
	Mode TLSMode
	// Config is the server side of the handshake: the certificate (GetCertificate or
	// GetConfigForClient when it rotates) and client authentication. Required unless
	// Mode is TLSDisabled. MinVersion below TLS 1.2 is raised to it.
	Config *tls.Config
	// HandshakeTimeout bounds the wait for the first byte and the TLS handshake.
	// [DefaultHandshakeTimeout]
	HandshakeTimeout time.Duration
}

// DefaultHandshakeTimeout is Netty's SslHandler default, which 4.9 brokers run with.
const DefaultHandshakeTimeout = 10 * time.Second

// tlsRecordHandshake is the content type of a TLS handshake record, the first byte of
// every ClientHello (RFC 8446 section 5.1).
const tlsRecordHandshake = 0x16

// maxPlainFrameSize is the largest frame a server may accept when TLS is on: a frame
// whose length's high byte were 0x16 or more could not be told from a ClientHello.
const maxPlainFrameSize = tlsRecordHandshake<<24 - 1

var (
	// ErrPlainRefused closes a plain-text connection to a server in enforcing mode.
	ErrPlainRefused = errors.New("remoting: plain-text connection refused: the server requires TLS (tls.server.mode=enforcing)")
	// ErrTLSRefused closes a TLS connection to a server in disabled mode.
	ErrTLSRefused = errors.New("remoting: TLS connection refused: the server has TLS disabled (tls.server.mode=disabled)")
	// ErrHandshake wraps why a TLS handshake failed.
	ErrHandshake = errors.New("remoting: TLS handshake failed")
	// ErrHandshakeTimeout closes a connection that did not finish its handshake (or
	// send its first byte) within the handshake timeout.
	ErrHandshakeTimeout = errors.New("remoting: TLS handshake not finished in time")
	// errNoFirstByte: the peer closed before sending anything (a TCP probe, a port
	// scan). Not worth a log line.
	errNoFirstByte = errors.New("remoting: connection closed before its first byte")
)

func (t *ServerTLS) handshakeTimeout() time.Duration {
	if t.HandshakeTimeout > 0 {
		return t.HandshakeTimeout
	}
	return DefaultHandshakeTimeout
}

// serverConfig is t.Config with the floor of TLS 1.2.
func (t *ServerTLS) serverConfig() *tls.Config {
	cfg := t.Config
	if cfg == nil {
		return nil
	}
	if cfg.MinVersion < tls.VersionTLS12 {
		cfg = cfg.Clone()
		cfg.MinVersion = tls.VersionTLS12
	}
	return cfg
}

// negotiate reads the first bytes of nc and, by t.Mode, returns what to speak remoting
// over: nc itself with the bytes read to be read again first (plain text), or a TLS
// connection whose handshake is done (and nil). Everything happens by the handshake
// deadline, which is cleared on success. On error the caller closes nc.
func (t *ServerTLS) negotiate(nc net.Conn, cfg *tls.Config) (net.Conn, []byte, error) {
	deadline := time.Now().Add(t.handshakeTimeout())
	nc.SetDeadline(deadline)
	buf := make([]byte, 512)
	n, err := nc.Read(buf)
	if n == 0 {
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, nil, fmt.Errorf("%w: nothing received within %v", ErrHandshakeTimeout, t.handshakeTimeout())
		case err == nil, errors.Is(err, io.EOF):
			return nil, nil, errNoFirstByte
		}
		return nil, nil, err
	}
	first := buf[:n]
	if first[0] != tlsRecordHandshake {
		if t.Mode == TLSEnforcing {
			return nil, nil, ErrPlainRefused
		}
		nc.SetDeadline(time.Time{})
		return nc, first, nil
	}
	if t.Mode == TLSDisabled || cfg == nil {
		return nil, nil, ErrTLSRefused
	}
	tc := tls.Server(&replayConn{Conn: nc, pending: first}, cfg)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
			return nil, nil, fmt.Errorf("%w (%v): %v", ErrHandshakeTimeout, t.handshakeTimeout(), err)
		}
		return nil, nil, fmt.Errorf("%w: %v", ErrHandshake, err)
	}
	nc.SetDeadline(time.Time{})
	return tc, nil, nil
}

// replayConn reads pending before nc: the bytes negotiate read to decide.
type replayConn struct {
	net.Conn
	pending []byte
}

func (r *replayConn) Read(p []byte) (int, error) {
	if len(r.pending) > 0 {
		n := copy(p, r.pending)
		r.pending = r.pending[n:]
		return n, nil
	}
	return r.Conn.Read(p)
}

// tlsEvent is the log event of a negotiate error, nil for one not worth a line.
func tlsEvent(err error) *logEvent {
	switch {
	case errors.Is(err, errNoFirstByte):
		return nil
	case errors.Is(err, ErrPlainRefused):
		return evPlainRefused
	case errors.Is(err, ErrTLSRefused):
		return evTLSRefused
	case errors.Is(err, ErrHandshakeTimeout):
		return evHandshakeTimeout
	}
	return evHandshakeFailed
}

// TLSCounters counts what a server's TLS negotiation decided, for metrics.
type TLSCounters struct {
	TLS               atomic.Uint64 // connections that finished a TLS handshake
	Plain             atomic.Uint64 // plain-text connections served
	PlainRefused      atomic.Uint64 // plain-text connections closed by enforcing mode
	TLSRefused        atomic.Uint64 // TLS connections closed by disabled mode
	HandshakeFailures atomic.Uint64 // handshakes that failed or timed out
}

func (c *TLSCounters) count(tlsConn bool, err error) {
	switch {
	case err == nil && tlsConn:
		c.TLS.Add(1)
	case err == nil:
		c.Plain.Add(1)
	case errors.Is(err, ErrPlainRefused):
		c.PlainRefused.Add(1)
	case errors.Is(err, ErrTLSRefused):
		c.TLSRefused.Add(1)
	case errors.Is(err, errNoFirstByte):
	default:
		c.HandshakeFailures.Add(1)
	}
}

// WrapListener returns l with t applied to every connection it accepts, for servers
// that are not a Server (the broker's HA port). Accept returns at once; the first Read
// or Write of a connection negotiates (see ServerTLS) and fails with the reason when
// the connection is refused, which is logged on log once per peer address a minute.
func (t *ServerTLS) WrapListener(l net.Listener, log *slog.Logger) net.Listener {
	if log == nil {
		log = slog.Default()
	}
	return &tlsListener{Listener: l, t: t, cfg: t.serverConfig(), log: log, events: newLogLimiter(log, time.Now)}
}

type tlsListener struct {
	net.Listener
	t        *ServerTLS
	cfg      *tls.Config
	log      *slog.Logger
	events   *logLimiter
	Counters TLSCounters
}

func (l *tlsListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.events.flush() // the summaries of earlier minutes, as connections come
	return &lazyTLSConn{Conn: nc, l: l}, nil
}

// lazyTLSConn negotiates on its first Read or Write, in the goroutine of the caller.
type lazyTLSConn struct {
	net.Conn // the accepted connection
	l        *tlsListener
	once     sync.Once
	conn     net.Conn // what to read and write once negotiated
	err      error

	dmu    sync.Mutex
	rd, wd time.Time // the deadlines the owner set
}

func (c *lazyTLSConn) negotiated() (net.Conn, error) {
	c.once.Do(func() {
		nc, pending, err := c.l.t.negotiate(c.Conn, c.l.cfg)
		_, isTLS := nc.(*tls.Conn)
		c.l.Counters.count(isTLS, err)
		if err != nil {
			if ev := tlsEvent(err); ev != nil {
				addr := c.Conn.RemoteAddr().String()
				host, _, splitErr := net.SplitHostPort(addr)
				if splitErr != nil {
					host = addr
				}
				c.l.events.event(ev, host, c.l.log, "remote", addr, "err", err)
			}
			c.err = fmt.Errorf("%w: %w", ErrClosed, err)
			c.Conn.Close()
			return
		}
		if len(pending) > 0 {
			nc = &replayConn{Conn: nc, pending: pending}
		}
		c.restoreDeadlines()
		c.conn = nc
	})
	return c.conn, c.err
}

func (c *lazyTLSConn) Read(p []byte) (int, error) {
	nc, err := c.negotiated()
	if err != nil {
		return 0, err
	}
	return nc.Read(p)
}

func (c *lazyTLSConn) Write(p []byte) (int, error) {
	nc, err := c.negotiated()
	if err != nil {
		return 0, err
	}
	return nc.Write(p)
}

// Close closes the connection; a TLS one without waiting to send its close_notify to
// a peer that may not read.
func (c *lazyTLSConn) Close() error { return c.Conn.Close() }

// The deadlines the owner sets apply after negotiation too, which has its own.
func (c *lazyTLSConn) SetDeadline(t time.Time) error {
	c.dmu.Lock()
	c.rd, c.wd = t, t
	c.dmu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *lazyTLSConn) SetReadDeadline(t time.Time) error {
	c.dmu.Lock()
	c.rd = t
	c.dmu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *lazyTLSConn) SetWriteDeadline(t time.Time) error {
	c.dmu.Lock()
	c.wd = t
	c.dmu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

// restoreDeadlines sets the owner's deadlines again once negotiate cleared its own.
func (c *lazyTLSConn) restoreDeadlines() {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.Conn.SetReadDeadline(c.rd)
	c.Conn.SetWriteDeadline(c.wd)
}
