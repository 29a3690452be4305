package remoting

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

var (
	ErrClosed  = errors.New("remoting: connection closed")
	ErrTimeout = errors.New("remoting: request timed out")
)

// Conn is one remoting connection, on either side. It reads frames on its own goroutine,
// hands requests to its dispatcher and matches responses to pending invocations.
// Another goroutine writes the frames Send queues, whole and in order.
type Conn struct {
	raw net.Conn // the TCP connection: addresses, Close
	// nc is what frames are read from and written to: raw, or a TLS connection over it.
	// A server's connection negotiates TLS on its reader first (ServerTLS); nc is set
	// before ready is closed, and writeLoop waits for ready. Nil ready: nothing to
	// negotiate.
	nc       net.Conn
	ready    chan struct{}
	tlsState atomic.Pointer[tls.ConnectionState]
	cfg      connConfig
	log      *slog.Logger
	host     string         // the peer's IP address, for per-address limits and logs
	remote   netip.AddrPort // the peer's address parsed; zero for a peer not on IP
	dispatch func(*Conn, *Command)

	// Writes go through a queue that one goroutine, writeLoop, drains with a single
	// writev per round, so frames sent while a write is under way share the next one.
	writeMu sync.Mutex
	outq    []outFrame    // frames waiting for writeLoop
	spare   []outFrame    // the slice writeLoop wrote last, reused for the queue
	vec     net.Buffers   // writeLoop's iovecs, reused
	writing bool          // writeLoop holds frames it has not finished writing
	wake    chan struct{} // tells writeLoop the queue is not empty
	flushed chan struct{} // made by a waiter; closed and cleared when the queue drains
	// unsent is the bytes queued or being written, counted in the process's queued
	// too. It changes under writeMu; queueBudget.largest reads it without.
	unsent atomic.Int64

	mu      sync.Mutex
	pending map[int32]chan *Command
	err     error // why the connection closed; set once
	done    chan struct{}
}

// connConfig is what a Conn enforces on its peer.
type connConfig struct {
	maxFrame     int
	idleTimeout  time.Duration // close when nothing arrives for this long; 0: never
	frameTimeout time.Duration // close when a begun frame is not whole by then; 0: never
	// maxQueued is how many bytes Send queues for the peer. Past it, Send waits for the
	// peer to read, or, with closeSlow, closes the connection: a server must not let
	// one client that does not read hold its workers or its memory.
	maxQueued      int64
	closeSlow      bool
	maxQueuedTotal int64        // the process's queued bytes this connection's sends stay within
	log            *slog.Logger // with the remote address added
	events         *logLimiter  // nil: every event is logged
	counts         *eventCounts // nil: not counted (dialed connections)
	// tls, when set, is negotiated with the peer before the first frame (a server's
	// connection), with tlsConfig; the outcome is counted in tlsCounters.
	tls         *ServerTLS
	tlsConfig   *tls.Config
	tlsCounters *TLSCounters
	// unmappedCodes are the request codes whose extFields are left unmapped (a server's
	// ServerConfig.UnmappedFieldCodes).
	unmappedCodes []int16
	// reusedFrameCodes are the request codes whose frames are read into reused buffers
	// (ServerConfig.ReusedFrameCodes).
	reusedFrameCodes []int16
}

// dialedConnConfig is the configuration of a connection this side opened: its peer is
// a server we chose, so Send waits for it rather than closing, and reads have no limits.
func dialedConnConfig(maxFrame int, log *slog.Logger) connConfig {
	return connConfig{
		maxFrame:       maxFrame,
		maxQueued:      maxUnsentBytes,
		maxQueuedTotal: defaultMaxQueuedBytesTotal(),
		log:            log,
	}
}

func newConn(nc net.Conn, cfg connConfig, dispatch func(*Conn, *Command)) *Conn {
	addr := nc.RemoteAddr().String()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	remote, _ := netip.ParseAddrPort(addr) // zero for a peer not on IP (net.Pipe in tests)
	c := &Conn{
		raw:      nc,
		nc:       nc,
		cfg:      cfg,
		log:      cfg.log.With("remote", addr),
		host:     host,
		remote:   remote,
		dispatch: dispatch,
		pending:  make(map[int32]chan *Command),
		done:     make(chan struct{}),
		wake:     make(chan struct{}, 1),
	}
	if cfg.tls != nil {
		c.ready = make(chan struct{})
	}
	if tc, ok := nc.(*tls.Conn); ok {
		st := tc.ConnectionState()
		c.tlsState.Store(&st)
	}
	queued.register(c)
	return c
}

// TLS returns the state of the connection's TLS session; false for plain text (and
// while a server's connection has not finished its handshake).
func (c *Conn) TLS() (tls.ConnectionState, bool) {
	if st := c.tlsState.Load(); st != nil {
		return *st, true
	}
	return tls.ConnectionState{}, false
}

// event logs ev about this connection, rate-limited per peer address when configured.
func (c *Conn) event(ev *logEvent, args ...any) {
	if c.cfg.counts != nil {
		c.cfg.counts[ev.kind].Add(1)
	}
	c.cfg.events.event(ev, c.host, c.log, args...)
}

// RemoteAddr is the peer's address as host:port.
func (c *Conn) RemoteAddr() string { return c.raw.RemoteAddr().String() }

// RemoteAddrPort is the peer's address, parsed once (every send stamps it on the
// message as its born host).
func (c *Conn) RemoteAddrPort() netip.AddrPort { return c.remote }

// LocalAddr is this side's address as host:port.
func (c *Conn) LocalAddr() string { return c.raw.LocalAddr().String() }

// Done is closed when the connection has closed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err says why the connection closed, or nil while it is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// closeFlushTimeout bounds how long Close waits for queued frames to be written.
const closeFlushTimeout = time.Second

// Close writes the frames already sent, waiting at most a second for a peer that does
// not read, then closes the connection; pending invocations fail with ErrClosed.
func (c *Conn) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeFlushTimeout)
	defer cancel()
	c.flush(ctx)
	c.closeWith(ErrClosed)
	return nil
}

func (c *Conn) closeWith(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()

	// No frame is queued from now on (send checks err under writeMu): what is queued
	// leaves the process's count at once, though writeLoop drops it a moment later.
	c.writeMu.Lock()
	queued.give(c.unsent.Swap(0))
	c.writeMu.Unlock()
	queued.unregister(c)

	// The TCP connection, not a TLS one's close_notify: that is a write, which a peer
	// that does not read would hold up.
	c.raw.Close()
	for _, ch := range pending {
		close(ch)
	}
	close(c.done)
}

// readLoop reads frames until the connection fails, and runs the writer meanwhile. A
// malformed frame closes the connection: after one, the stream's framing can no longer
// be trusted. So does a peer silent for idleTimeout or slower than frameTimeout.
func (c *Conn) readLoop() {
	go c.writeLoop() // lives as long as the connection, which readLoop closes on exit
	var pending []byte
	if c.cfg.tls != nil {
		var ok bool
		if pending, ok = c.negotiate(); !ok {
			return
		}
	}
	d := newDeadlineReader(c.nc, c.cfg.idleTimeout, c.cfg.frameTimeout)
	d.pending = pending
	r := bufio.NewReaderSize(d, 64<<10)
	for {
		d.nextFrame(r.Buffered())
		frame, buf, err := readFrame(r, c.cfg.maxFrame, c.cfg.reusedFrameCodes != nil)
		if err != nil {
			c.closeOnReadError(err)
			return
		}
		cmd, err := decode(frame, c.cfg.unmappedCodes)
		if err != nil {
			c.closeOnReadError(err)
			return
		}
		cmd.size = len(frame)
		if cmd.IsResponse() {
			c.deliver(cmd)
			continue
		}
		if buf != nil && slices.Contains(c.cfg.reusedFrameCodes, cmd.Code) {
			cmd.frame = buf // given back once answered; any other frame's buffer is garbage
		}
		c.dispatch(c, cmd)
	}
}

// negotiate settles plain text or TLS with a server's peer (ServerTLS) and sets nc. It
// returns the bytes read to decide, which the frame reader reads first, and false when
// it closed the connection.
func (c *Conn) negotiate() ([]byte, bool) {
	nc, pending, err := c.cfg.tls.negotiate(c.raw, c.cfg.tlsConfig)
	tc, isTLS := nc.(*tls.Conn)
	if c.cfg.tlsCounters != nil {
		c.cfg.tlsCounters.count(isTLS, err)
	}
	if err != nil {
		select {
		case <-c.done: // closed by us (shutdown): the error is the consequence
		default:
			if ev := tlsEvent(err); ev != nil {
				c.event(ev, "err", err)
			}
			c.closeWith(fmt.Errorf("%w: %w", ErrClosed, err))
		}
		return nil, false
	}
	if isTLS {
		st := tc.ConnectionState()
		c.tlsState.Store(&st)
	}
	c.nc = nc
	close(c.ready)
	return pending, true
}

func (c *Conn) closeOnReadError(err error) {
	select {
	case <-c.done: // closed by us; the read error is the consequence
		return
	default:
	}
	switch {
	case errors.Is(err, ErrFrameTooLarge):
		c.event(evOversized, "err", err)
	case isProtocolError(err):
		c.event(evMalformed, "err", err)
	case errors.Is(err, ErrFrameTimeout):
		c.event(evFrameTimeout, "err", err)
	case errors.Is(err, ErrIdle):
		c.event(evIdle, "err", err)
	}
	c.closeWith(fmt.Errorf("%w: %w", ErrClosed, err))
}

func isProtocolError(err error) bool {
	for _, e := range []error{ErrFrameTooLarge, ErrFrameTooShort, ErrHeaderTooLarge, ErrBadHeader, ErrSerializeType} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (c *Conn) deliver(resp *Command) {
	c.mu.Lock()
	ch, ok := c.pending[resp.Opaque]
	delete(c.pending, resp.Opaque)
	c.mu.Unlock()
	if !ok {
		c.log.Debug("response for no pending request", "opaque", resp.Opaque, "code", resp.Code)
		return
	}
	ch <- resp // buffered: never blocks the reader
}

// Send queues one command, a response or a request, to be written as a whole frame.
// It fails when the connection is closed; a later write error closes the connection,
// which fails its pending invocations. Send and the Invoke methods run cmd's OnWritten
// once they are done with it, whatever happens.
func (c *Conn) Send(cmd *Command) error {
	return c.send(context.Background(), cmd)
}

// send is Send that stops waiting for a slow peer when ctx ends.
func (c *Conn) send(ctx context.Context, cmd *Command) error {
	f, err := newOutFrame(cmd)
	if err != nil {
		return err
	}
	size := int64(f.size())
	if !queued.take(c, size, c.cfg.maxQueuedTotal) {
		f.finish()
		return c.Err()
	}
	c.writeMu.Lock()
	for !c.cfg.closeSlow && c.unsent.Load() >= c.cfg.maxQueued && c.Err() == nil {
		// The peer reads slower than we send: wait, rather than queue without bound.
		flushed := c.flushedChan()
		c.writeMu.Unlock()
		select {
		case <-flushed:
		case <-c.done:
		case <-ctx.Done():
			queued.give(size)
			f.finish()
			return c.timeout(ctx, cmd)
		}
		c.writeMu.Lock()
	}
	if c.Err() != nil {
		// writeLoop may be gone: what it has not taken from the queue, it drops on its way
		// out under writeMu, so a frame is queued only while it will still see it.
		c.writeMu.Unlock()
		queued.give(size)
		f.finish()
		return c.Err()
	}
	if unsent := c.unsent.Load(); c.cfg.closeSlow && unsent > 0 && unsent+size > c.cfg.maxQueued {
		c.writeMu.Unlock()
		queued.give(size)
		f.finish()
		c.closeSlow("too many bytes queued for one peer", c.cfg.maxQueued)
		return c.Err()
	}
	c.outq = append(c.outq, f)
	c.unsent.Add(size)
	c.writeMu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // writeLoop is already awake
	}
	return nil
}

// maxUnsentBytes is how much Send queues on a dialed connection before it waits for
// the writer.
const maxUnsentBytes = 4 << 20

// tlsWriteBuffer is what a TLS connection's writer gathers before it writes: the
// frames of a round leave in records of up to 16 KiB, the most one holds, rather than
// one record per header and body part (a tls.Conn has no writev).
const tlsWriteBuffer = 16 << 10

// writeLoop writes queued frames until the connection closes, then drops the rest.
func (c *Conn) writeLoop() {
	if c.ready != nil {
		select {
		case <-c.ready:
		case <-c.done:
			c.dropQueued()
			return
		}
	}
	var w io.Writer = c.nc
	var bw *bufio.Writer
	if _, ok := c.nc.(*tls.Conn); ok {
		bw = bufio.NewWriterSize(c.nc, tlsWriteBuffer)
		w = bw
	}
	for {
		select {
		case <-c.wake:
		case <-c.done:
			c.dropQueued()
			return
		}
		c.writeMu.Lock()
		batch := c.outq
		c.outq = c.spare[:0]
		c.writing = true
		c.writeMu.Unlock()

		vec := c.vec[:0]
		for i := range batch {
			vec = append(vec, *batch[i].head)
			vec = append(vec, batch[i].parts...)
		}
		bufs := vec // WriteTo consumes its receiver
		n, err := bufs.WriteTo(w)
		if err == nil && bw != nil {
			err = bw.Flush()
		}
		if err != nil {
			c.closeWith(fmt.Errorf("%w: write: %v", ErrClosed, err))
		}
		clear(vec) // let the frames go
		c.vec = vec[:0]
		for i := range batch {
			if err != nil {
				batch[i].drop()
			} else {
				batch[i].finish()
			}
		}
		clear(batch)
		c.writeMu.Lock()
		c.spare = batch[:0]
		c.writing = false
		if n := min(n, c.unsent.Load()); n > 0 { // after closeWith, unsent is 0 and given back
			c.unsent.Add(-n)
			queued.give(n)
		}
		if len(c.outq) == 0 && c.flushed != nil {
			close(c.flushed)
			c.flushed = nil
		}
		c.writeMu.Unlock()
	}
}

// dropQueued drops the frames writeLoop will never write: the connection closed.
func (c *Conn) dropQueued() {
	c.writeMu.Lock()
	rest := c.outq
	c.outq = nil
	c.writeMu.Unlock()
	for i := range rest {
		rest[i].drop()
	}
}

// flushedChan returns the channel closed when the queue next drains; writeMu is held.
// Made only when someone waits: most write rounds have no waiter.
func (c *Conn) flushedChan() chan struct{} {
	if c.flushed == nil {
		c.flushed = make(chan struct{})
	}
	return c.flushed
}

// flush waits until everything queued so far is written, the connection closes, or
// ctx ends.
func (c *Conn) flush(ctx context.Context) {
	c.writeMu.Lock()
	if len(c.outq) == 0 && !c.writing {
		c.writeMu.Unlock()
		return
	}
	flushed := c.flushedChan()
	c.writeMu.Unlock()
	select {
	case <-flushed:
	case <-c.done:
	case <-ctx.Done():
	}
}

// Invoke sends req and waits for its response until ctx ends.
func (c *Conn) Invoke(ctx context.Context, req *Command) (*Command, error) {
	ch, err := c.register(req.Opaque)
	if err != nil {
		req.Discard()
		return nil, err
	}
	if err := c.send(ctx, req); err != nil {
		c.unregister(req.Opaque)
		return nil, err
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, c.Err()
		}
		return resp, nil
	case <-ctx.Done():
		c.unregister(req.Opaque)
		return nil, c.timeout(ctx, req)
	}
}

// timeout is the error for req when ctx ended first: ErrTimeout past a deadline, else
// ctx's error.
func (c *Conn) timeout(ctx context.Context, req *Command) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: code %d to %s", ErrTimeout, req.Code, c.RemoteAddr())
	}
	return ctx.Err()
}

// InvokeAsync sends req and calls done with its response or error from another goroutine.
func (c *Conn) InvokeAsync(ctx context.Context, req *Command, done func(*Command, error)) error {
	ch, err := c.register(req.Opaque)
	if err != nil {
		req.Discard()
		return err
	}
	if err := c.send(ctx, req); err != nil {
		c.unregister(req.Opaque)
		return err
	}
	go func() {
		select {
		case resp, ok := <-ch:
			if !ok {
				done(nil, c.Err())
				return
			}
			done(resp, nil)
		case <-ctx.Done():
			c.unregister(req.Opaque)
			done(nil, c.timeout(ctx, req))
		}
	}()
	return nil
}

// InvokeOneway sends req marked oneway; no response comes back.
func (c *Conn) InvokeOneway(req *Command) error {
	req.MarkOneway()
	return c.Send(req)
}

// InvokeOnewayContext is InvokeOneway that gives up when ctx ends while the
// connection's send queue is full.
func (c *Conn) InvokeOnewayContext(ctx context.Context, req *Command) error {
	req.MarkOneway()
	return c.send(ctx, req)
}

func (c *Conn) register(opaque int32) (chan *Command, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	ch := make(chan *Command, 1)
	c.pending[opaque] = ch
	return ch, nil
}

func (c *Conn) unregister(opaque int32) {
	c.mu.Lock()
	delete(c.pending, opaque)
	c.mu.Unlock()
}

// outFrame is a queued frame: its head (length fields, header and Body) in a pooled
// buffer, then BodyParts as they are, and what to run once written.
type outFrame struct {
	head  *[]byte
	parts [][]byte
	done  func()
}

// newOutFrame encodes cmd's head and takes over its OnWritten, which it runs at once
// when cmd cannot be encoded.
func newOutFrame(cmd *Command) (outFrame, error) {
	bp := frameBufs.Get().(*[]byte)
	head, err := appendFrameHead((*bp)[:0], cmd)
	*bp = head
	f := outFrame{head: bp, parts: cmd.BodyParts, done: cmd.OnWritten}
	cmd.OnWritten = nil
	if err != nil {
		f.finish()
		return outFrame{}, err
	}
	return f, nil
}

func (f *outFrame) size() int {
	n := len(*f.head)
	for _, p := range f.parts {
		n += len(p)
	}
	return n
}

// drop is finish for a frame that was not written: its buffer goes to the garbage
// collector, not the pool, which the queue of a peer that did not read would swell
// by megabytes.
func (f *outFrame) drop() {
	f.head = nil
	f.finish()
}

// finish gives back the frame's buffer and runs its OnWritten.
func (f *outFrame) finish() {
	putFrameBuf(f.head)
	if f.done != nil {
		f.done()
	}
	*f = outFrame{}
}
