package remoting

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"time"
)

// ClientConfig configures a Client. Zero values take the defaults in brackets.
type ClientConfig struct {
	DialTimeout  time.Duration // [3s]; with TLS, the handshake too
	MaxFrameSize int           // [DefaultMaxFrameSize]
	Logger       *slog.Logger  // [slog.Default()]

	// TLS, when set, makes every connection a TLS one (Java's tls.enable / useTLS) with
	// this configuration. Without a ServerName, each connection's is the host of the
	// address it dials, for SNI and for the certificate check when the configuration
	// makes one. MinVersion below TLS 1.2 is raised to it.
	TLS *tls.Config

	// BeforeSend, when set, sees every request Invoke, InvokeAsync and InvokeOneway send,
	// just before it is written, and may change it: the Java client's
	// RPCHook.doBeforeRequest. Signing requests for a broker with ACL is its purpose (see
	// pkg/admin's Signer): it runs last, on the request as it goes out, so whatever it
	// adds to the ext fields reaches the peer. It runs on the caller's goroutine, possibly
	// on several at once. Requests written on a Conn taken from Client.Conn, and responses
	// to the requests servers send this client, do not pass through it.
	BeforeSend func(req *Command)
}

// Client invokes requests on remote servers, keeping one connection per address, and
// serves the requests those servers send back over it.
type Client struct {
	cfg ClientConfig
	log *slog.Logger

	mu       sync.Mutex
	conns    map[string]*Conn
	dialing  map[string]*dialCall
	handlers map[int16]Handler
	closed   bool
}

type dialCall struct {
	done chan struct{}
	conn *Conn
	err  error
}

// NewClient returns a client with no connections.
func NewClient(cfg ClientConfig) *Client {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 3 * time.Second
	}
	if cfg.MaxFrameSize <= 0 {
		cfg.MaxFrameSize = DefaultMaxFrameSize
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Client{
		cfg:      cfg,
		log:      cfg.Logger,
		conns:    make(map[string]*Conn),
		dialing:  make(map[string]*dialCall),
		handlers: make(map[int16]Handler),
	}
}

// Config returns the client's configuration, defaults filled in: a client of the same
// kind, say one signing with other credentials, can be made from it.
func (cl *Client) Config() ClientConfig { return cl.cfg }

// beforeSend runs the BeforeSend hook on req, if there is one.
func (cl *Client) beforeSend(req *Command) {
	if cl.cfg.BeforeSend != nil {
		cl.cfg.BeforeSend(req)
	}
}

// Handle serves requests with code that servers send to this client.
func (cl *Client) Handle(code int16, h Handler) {
	cl.mu.Lock()
	cl.handlers[code] = h
	cl.mu.Unlock()
}

// Invoke sends req to addr and waits for the response until ctx ends.
func (cl *Client) Invoke(ctx context.Context, addr string, req *Command) (*Command, error) {
	c, err := cl.Conn(ctx, addr)
	if err != nil {
		req.Discard()
		return nil, err
	}
	cl.beforeSend(req)
	return c.Invoke(ctx, req)
}

// InvokeAsync sends req to addr; done receives the response or error.
func (cl *Client) InvokeAsync(ctx context.Context, addr string, req *Command, done func(*Command, error)) error {
	c, err := cl.Conn(ctx, addr)
	if err != nil {
		req.Discard()
		return err
	}
	cl.beforeSend(req)
	return c.InvokeAsync(ctx, req, done)
}

// InvokeOneway sends req to addr without waiting for anything.
func (cl *Client) InvokeOneway(ctx context.Context, addr string, req *Command) error {
	c, err := cl.Conn(ctx, addr)
	if err != nil {
		req.Discard()
		return err
	}
	cl.beforeSend(req)
	return c.InvokeOnewayContext(ctx, req)
}

// Conn returns the open connection to addr, dialing one when there is none. Concurrent
// callers share a single dial.
func (cl *Client) Conn(ctx context.Context, addr string) (*Conn, error) {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return nil, ErrClosed
	}
	if c, ok := cl.conns[addr]; ok && c.Err() == nil {
		cl.mu.Unlock()
		return c, nil
	}
	call, ok := cl.dialing[addr]
	if !ok {
		call = &dialCall{done: make(chan struct{})}
		cl.dialing[addr] = call
		go cl.dial(addr, call)
	}
	cl.mu.Unlock()
	select {
	case <-call.done:
		return call.conn, call.err
	case <-ctx.Done():
		return nil, fmt.Errorf("remoting: connect to %s: %w", addr, ctx.Err())
	}
}

func (cl *Client) dial(addr string, call *dialCall) {
	nc, err := cl.dialConn(addr)
	cl.mu.Lock()
	delete(cl.dialing, addr)
	if err == nil && cl.closed {
		nc.Close()
		err = ErrClosed
	}
	if err != nil {
		call.err = fmt.Errorf("remoting: connect to %s: %w", addr, err)
		cl.mu.Unlock()
		close(call.done)
		return
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c := newConn(nc, dialedConnConfig(cl.cfg.MaxFrameSize, cl.log), cl.dispatch)
	cl.conns[addr] = c
	call.conn = c
	cl.mu.Unlock()
	close(call.done)

	go func() {
		c.readLoop()
		cl.mu.Lock()
		if cl.conns[addr] == c {
			delete(cl.conns, addr)
		}
		cl.mu.Unlock()
	}()
}

// dialConn opens a TCP connection to addr and, with ClientConfig.TLS, completes a TLS
// handshake over it, all within DialTimeout.
func (cl *Client) dialConn(addr string) (net.Conn, error) {
	if cl.cfg.TLS == nil {
		return net.DialTimeout("tcp", addr, cl.cfg.DialTimeout)
	}
	cfg := ClientTLSConfig(cl.cfg.TLS, addr)
	ctx, cancel := context.WithTimeout(context.Background(), cl.cfg.DialTimeout)
	defer cancel()
	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: cfg}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("TLS: %w", err)
	}
	return nc, nil
}

// ClientTLSConfig is cfg as a connection to addr uses it: ServerName the host of addr
// unless set, MinVersion at least TLS 1.2. cfg is not changed.
func ClientTLSConfig(cfg *tls.Config, addr string) *tls.Config {
	if cfg.ServerName != "" && cfg.MinVersion >= tls.VersionTLS12 {
		return cfg
	}
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	cfg.MinVersion = max(cfg.MinVersion, tls.VersionTLS12)
	return cfg
}

// dispatch serves a server-initiated request on its own goroutine, so a slow handler
// never stalls the responses the reader delivers.
func (cl *Client) dispatch(c *Conn, req *Command) {
	cl.mu.Lock()
	h, ok := cl.handlers[req.Code]
	cl.mu.Unlock()
	go func() {
		var resp *Command
		if ok {
			resp = cl.serve(h, c, req)
		} else {
			resp = req.NewResponse(RequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", req.Code))
		}
		if resp != nil && !req.IsOneway() {
			_ = sendResponse(cl.log, c, req, resp) // it logs what it cannot encode; a closed connection has no one to tell
		} else if resp != nil {
			resp.Discard()
		}
	}()
}

func (cl *Client) serve(h Handler, c *Conn, req *Command) (resp *Command) {
	defer func() {
		if p := recover(); p != nil {
			cl.log.Error("handler panicked", "code", req.Code, "panic", p, "stack", string(debug.Stack()))
			resp = req.NewResponse(SystemError, fmt.Sprintf("internal error serving request code %d", req.Code))
		}
	}()
	return h.ServeRemoting(context.Background(), c, req)
}

// CloseConn closes the connection to addr, if any.
func (cl *Client) CloseConn(addr string) {
	cl.mu.Lock()
	c := cl.conns[addr]
	delete(cl.conns, addr)
	cl.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// Close closes every connection; later invocations fail with ErrClosed.
func (cl *Client) Close() error {
	cl.mu.Lock()
	cl.closed = true
	conns := cl.conns
	cl.conns = map[string]*Conn{}
	cl.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	return nil
}
