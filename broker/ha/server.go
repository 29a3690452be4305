package ha

import (
	"context"
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

// MasterStore is the part of the message store the master side reads
// (satisfied by *store.Store).
type MasterStore interface {
	// ReadChecked returns up to max commitlog bytes from offset, stopping
	// at the end of offset's segment and at the tail (nil when there are
	// none), of records that pass their checks only: a damaged range comes
	// as a filler of the same length (see broker/store's filler.go).
	// checked is the end returned by the previous call (-1 at first): what
	// is below it was checked already. An error means offset cannot be
	// served now.
	ReadChecked(offset int64, max int, checked int64) (data []byte, end int64, release func(), err error)
	CommitLogMaxOffset() int64
	CommitLogMinOffset() int64
}

// ServerConfig configures a Server. Zero values take the defaults in brackets.
type ServerConfig struct {
	// ListenAddr is the HA address, e.g. ":10912". The broker passes
	// listenPort + 1, as 4.9.7 does whatever haListenPort says.
	ListenAddr string
	// SegmentSize is the commitlog segment size (mappedFileSizeCommitLog):
	// an empty slave starts at the newest segment's start. Required.
	SegmentSize int64
	// EmptySlaveFromOldest sends a slave that reports 0 (an empty store)
	// the whole commitlog from CommitLogMinOffset instead of only the
	// newest segment as 4.9.7 does. Java slaves accept either.
	EmptySlaveFromOldest bool
	HeartbeatInterval    time.Duration // haSendHeartbeatInterval [5s]
	HousekeepingInterval time.Duration // haHousekeepingInterval [20s]
	TransferBatchSize    int           // haTransferBatchSize [32 KiB]
	SlaveFallbehindMax   int64         // haSlaveFallbehindMax [256 MiB]
	// PollInterval bounds how long a writer waits for new data when no
	// append woke it (Notify) [100ms].
	PollInterval time.Duration
	// TLS, when set, is how the HA port speaks TLS: the listenPort's tls.server.mode and
	// certificate, so that enforcing mode refuses plain-text slaves here too. 4.9.7's
	// HA port has no TLS; its slaves connect in plain text (permissive mode serves them).
	TLS    *remoting.ServerTLS
	Logger *slog.Logger // [slog.Default()]
}

func (c *ServerConfig) setDefaults() {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.HousekeepingInterval <= 0 {
		c.HousekeepingInterval = DefaultHousekeepingInterval
	}
	if c.TransferBatchSize <= 0 {
		c.TransferBatchSize = DefaultTransferBatchSize
	}
	if c.SlaveFallbehindMax <= 0 {
		c.SlaveFallbehindMax = DefaultSlaveFallbehindMax
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 100 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Server is the master side: it accepts slaves on the HA port, streams the
// commitlog to each from where it asks, and tracks their acknowledgements.
// All methods are safe for concurrent use.
type Server struct {
	cfg ServerConfig
	st  MasterStore
	log *slog.Logger
	ln  net.Listener

	// acked is the highest offset any slave ever acknowledged (4.9.7's
	// push2SlaveMaxOffset); it never goes down.
	acked atomic.Int64

	mu     sync.Mutex
	conns  map[*slaveConn]struct{}
	ackCh  chan struct{} // closed and replaced when acked grows
	closed bool

	wg sync.WaitGroup
}

// NewServer returns a master for st; Start begins listening.
func NewServer(st MasterStore, cfg ServerConfig) *Server {
	cfg.setDefaults()
	return &Server{
		cfg: cfg, st: st, log: cfg.Logger.With("component", "ha-master"),
		conns: map[*slaveConn]struct{}{}, ackCh: make(chan struct{}),
	}
}

// Start listens on ListenAddr and accepts slaves in the background.
func (s *Server) Start() error {
	if s.cfg.SegmentSize <= 0 {
		return errors.New("ha: ServerConfig.SegmentSize must be set")
	}
	ln, err := net.Listen("tcp", s.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("ha: listen %s: %w", s.cfg.ListenAddr, err)
	}
	if s.cfg.TLS != nil {
		ln = s.cfg.TLS.WrapListener(ln, s.log) // negotiates in each slave's reader
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	s.ln = ln
	s.mu.Unlock()
	s.wg.Add(1)
	go s.acceptLoop(ln)
	return nil
}

// Addr is the address the server listens on (nil before Start).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Close stops accepting, drops every slave and waits for the goroutines.
// Waiters in WaitForSlave get ErrClosed.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.nc.Close()
	}
	close(s.ackCh) // wake waiters; they see closed
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// Notify wakes the writers: the commitlog grew. Call it after appends;
// without it writers still poll every 100 ms (as 4.9.7's do). It does not
// block or allocate.
func (s *Server) Notify() {
	s.mu.Lock()
	for c := range s.conns {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
}

// SlaveAckOffset is the highest commitlog offset any slave acknowledged.
func (s *Server) SlaveAckOffset() int64 { return s.acked.Load() }

// Connections is the number of connected slaves.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// SlaveStatus describes one connected slave.
type SlaveStatus struct {
	Addr      string
	AckOffset int64 // last reported max offset; -1 before the first report
}

// Slaves lists the connected slaves.
func (s *Server) Slaves() []SlaveStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SlaveStatus, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, SlaveStatus{Addr: c.addr, AckOffset: c.ack.Load()})
	}
	return out
}

// SlaveOK reports whether a SYNC_MASTER may wait for a slave to reach
// end: a slave is connected and the best acknowledgement is less than
// SlaveFallbehindMax behind end (4.9.7's isSlaveOK).
func (s *Server) SlaveOK(end int64) bool {
	return s.Connections() > 0 && end-s.acked.Load() < s.cfg.SlaveFallbehindMax
}

// WaitForSlave waits until a slave acknowledged end, the commitlog offset
// just past a message (wrote offset + wrote bytes). It returns
// ErrSlaveNotAvailable at once when !SlaveOK(end), ErrSlaveTimeout when ctx
// ends first (the broker gives it slaveTimeout), ErrClosed on Close.
func (s *Server) WaitForSlave(ctx context.Context, end int64) error {
	if !s.SlaveOK(end) {
		return ErrSlaveNotAvailable
	}
	s.Notify() // as 4.9.7's wakeupAll: do not wait for the writers' poll
	for {
		s.mu.Lock()
		ch, closed := s.ackCh, s.closed
		s.mu.Unlock()
		if closed {
			return ErrClosed
		}
		if s.acked.Load() >= end {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if s.acked.Load() >= end {
				return nil
			}
			return ErrSlaveTimeout
		}
	}
}

// ack raises the acknowledged offset and wakes WaitForSlave.
func (s *Server) ack(off int64) {
	for {
		cur := s.acked.Load()
		if off <= cur {
			return
		}
		if s.acked.CompareAndSwap(cur, off) {
			break
		}
	}
	s.mu.Lock()
	if !s.closed {
		close(s.ackCh)
		s.ackCh = make(chan struct{})
	}
	s.mu.Unlock()
}

func (s *Server) acceptLoop(ln net.Listener) {
	defer s.wg.Done()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient (e.g. too many open files): back off like net/http.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed", "err", err, "retry", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		c := &slaveConn{srv: s, nc: nc, addr: nc.RemoteAddr().String(), requested: make(chan int64, 1), quit: make(chan struct{}), kick: make(chan struct{}, 1)}
		c.ack.Store(-1)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		// Info once it reports ("slave requests offset"): a connection refused by TLS, or
		// a port scan, is not worth a line each (the refusals are logged rate-limited).
		s.log.Debug("slave connected", "slave", c.addr)
		s.wg.Add(1)
		go c.run()
	}
}

// slaveConn is one slave: a reader of its reports and a writer of frames.
type slaveConn struct {
	srv       *Server
	nc        net.Conn
	addr      string
	ack       atomic.Int64  // last report, -1 before the first
	requested chan int64    // the first report, once
	quit      chan struct{} // closed when the reader ends: the writer stops too
	kick      chan struct{} // Notify: the commitlog grew
}

func (c *slaveConn) run() {
	defer c.srv.wg.Done()
	done := make(chan struct{})
	var werr error
	go func() {
		defer close(done)
		werr = c.writeLoop()
		c.nc.Close() // stops the reader
	}()
	rerr := c.readLoop()
	close(c.quit)
	c.nc.Close() // stops a write in progress
	<-done
	s := c.srv
	s.mu.Lock()
	delete(s.conns, c)
	closed := s.closed
	s.mu.Unlock()
	if !closed {
		level := slog.LevelInfo
		if c.ack.Load() < 0 {
			level = slog.LevelDebug // never reported: never was a slave
		}
		s.log.Log(context.Background(), level, "slave disconnected", "slave", c.addr, "ack", c.ack.Load(), "read", rerr, "write", werr)
	}
}

// readLoop reads the slave's 8-byte reports until the connection fails or
// stays silent for HousekeepingInterval.
func (c *slaveConn) readLoop() error {
	s := c.srv
	var buf [reportSize]byte
	for {
		c.nc.SetReadDeadline(time.Now().Add(s.cfg.HousekeepingInterval))
		if _, err := io.ReadFull(c.nc, buf[:]); err != nil {
			return err
		}
		off := int64(binary.BigEndian.Uint64(buf[:]))
		if off < 0 {
			return fmt.Errorf("ha: slave %s reported negative offset %d", c.addr, off)
		}
		first := c.ack.Swap(off) < 0
		if first {
			s.log.Info("slave requests offset", "slave", c.addr, "offset", off)
			c.requested <- off
		}
		max := s.st.CommitLogMaxOffset()
		if off > max {
			if first {
				// 4.9.7 accepts it and waits for the master to get there;
				// it is no acknowledgement of anything we hold, though.
				continue
			}
			return fmt.Errorf("ha: slave %s acknowledged %d beyond the master's max offset %d", c.addr, off, max)
		}
		s.ack(off)
	}
}

// writeLoop waits for the first report, then streams the commitlog from
// the requested offset, with an empty frame after HeartbeatInterval of
// silence.
func (c *slaveConn) writeLoop() error {
	s := c.srv
	var next int64
	select {
	case req := <-c.requested:
		next = req
	case <-c.quit:
		return nil
	}
	if next == 0 {
		if s.cfg.EmptySlaveFromOldest {
			next = s.st.CommitLogMinOffset()
		} else {
			// 4.9.7: an empty slave starts at the newest segment.
			m := s.st.CommitLogMaxOffset()
			next = m - m%s.cfg.SegmentSize
		}
	}
	s.log.Info("transferring to slave", "slave", c.addr, "from", next)
	var hdr [headerSize]byte
	lastWrite := time.Now()
	warnedBelowMin := false
	checked := int64(-1) // end of the last record the store checked for us
	var failedAt int64 = -1
	poll := time.NewTimer(0)
	defer poll.Stop()
	for {
		if time.Since(lastWrite) >= s.cfg.HeartbeatInterval {
			if err := c.writeFrame(hdr[:], next, nil); err != nil {
				return err
			}
			lastWrite = time.Now()
		}
		data, end, release, err := s.st.ReadChecked(next, s.cfg.TransferBatchSize, checked)
		if err != nil && failedAt != next {
			// The slave waits here (heartbeats only) until an operator
			// repairs the master's store; logged once per offset.
			s.log.Error("cannot replicate: the commitlog is damaged where the slave needs it", "slave", c.addr, "offset", next, "err", err)
			failedAt = next
		}
		if len(data) > 0 {
			checked = end
			err := c.writeFrame(hdr[:], next, data)
			n := len(data)
			release()
			if err != nil {
				return err
			}
			next += int64(n)
			lastWrite = time.Now()
			continue
		}
		release()
		if min := s.st.CommitLogMinOffset(); next < min && !warnedBelowMin {
			// As in 4.9.7 the slave then gets nothing but heartbeats.
			s.log.Warn("slave needs data the master no longer has", "slave", c.addr, "next", next, "min", min)
			warnedBelowMin = true
		}
		poll.Reset(min(s.cfg.PollInterval, s.cfg.HeartbeatInterval-time.Since(lastWrite)))
		select {
		case <-c.kick: // buffered: an append after ReadRaw is not missed
		case <-poll.C:
		case <-c.quit:
			return nil
		}
	}
}

// writeFrame writes one frame (header, then body) with a deadline.
func (c *slaveConn) writeFrame(hdr []byte, off int64, body []byte) error {
	binary.BigEndian.PutUint64(hdr[0:8], uint64(off))
	binary.BigEndian.PutUint32(hdr[8:12], uint32(len(body)))
	c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.HousekeepingInterval))
	bufs := net.Buffers{hdr, body}
	_, err := bufs.WriteTo(c.nc)
	return err
}
