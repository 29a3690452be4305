package schedule

import (
	"github.com/openrmq/rocketmq-operator/pkg/atomicfile"

	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// Store is what the Service needs from the message store; *store.Store
// satisfies it.
type Store interface {
	PutMessage(m *message.Message) (*store.PutResult, error)
	GetMessage(topic string, queueID int32, offset int64, maxMsgs, maxBytes int, filter store.MessageFilter) *store.GetResult
	MinOffsetInQueue(topic string, queueID int32) int64
	MaxOffsetInQueue(topic string, queueID int32) int64
	FlushedOffset() int64
	OnArrival(fn store.ArrivalFunc)
	DeliverTime(level int, storeTs int64) int64
	MaxDelayLevel() int
}

// Defaults of Config.
const (
	DefaultRetryInterval   = time.Second
	DefaultPersistInterval = 100 * time.Millisecond
)

// Config configures a Service.
type Config struct {
	// ConfigDir holds delayOffset.json: <storePathRootDir>/config.
	ConfigDir string
	// RetryInterval is the wait after a failed put before trying the same
	// message again (RocketMQ waits 10 s).
	RetryInterval time.Duration
	// PersistInterval is how often flushed progress is written.
	PersistInterval time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default() with component=schedule. WARN lines are
	// messages skipped or held back.
	Logger *slog.Logger
}

// mark records that the entries before offset are done once the commitlog
// is flushed up to phyEnd.
type mark struct {
	offset int64
	phyEnd int64
}

type level struct {
	n     int
	delay int64         // ms
	wake  chan struct{} // cap 1
	// Guarded by Service.mu.
	next    int64  // next queue offset to look at (in memory)
	pending []mark // delivered, not yet flushed
	durable int64  // offset safe to persist
}

// Service delivers due delayed messages back to their real topics.
type Service struct {
	st     Store
	cfg    Config
	path   string
	levels []*level // index level-1

	mu        sync.Mutex
	persisted map[int]int64 // last written table
	started   bool
	closed    bool
	stop      chan struct{}
	wg        sync.WaitGroup
	persistMu sync.Mutex // one writer of the file
}

// New loads the delay offsets and returns a stopped Service. It registers
// an arrival listener on st (once per Service; the store cannot remove
// listeners, so a closed Service's listener does nothing).
func New(st Store, cfg Config) (*Service, error) {
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = DefaultRetryInterval
	}
	if cfg.PersistInterval <= 0 {
		cfg.PersistInterval = DefaultPersistInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default().With("component", "schedule")
	}
	s := &Service{st: st, cfg: cfg, path: filepath.Join(cfg.ConfigDir, OffsetFile), stop: make(chan struct{})}
	table, fb, err := loadOffsets(s.path)
	if err != nil {
		return nil, err
	}
	if fb != nil {
		cfg.Logger.Warn("delay offsets file unusable: loaded its backup", "path", fb.Path, "reason", fb.Reason, "keptAs", fb.KeptAs)
	}
	s.persisted = table
	for n := 1; n <= st.MaxDelayLevel(); n++ {
		l := &level{n: n, delay: st.DeliverTime(n, 0), wake: make(chan struct{}, 1)}
		l.next, l.durable = table[n], table[n]
		s.levels = append(s.levels, l)
	}
	st.OnArrival(s.onArrival)
	return s, nil
}

// Start launches one goroutine per level and the persister.
func (s *Service) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return
	}
	s.started = true
	for _, l := range s.levels {
		s.wg.Add(1)
		go s.run(l)
	}
	s.wg.Add(1)
	go s.persistLoop()
}

// Close stops delivery and writes the exact offsets. Call it before
// closing the store (whose Close flushes what was re-put).
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	for _, l := range s.levels {
		l.durable, l.pending = l.next, nil
	}
	s.mu.Unlock()
	return s.Persist()
}

// halt stops delivery without writing the offsets: what a crash leaves
// behind (tests).
func (s *Service) halt() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Offsets returns the in-memory next offset of every level.
func (s *Service) Offsets() map[int]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := make(map[int]int64, len(s.levels))
	for _, l := range s.levels {
		t[l.n] = l.next
	}
	return t
}

// Encode returns the durable offset table in delayOffset.json form (what a
// slave copies from its master).
func (s *Service) Encode() []byte {
	return EncodeOffsets(s.durableTable())
}

func (s *Service) durableTable() map[int]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	flushed := s.st.FlushedOffset()
	t := make(map[int]int64, len(s.levels))
	for _, l := range s.levels {
		i := 0
		for ; i < len(l.pending) && l.pending[i].phyEnd <= flushed; i++ {
			l.durable = l.pending[i].offset
		}
		l.pending = l.pending[i:]
		t[l.n] = l.durable
	}
	return t
}

// Persist writes the durable offsets if they changed since the last write.
func (s *Service) Persist() error {
	s.persistMu.Lock()
	defer s.persistMu.Unlock()
	t := s.durableTable()
	if sameTable(t, s.persisted) {
		return nil
	}
	if err := atomicfile.Write(s.path, EncodeOffsets(t)); err != nil {
		return err
	}
	s.persisted = t
	return nil
}

func sameTable(a, b map[int]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func (s *Service) persistLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.PersistInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.Persist(); err != nil {
				s.cfg.Logger.Warn("cannot persist the delay offsets", "path", s.path, "err", err)
			}
		}
	}
}

func (s *Service) onArrival(a *store.Arrival) {
	if a.Topic != Topic {
		return
	}
	n := Level(a.QueueID)
	if n < 1 || n > len(s.levels) {
		return
	}
	select {
	case s.levels[n-1].wake <- struct{}{}:
	default:
	}
}

// run is the delivery loop of one level.
func (s *Service) run(l *level) {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		if wait := s.deliver(l); wait >= 0 {
			timer.Reset(wait)
		}
		select {
		case <-s.stop:
			timer.Stop()
			return
		case <-l.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

func (s *Service) stopped() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// deliver re-puts every due message at the head of l's queue. It returns
// how long until the head is due, or -1 when the queue is drained.
func (s *Service) deliver(l *level) time.Duration {
	qid := QueueID(l.n)
	for !s.stopped() {
		s.mu.Lock()
		off := l.next
		s.mu.Unlock()
		if min := s.st.MinOffsetInQueue(Topic, qid); off < min {
			s.cfg.Logger.Warn("delay level behind its queue's first message (retention): skipping ahead",
				"topic", Topic, "queue", qid, "level", l.n, "offset", off, "minOffset", min)
			off = min
			s.advance(l, off, 0)
		}
		if off >= s.st.MaxOffsetInQueue(Topic, qid) {
			return -1
		}
		var due int64
		var tagged bool
		filter := store.FilterFuncs{Tags: func(c int64) bool { due, tagged = c, true; return true }}
		r := s.st.GetMessage(Topic, qid, off, 1, 0, filter)
		if r.Status != store.Found {
			r.Release()
			if r.NextBeginOffset > off {
				s.advance(l, r.NextBeginOffset, 0) // entries whose records are gone
				continue
			}
			return s.cfg.RetryInterval
		}
		m, err := message.DecodeRecord(r.Messages[0], false)
		r.Release()
		if err != nil {
			s.cfg.Logger.Warn("delayed message unreadable: skipped", "topic", Topic, "queue", qid, "offset", off, "err", err)
			s.advance(l, off+1, 0)
			continue
		}
		if !tagged {
			due = s.st.DeliverTime(l.n, m.StoreTimestamp)
		}
		now := s.cfg.Now().UnixMilli()
		if due > now+l.delay {
			due = now // clock went back: deliver now, as RocketMQ does
		}
		if due > now {
			return time.Duration(due-now) * time.Millisecond
		}
		in, err := Restore(m)
		if err == nil && in.Topic == halfTopic {
			err = errors.New("schedule: real topic is the transaction half topic")
		}
		if err != nil {
			s.cfg.Logger.Warn("delayed message without a real topic: discarded", "topic", Topic, "queue", qid, "offset", off, "err", err)
			s.advance(l, off+1, 0)
			continue
		}
		res, err := s.st.PutMessage(in)
		switch {
		case err == nil:
			s.advance(l, off+1, res.PhysicalOffset+int64(res.Size))
		case errors.Is(err, store.ErrBadMessage) || errors.Is(err, store.ErrMessageTooLarge):
			s.cfg.Logger.Warn("delayed message refused by its real topic: discarded", "topic", Topic, "queue", qid, "offset", off,
				"realTopic", in.Topic, "err", err)
			s.advance(l, off+1, 0)
		default:
			s.cfg.Logger.Warn("cannot deliver a delayed message: retrying", "topic", Topic, "queue", qid, "offset", off,
				"realTopic", in.Topic, "err", err, "retry", s.cfg.RetryInterval)
			return s.cfg.RetryInterval
		}
	}
	return -1
}

// advance moves l past every entry before next; phyEnd is the end of the
// last re-put record (0 when nothing was put).
func (s *Service) advance(l *level, next, phyEnd int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.next = next
	if phyEnd == 0 && len(l.pending) == 0 {
		l.durable = next
		return
	}
	if phyEnd == 0 {
		phyEnd = l.pending[len(l.pending)-1].phyEnd
	}
	l.pending = append(l.pending, mark{offset: next, phyEnd: phyEnd})
}
