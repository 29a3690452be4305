package remoting

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

var (
	ErrIdle         = errors.New("remoting: connection idle too long")
	ErrFrameTimeout = errors.New("remoting: frame not received in time")
)

// deadlineReader is what a connection's bufio.Reader reads from. A read waits at most
// until nothing has arrived for idle, or, once a frame has begun, until frame has
// passed since its first byte: a silent peer, a slowloris sending a byte a second and
// a frame shorter than its length field all end there.
//
// The socket's deadline is only ever moved earlier; a read that it ends before the
// deadline that applies is retried with the right one. So steady traffic, whose
// deadlines only move later, sets none, and the deadlines cost no goroutine or timer
// of their own.
type deadlineReader struct {
	nc      net.Conn
	idle    time.Duration // 0: no idle limit
	frame   time.Duration // 0: no frame limit
	last    time.Time     // when bytes last arrived (or the connection opened)
	frameAt time.Time     // when the frame being read began; zero between frames
	armed   time.Time     // the deadline set on nc; zero: none
	// pending is read before nc: the bytes a server read to tell TLS from plain text.
	pending []byte
}

func newDeadlineReader(nc net.Conn, idle, frame time.Duration) *deadlineReader {
	return &deadlineReader{nc: nc, idle: idle, frame: frame, last: time.Now()}
}

// nextFrame tells d that a frame has been read whole and buffered bytes of the next
// one are at hand: those arrived with the last read.
func (d *deadlineReader) nextFrame(buffered int) {
	if buffered > 0 {
		d.frameAt = d.last
	} else {
		d.frameAt = time.Time{}
	}
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	if len(d.pending) > 0 {
		n := copy(p, d.pending)
		d.pending = d.pending[n:]
		d.last = time.Now()
		if d.frameAt.IsZero() {
			d.frameAt = d.last
		}
		return n, nil
	}
	if d.idle <= 0 && d.frame <= 0 {
		return d.nc.Read(p)
	}
	for {
		due := d.due()
		if !due.IsZero() && (d.armed.IsZero() || due.Before(d.armed)) {
			d.arm(due)
		}
		n, err := d.nc.Read(p)
		if n > 0 {
			d.last = time.Now()
			if d.frameAt.IsZero() {
				d.frameAt = d.last
			}
			return n, err
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		if !due.IsZero() && !time.Now().Before(due) {
			return 0, d.expired(due)
		}
		d.arm(due) // an earlier deadline ended the read: wait for this one
	}
}

func (d *deadlineReader) arm(t time.Time) {
	d.nc.SetReadDeadline(t)
	d.armed = t
}

// due is the deadline that applies now; zero when none does.
func (d *deadlineReader) due() time.Time {
	var due time.Time
	if d.frame > 0 && !d.frameAt.IsZero() {
		due = d.frameAt.Add(d.frame)
	}
	if d.idle > 0 {
		if idle := d.last.Add(d.idle); due.IsZero() || idle.Before(due) {
			due = idle
		}
	}
	return due
}

func (d *deadlineReader) expired(due time.Time) error {
	if d.frame > 0 && !d.frameAt.IsZero() && due.Equal(d.frameAt.Add(d.frame)) {
		return fmt.Errorf("%w: frame begun %v ago", ErrFrameTimeout, d.frame)
	}
	return fmt.Errorf("%w: nothing received for %v", ErrIdle, d.idle)
}
