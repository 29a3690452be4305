package ha

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// SlaveStore is the part of the message store the slave side writes
// (satisfied by *store.Store).
type SlaveStore interface {
	// AppendRaw appends master commitlog bytes at offset, which must be the
	// current max offset.
	AppendRaw(offset int64, data []byte) error
	CommitLogMaxOffset() int64
}

// ClientConfig configures a Client. Zero values take the defaults in brackets.
type ClientConfig struct {
	// MasterAddr is the master's HA address (haMasterAddress, or the
	// haServerAddr of the name server's REGISTER_BROKER answer). Empty: wait
	// for SetMasterAddr.
	MasterAddr           string
	HeartbeatInterval    time.Duration // haSendHeartbeatInterval [5s]
	HousekeepingInterval time.Duration // haHousekeepingInterval [20s]
	MaxFrameBody         int           // largest frame body accepted [DefaultMaxFrameBody]
	DialTimeout          time.Duration // [3s]
	// Reconnect backoff: doubles from MinBackoff to MaxBackoff after each
	// failed connection [200ms, 500ms; 4.9.7 always waits 5 s]. A master restarted in a
	// roll is back within seconds, and a slave that retries twice a second finds it
	// within half a second; a refused dial costs next to nothing.
	MinBackoff, MaxBackoff time.Duration
	// TLS, when set, makes the connection to the master a TLS one (tls.enable and the
	// tls.client.* files); the handshake shares DialTimeout.
	TLS *tls.Config
	// BeforeSession, when set, runs before each connection to the master at addr; an
	// error skips the connection (retried after the backoff). The broker compares epoch
	// histories there (a stale master is not followed; a diverged tail is cut first).
	BeforeSession func(addr string) error
	Logger        *slog.Logger // [slog.Default()]
}

func (c *ClientConfig) setDefaults() {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.HousekeepingInterval <= 0 {
		c.HousekeepingInterval = DefaultHousekeepingInterval
	}
	if c.MaxFrameBody <= 0 {
		c.MaxFrameBody = DefaultMaxFrameBody
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 3 * time.Second
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = 200 * time.Millisecond
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = max(500*time.Millisecond, c.MinBackoff)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Errors that make the slave drop its connection to the master.
var (
	ErrOffsetMismatch = errors.New("ha: master pushed an offset other than the slave's max offset")
	ErrFrameTooLarge  = errors.New("ha: frame body out of bounds")
)

// Client is the slave side: it keeps one connection to the master's HA
// port, appends what the master sends to the store and reports its max
// offset. It reconnects with backoff after any error.
type Client struct {
	cfg ClientConfig
	st  SlaveStore
	log *slog.Logger

	mu      sync.Mutex
	addr    string
	changed chan struct{} // closed and replaced by SetMasterAddr
	nc      net.Conn      // current connection, nil when down
	closed  bool

	reported  atomic.Int64 // last offset reported to the master
	connected atomic.Bool
	stop      chan struct{}
	done      chan struct{}
	started   atomic.Bool
}

// NewClient returns a slave for st; Start begins replicating.
func NewClient(st SlaveStore, cfg ClientConfig) *Client {
	cfg.setDefaults()
	return &Client{
		cfg: cfg, st: st, log: cfg.Logger.With("component", "ha-slave"),
		addr: cfg.MasterAddr, changed: make(chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
}

// Start runs the connect/replicate loop in the background.
func (c *Client) Start() {
	if c.started.Swap(true) {
		return
	}
	go c.run()
}

// Close drops the connection and waits for the loop to end.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.closed = true
	close(c.stop)
	if c.nc != nil {
		c.nc.Close()
	}
	c.mu.Unlock()
	if c.started.Load() {
		<-c.done
	}
	return nil
}

// SetMasterAddr changes the master's HA address. A connection to another
// address is dropped and the new one dialled at once; "" disconnects.
func (c *Client) SetMasterAddr(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if addr == c.addr {
		return
	}
	c.log.Info("master address changed", "old", c.addr, "new", addr)
	c.addr = addr
	close(c.changed)
	c.changed = make(chan struct{})
	if c.nc != nil {
		c.nc.Close()
	}
}

// MasterAddr is the master's HA address in use.
func (c *Client) MasterAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addr
}

// Connected reports whether a connection to the master is up.
func (c *Client) Connected() bool { return c.connected.Load() }

// ReportedOffset is the max offset last reported to the master.
func (c *Client) ReportedOffset() int64 { return c.reported.Load() }

func (c *Client) run() {
	defer close(c.done)
	backoff := c.cfg.MinBackoff
	for {
		c.mu.Lock()
		addr, changed, closed := c.addr, c.changed, c.closed
		c.mu.Unlock()
		if closed {
			return
		}
		if addr == "" {
			select {
			case <-c.stop:
				return
			case <-changed:
				continue
			}
		}
		progressed, err := c.session(addr)
		if progressed {
			backoff = c.cfg.MinBackoff
		}
		select {
		case <-c.stop:
			return
		default:
		}
		// One WARN per outage; the retries of a master that stays away are DEBUG.
		logf := c.log.Debug
		if progressed || backoff == c.cfg.MinBackoff {
			logf = c.log.Warn
		}
		logf("connection to master ended", "master", addr, "err", err, "retry", backoff)
		select {
		case <-c.stop:
			return
		case <-changed: // new address: dial now
		case <-time.After(backoff):
			backoff = min(2*backoff, c.cfg.MaxBackoff)
		}
	}
}

// dial connects to the master's HA port, with TLS when configured.
func (c *Client) dial(addr string) (net.Conn, error) {
	if c.cfg.TLS == nil {
		return net.DialTimeout("tcp", addr, c.cfg.DialTimeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.DialTimeout)
	defer cancel()
	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: remoting.ClientTLSConfig(c.cfg.TLS, addr)}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("TLS: %w", err)
	}
	return nc, nil
}

// session runs one connection: report, then append frames until an error.
// progressed says whether any frame was accepted.
func (c *Client) session(addr string) (progressed bool, err error) {
	if c.cfg.BeforeSession != nil {
		if err := c.cfg.BeforeSession(addr); err != nil {
			return false, err
		}
	}
	nc, err := c.dial(addr)
	if err != nil {
		return false, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c.mu.Lock()
	if c.closed || c.addr != addr {
		c.mu.Unlock()
		nc.Close()
		return false, ErrClosed
	}
	c.nc = nc
	c.mu.Unlock()
	c.connected.Store(true)
	c.log.Info("connected to master", "master", addr, "offset", c.st.CommitLogMaxOffset())

	var wmu sync.Mutex // reports come from the reader and the heartbeat
	var lastReport atomic.Int64
	report := func(force bool) error {
		wmu.Lock()
		defer wmu.Unlock()
		off := c.st.CommitLogMaxOffset()
		if !force && off <= c.reported.Load() {
			return nil
		}
		var b [reportSize]byte
		binary.BigEndian.PutUint64(b[:], uint64(off))
		nc.SetWriteDeadline(time.Now().Add(c.cfg.HousekeepingInterval))
		if _, err := nc.Write(b[:]); err != nil {
			return err
		}
		c.reported.Store(off)
		lastReport.Store(time.Now().UnixNano())
		return nil
	}

	hbDone, sessDone := make(chan struct{}), make(chan struct{})
	defer func() {
		nc.Close()
		close(sessDone)
		<-hbDone
		c.mu.Lock()
		if c.nc == nc {
			c.nc = nil
		}
		c.mu.Unlock()
		c.connected.Store(false)
	}()
	if err := report(true); err != nil {
		close(hbDone)
		return false, err
	}
	go func() { // heartbeat: report at least every HeartbeatInterval
		defer close(hbDone)
		t := time.NewTicker(c.cfg.HeartbeatInterval / 5)
		defer t.Stop()
		for {
			select {
			case <-sessDone:
				return
			case <-t.C:
			}
			if time.Since(time.Unix(0, lastReport.Load())) < c.cfg.HeartbeatInterval {
				continue
			}
			if err := report(true); err != nil {
				nc.Close()
				return
			}
		}
	}()

	var hdr [headerSize]byte
	var body []byte
	for {
		// The master heartbeats every 5 s; silence for longer than
		// housekeeping means it is gone.
		nc.SetReadDeadline(time.Now().Add(c.cfg.HousekeepingInterval))
		if _, err := io.ReadFull(nc, hdr[:]); err != nil {
			return progressed, err
		}
		off := int64(binary.BigEndian.Uint64(hdr[0:8]))
		size := int32(binary.BigEndian.Uint32(hdr[8:12]))
		if size < 0 || int(size) > c.cfg.MaxFrameBody {
			return progressed, fmt.Errorf("%w: %d bytes at offset %d (max %d)", ErrFrameTooLarge, size, off, c.cfg.MaxFrameBody)
		}
		// Checked before the body is read: a bad frame writes nothing. An
		// empty slave takes the offset the master chose (4.9.7 does too);
		// the store refuses it if it cannot start there.
		if mine := c.st.CommitLogMaxOffset(); off != mine && mine != 0 {
			return progressed, fmt.Errorf("%w: master %d, slave %d", ErrOffsetMismatch, off, mine)
		}
		if cap(body) < int(size) {
			body = make([]byte, size, max(int(size), DefaultTransferBatchSize))
		}
		body = body[:size]
		if _, err := io.ReadFull(nc, body); err != nil {
			return progressed, err
		}
		if size == 0 {
			continue // heartbeat
		}
		if err := c.st.AppendRaw(off, body); err != nil {
			return progressed, fmt.Errorf("ha: append %d bytes at %d: %w", size, off, err)
		}
		progressed = true
		if err := report(false); err != nil {
			return progressed, err
		}
	}
}
