package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Handler serves one request. It returns the response, or nil when it answers later
// through conn.Send (a held long poll) or when nothing is owed. Responses to oneway
// requests are dropped.
type Handler interface {
	ServeRemoting(ctx context.Context, conn *Conn, req *Command) *Command
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, conn *Conn, req *Command) *Command

func (f HandlerFunc) ServeRemoting(ctx context.Context, conn *Conn, req *Command) *Command {
	return f(ctx, conn, req)
}

// ErrHandlerFunc adapts a function that may fail to Handler: its error becomes a
// SYSTEM_ERROR response whose remark is the error text, the way Java answers a
// RemotingCommandException. The broker's and the name server's handlers are such.
type ErrHandlerFunc func(ctx context.Context, conn *Conn, req *Command) (*Command, error)

func (f ErrHandlerFunc) ServeRemoting(ctx context.Context, conn *Conn, req *Command) *Command {
	resp, err := f(ctx, conn, req)
	if err != nil {
		return req.NewResponse(SystemError, err.Error())
	}
	return resp
}

// ServerConfig configures a Server. Zero values take the defaults in brackets.
type ServerConfig struct {
	MaxFrameSize int // largest accepted frame [DefaultMaxFrameSize]
	// IdleTimeout closes a connection that has sent nothing for so long: RocketMQ's
	// serverChannelMaxIdleTimeSeconds, measured from the last byte received. Negative
	// turns it off. [DefaultIdleTimeout]
	IdleTimeout time.Duration
	// FrameTimeout closes a connection whose frame is not whole this long after its
	// first byte arrived: a slowloris, or a frame shorter than its length field.
	// Negative turns it off. [DefaultFrameTimeout]
	FrameTimeout time.Duration
	// MaxConnections and MaxConnectionsPerAddress bound the open connections, all
	// listeners together, and those from one IP address; one more is closed at once.
	// [DefaultMaxConnections, DefaultMaxConnectionsPerAddress]
	MaxConnections           int
	MaxConnectionsPerAddress int
	// MaxQueuedBytesPerConnection bounds the bytes queued for one peer, written or not
	// yet; a send past it closes the connection: its peer does not read.
	// [DefaultMaxQueuedBytesPerConnection]
	MaxQueuedBytesPerConnection int64
	// MaxQueuedBytesTotal bounds the bytes queued on every connection of the process
	// (all servers and clients together); a send past it closes the connection with the
	// most bytes queued. [DefaultMaxQueuedBytesTotal, or a quarter of the Go memory
	// limit (GOMEMLIMIT) when lower]
	MaxQueuedBytesTotal int64
	// MaxWaitingBytes bounds the bytes of the requests waiting in each of the server's
	// pools, as they arrived; past it a request is refused SYSTEM_BUSY, or displaces the
	// newest of the connection with the most requests waiting, as past the pool's queue
	// length (see Pool). [DefaultMaxWaitingBytes, or an eighth of the Go memory limit
	// (GOMEMLIMIT) when lower]
	MaxWaitingBytes int64
	// UnmappedFieldCodes are request codes whose handlers read the header through
	// Command.Field, LookupField and the header decoders only: their requests in JSON
	// arrive without an ExtFields map (see Command.ExtFields), which for a send cost about
	// as much as decoding the rest of its header.
	UnmappedFieldCodes []int16
	// ReusedFrameCodes are request codes whose handlers keep nothing of the request's
	// Body once they return (they may answer later, from the header): their frames are
	// read into buffers the server reuses once it has answered or handed the answer
	// off, sparing the garbage collector a frame per request (a send's is its message).
	ReusedFrameCodes []int16

	// TLS, when set, is how every listener of the server speaks TLS (tls.server.mode):
	// nil serves plain text only and reads a ClientHello as a malformed frame. With TLS
	// on, MaxFrameSize is held below 352 MiB, where a frame's first byte could be taken
	// for a ClientHello's (see ServerTLS).
	TLS *ServerTLS

	Logger    *slog.Logger // [slog.Default()]
	OnConnect func(*Conn)  // called when a connection is accepted, before TLS
	OnClose   func(*Conn)  // called once a connection has closed
	// BeforeHandle, when set, runs on the pool worker ahead of the handler of every
	// request routed by Handle; a non-nil result answers the request instead. It is the
	// place of Java's RPCHook.doBeforeRequest (the broker's ACL check).
	BeforeHandle func(conn *Conn, req *Command) *Command
	// OnReply, when set, is told of every answer the server gives a request, on the
	// goroutine that gives it: resp is the response (also for a oneway request, whose
	// response is dropped), elapsed the time since the request was taken from its
	// connection (its pool queue included), err the error of queueing the response on the
	// connection (nil when it was queued, or for a oneway request). It must be quick and
	// must not keep or change req or resp. Metrics hook here (rocketmq_rpc_latency).
	OnReply func(req, resp *Command, elapsed time.Duration, err error)
}

// Defaults of ServerConfig. The limits are far above what clients do (one connection
// per client instance and server; replies read as they come) and there to stop peers
// that do not behave.
const (
	DefaultIdleTimeout = 120 * time.Second // RocketMQ 4.9's serverChannelMaxIdleTimeSeconds
	// DefaultFrameTimeout is well past every client's request timeout (3 s for sends):
	// a frame slower than that is answered to nobody.
	DefaultFrameTimeout                = 30 * time.Second
	DefaultMaxConnections              = 65536
	DefaultMaxConnectionsPerAddress    = 4096
	DefaultMaxQueuedBytesPerConnection = 32 << 20 // pull replies of 128 queues at 256 KiB
	DefaultMaxQueuedBytesTotal         = 256 << 20
	// DefaultMaxWaitingBytes is four sends of the largest message (4 MiB), or some
	// 12,000 of 1 KiB bodies: about a send pool's default queue of 10,000. A queue is
	// there for bursts; throughput is the workers'. Under GOGC=400 the heap may grow to
	// five times what is live, so this bounds the memory of overload.
	DefaultMaxWaitingBytes = 16 << 20
)

// IdleTimeoutFromConf is serverChannelMaxIdleTimeSeconds, as a .conf file sets it, for
// IdleTimeout: there 0 turns idle closing off, as it does Netty's IdleStateHandler.
func IdleTimeoutFromConf(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// Server accepts remoting connections and dispatches requests to handlers.
type Server struct {
	cfg      ServerConfig
	log      *slog.Logger
	events   *logLimiter
	counts   eventCounts
	ctx      context.Context
	cancel   context.CancelFunc
	routes   map[int16]route
	fallback *Pool
	tlsCfg   *tls.Config // cfg.TLS's, with its floor of TLS 1.2
	tlsCount TLSCounters

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[*Conn]struct{}
	perHost   map[string]int // open connections by remote IP address
	closing   atomic.Bool
	// drainMu orders dispatch's closing check and inflight.Add against Shutdown setting
	// closing, so that no Add can race with inflight.Wait from a zero count.
	drainMu   sync.RWMutex
	inflight  sync.WaitGroup // requests queued or running
	connsDone sync.WaitGroup
	pools     []*Pool
}

type route struct {
	handler Handler
	pool    *Pool
}

// NewServer returns a server with no handlers. Register them with Handle before Serve.
func NewServer(cfg ServerConfig) *Server {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		events:  newLogLimiter(cfg.Logger, time.Now),
		ctx:     ctx,
		cancel:  cancel,
		routes:  make(map[int16]route),
		conns:   make(map[*Conn]struct{}),
		perHost: make(map[string]int),
	}
	if cfg.TLS != nil {
		s.tlsCfg = cfg.TLS.serverConfig()
	}
	s.fallback = s.NewPool("default", 8, 10000)
	go s.flushLogCounts()
	return s
}

func (cfg ServerConfig) withDefaults() ServerConfig {
	orDefault(&cfg.MaxFrameSize, DefaultMaxFrameSize)
	orDefault(&cfg.MaxConnections, DefaultMaxConnections)
	orDefault(&cfg.MaxConnectionsPerAddress, DefaultMaxConnectionsPerAddress)
	orDefault(&cfg.MaxQueuedBytesPerConnection, DefaultMaxQueuedBytesPerConnection)
	orDefault(&cfg.MaxQueuedBytesTotal, defaultMaxQueuedBytesTotal())
	orDefault(&cfg.MaxWaitingBytes, min(DefaultMaxWaitingBytes, debug.SetMemoryLimit(-1)/8))
	if cfg.IdleTimeout == 0 { // negative turns it off
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.FrameTimeout == 0 {
		cfg.FrameTimeout = DefaultFrameTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TLS != nil {
		cfg.MaxFrameSize = min(cfg.MaxFrameSize, maxPlainFrameSize)
	}
	return cfg
}

// TLSCounters counts the connections by how TLS negotiation ended; zero without
// ServerConfig.TLS.
func (s *Server) TLSCounters() *TLSCounters { return &s.tlsCount }

// orDefault sets *v to def unless it is positive.
func orDefault[T int | int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// flushLogCounts logs the rate limiter's counts as their minutes end, until Shutdown.
func (s *Server) flushLogCounts() {
	t := time.NewTicker(logWindow / 6)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.events.flush()
		case <-s.ctx.Done():
			s.events.flush()
			return
		}
	}
}

// NewPool returns a worker pool owned by s: workers goroutines serve a queue of at most
// queue requests (and MaxWaitingBytes), fair between connections; when it is full, the
// connection with the most requests waiting is answered SYSTEM_BUSY (see Pool).
func (s *Server) NewPool(name string, workers, queue int) *Pool {
	p := newPool(name, workers, queue, s.cfg.MaxWaitingBytes)
	s.mu.Lock()
	s.pools = append(s.pools, p)
	s.mu.Unlock()
	return p
}

// Handle routes requests with code to h, run on pool (the default pool when nil), behind
// the BeforeHandle hook when one is configured.
func (s *Server) Handle(code int16, h Handler, pool *Pool) {
	if pool == nil {
		pool = s.fallback
	}
	if s.cfg.BeforeHandle != nil {
		h = guarded{before: s.cfg.BeforeHandle, next: h}
	}
	s.routes[code] = route{handler: h, pool: pool}
}

// guarded runs a BeforeHandle hook ahead of a handler.
type guarded struct {
	before func(*Conn, *Command) *Command
	next   Handler
}

func (g guarded) ServeRemoting(ctx context.Context, conn *Conn, req *Command) *Command {
	if resp := g.before(conn, req); resp != nil {
		return resp
	}
	return g.next.ServeRemoting(ctx, conn, req)
}

// Listen opens a TCP listener on addr and serves it in the background. It returns the
// listener so callers can learn the bound address.
func (s *Server) Listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	go func() { _ = s.Serve(l) }() // only net.ErrClosed, once Shutdown closes l
	return l, nil
}

// Serve accepts connections on l until Shutdown. It always returns a non-nil error.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		l.Close()
		return net.ErrClosed
	}
	s.listeners = append(s.listeners, l)
	s.mu.Unlock()
	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.closing.Load() {
				return net.ErrClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of file descriptors and the like: wait and retry, as net/http does,
			// rather than stop serving for good.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed; retrying", "err", err, "in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.serveConn(nc)
	}
}

func (s *Server) serveConn(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c := newConn(nc, connConfig{
		maxFrame:         s.cfg.MaxFrameSize,
		idleTimeout:      max(s.cfg.IdleTimeout, 0),
		frameTimeout:     max(s.cfg.FrameTimeout, 0),
		maxQueued:        s.cfg.MaxQueuedBytesPerConnection,
		closeSlow:        true,
		maxQueuedTotal:   s.cfg.MaxQueuedBytesTotal,
		log:              s.log,
		events:           s.events,
		counts:           &s.counts,
		tls:              s.cfg.TLS,
		tlsConfig:        s.tlsCfg,
		tlsCounters:      &s.tlsCount,
		unmappedCodes:    s.cfg.UnmappedFieldCodes,
		reusedFrameCodes: s.cfg.ReusedFrameCodes,
	}, s.dispatch)
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		c.closeWith(ErrClosed)
		return
	}
	if refusal := s.admitLocked(c.host); refusal != "" {
		s.mu.Unlock()
		c.event(evRefused, "reason", refusal)
		c.closeWith(fmt.Errorf("%w: refused: %s", ErrClosed, refusal))
		return
	}
	s.conns[c] = struct{}{}
	s.perHost[c.host]++
	s.connsDone.Add(1)
	s.mu.Unlock()
	if s.cfg.OnConnect != nil {
		s.cfg.OnConnect(c)
	}
	go func() {
		defer s.connsDone.Done()
		c.readLoop()
		s.mu.Lock()
		delete(s.conns, c)
		if s.perHost[c.host]--; s.perHost[c.host] == 0 {
			delete(s.perHost, c.host)
		}
		s.mu.Unlock()
		if s.cfg.OnClose != nil {
			s.cfg.OnClose(c)
		}
	}()
}

// admitLocked says why one more connection from host is refused, "" when it is not.
func (s *Server) admitLocked(host string) string {
	switch {
	case len(s.conns) >= s.cfg.MaxConnections:
		return fmt.Sprintf("%d connections open, the server's limit", len(s.conns))
	case s.perHost[host] >= s.cfg.MaxConnectionsPerAddress:
		return fmt.Sprintf("%d connections open from %s, the limit per address", s.perHost[host], host)
	}
	return ""
}

// dispatch runs on the connection's reader: it must not block.
func (s *Server) dispatch(c *Conn, req *Command) {
	if s.cfg.OnReply != nil {
		req.received = monoNow()
	}
	r, ok := s.routes[req.Code]
	if !ok {
		s.reply(c, req, req.NewResponse(RequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", req.Code)))
		return
	}
	s.drainMu.RLock()
	if s.closing.Load() {
		s.drainMu.RUnlock()
		s.reply(c, req, req.NewResponse(ServiceNotAvailable, "server is shutting down"))
		return
	}
	s.inflight.Add(1)
	s.drainMu.RUnlock()
	r.pool.submit(c, int64(req.size), func(refusal string) {
		defer s.inflight.Done()
		if refusal != "" {
			s.reply(c, req, req.NewResponse(SystemBusy, refusal))
		} else {
			s.reply(c, req, s.serve(r.handler, c, req))
		}
		req.releaseFrame()
	})
}

func (s *Server) serve(h Handler, c *Conn, req *Command) (resp *Command) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("handler panicked", "code", req.Code, "panic", p, "stack", string(debug.Stack()))
			resp = req.NewResponse(SystemError, fmt.Sprintf("internal error serving request code %d", req.Code))
		}
	}()
	return h.ServeRemoting(s.ctx, c, req)
}

// ReplyLater answers req from a goroutine of its own once answer returns, so that a
// handler waiting on something slow but cheap to wait for (a disk flush) gives its pool
// worker back. Shutdown waits for these answers as for running handlers. Call it only
// from a handler, which then returns nil.
func (s *Server) ReplyLater(c *Conn, req *Command, answer func() *Command) {
	reply := s.ReplyDeferred(c, req)
	go func() {
		reply(s.serve(HandlerFunc(func(context.Context, *Conn, *Command) *Command { return answer() }), c, req))
	}()
}

func (s *Server) reply(c *Conn, req, resp *Command) { _ = s.Reply(c, req, resp) }

// ReplyDeferred is ReplyLater for an answer that a callback delivers rather than a
// goroutine computes (a store's flush notification): it returns the function that
// answers req, to be called exactly once, from any goroutine, without blocking it.
// Shutdown waits for it as for a running handler. Call it only from a handler, which
// then returns nil.
func (s *Server) ReplyDeferred(c *Conn, req *Command) (answer func(*Command)) {
	s.inflight.Add(1) // the calling handler is still counted: no race with Shutdown's Wait
	return func(resp *Command) {
		defer s.inflight.Done()
		s.reply(c, req, resp)
	}
}

// Reply answers req, a request a handler held and returned nil for (a long poll), from
// any goroutine: as the server answers the others, OnReply included.
func (s *Server) Reply(c *Conn, req, resp *Command) error {
	if resp == nil {
		return nil
	}
	var err error
	if req.IsOneway() {
		resp.Discard()
	} else {
		err = sendResponse(s.log, c, req, resp)
	}
	if s.cfg.OnReply != nil {
		s.cfg.OnReply(req, resp, time.Duration(monoNow()-req.received), err)
	}
	return err
}

// sendResponse sends resp as the answer to req. A response that cannot be encoded
// (a field too long for the binary header, say) is replaced by SYSTEM_ERROR, so that
// the caller is not left waiting for its timeout.
func sendResponse(log *slog.Logger, c *Conn, req, resp *Command) error {
	prepareResponse(req, resp)
	err := c.Send(resp)
	if err == nil || errors.Is(err, ErrClosed) {
		return err
	}
	log.Warn("cannot encode response", "remote", c.RemoteAddr(), "code", req.Code, "err", err)
	resp = req.NewResponse(SystemError, fmt.Sprintf("cannot encode the response to request code %d: %v", req.Code, err))
	prepareResponse(req, resp)
	return c.Send(resp)
}

// prepareResponse makes resp answer req: same opaque, response flag set, and the
// serialization req arrived in, which is the one its sender expects back.
func prepareResponse(req, resp *Command) {
	resp.Opaque = req.Opaque
	resp.Flag |= flagResponse
	resp.Serialize = req.Serialize
}

// ServerStats are a server's counts since it started.
type ServerStats struct {
	Conns  int                  // open connections
	Events [numConnEvents]int64 // connections closed or refused, by ConnEvent
	Pools  map[string]int       // requests waiting in each worker pool
}

// Stats returns the server's counts.
func (s *Server) Stats() ServerStats {
	st := ServerStats{Pools: map[string]int{}}
	for i := range s.counts {
		st.Events[i] = s.counts[i].Load()
	}
	s.mu.Lock()
	st.Conns = len(s.conns)
	pools := s.pools
	s.mu.Unlock()
	for _, p := range pools {
		st.Pools[p.name] += p.Waiting()
	}
	return st
}

// Conns returns the open connections.
func (s *Server) Conns() []*Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// Shutdown stops accepting, answers requests that arrive from now on with
// SERVICE_NOT_AVAILABLE, waits for the queued and running ones to finish (or ctx to
// end), then closes every connection and stops the pools.
func (s *Server) Shutdown(ctx context.Context) error {
	s.drainMu.Lock()
	s.closing.Store(true)
	s.drainMu.Unlock()
	s.mu.Lock()
	for _, l := range s.listeners {
		l.Close()
	}
	s.mu.Unlock()

	drained := make(chan struct{})
	go func() { s.inflight.Wait(); close(drained) }()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		err = fmt.Errorf("remoting: shutdown before in-flight requests finished: %w", ctx.Err())
	}
	s.cancel()
	for _, c := range s.Conns() {
		c.flush(ctx) // the last responses, within what is left of ctx
		c.closeWith(ErrClosed)
	}
	s.connsDone.Wait()
	s.mu.Lock()
	pools := s.pools
	s.mu.Unlock()
	for _, p := range pools {
		p.stop()
	}
	return err
}
