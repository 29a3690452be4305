package transaction

import (
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/schedule"
	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// Store is what the package needs from the message store; *store.Store
// satisfies it.
type Store interface {
	PutMessage(m *message.Message) (*store.PutResult, error)
	GetMessage(topic string, queueID int32, offset int64, maxMsgs, maxBytes int, filter store.MessageFilter) *store.GetResult
	GetMessageByOffset(phy int64) (*message.MessageExt, error)
	MinOffsetInQueue(topic string, queueID int32) int64
	MaxOffsetInQueue(topic string, queueID int32) int64
	FlushedOffset() int64
	MaxDelayLevel() int
}

// Offsets is the consumer offset table (*metadata.Offsets satisfies it).
// Query returns -1 when there is no offset.
type Offsets interface {
	Query(group, topic string, queueID int32) int64
	Commit(group, topic string, queueID int32, offset int64)
}

// CheckRequest asks the producer group for the state of one transaction:
// the fields of CHECK_TRANSACTION_STATE (39). Msg is the half message copy
// just put, with its real topic and queue restored (the request body).
type CheckRequest struct {
	ProducerGroup        string
	TranStateTableOffset int64  // queue offset of the copy in the half queue
	CommitLogOffset      int64  // commitlog offset of the copy
	OffsetMsgID          string // offsetMsgId of the copy
	MsgID                string // UNIQ_KEY
	TransactionID        string // Java sends MsgID again
	Msg                  *message.MessageExt
}

// Checker sends a check to a live producer of req.ProducerGroup. It must
// not block (the broker sends a oneway request, or drops the check when no
// producer of the group is connected; the next scan asks again).
type Checker func(req *CheckRequest)

// Defaults, as BrokerConfig.
const (
	DefaultCheckInterval      = 60 * time.Second // transactionCheckInterval
	DefaultTransactionTimeout = 6 * time.Second  // transactionTimeOut
	DefaultCheckMax           = 15               // transactionCheckMax
)

// Config configures a Service.
type Config struct {
	CheckInterval      time.Duration
	TransactionTimeout time.Duration
	CheckMax           int
	// FileReservedTime (the store's fileReservedTime, 72 h): half messages
	// born longer ago are discarded unchecked, as Java does.
	FileReservedTime time.Duration
	// EndedTTL is how long the transaction id (UNIQ_KEY) of an ended
	// transaction is remembered, default 3 * (CheckInterval +
	// TransactionTimeout). See Service.ended.
	EndedTTL time.Duration
	Now      func() time.Time
	// Logger defaults to slog.Default() with component=transaction. WARN lines are
	// transactions discarded or at risk (an op record not written).
	Logger *slog.Logger
}

// Service ends transactions and runs the periodic check.
type Service struct {
	st      Store
	offsets Offsets
	checker Checker
	cfg     Config

	scanMu  sync.Mutex // one scan at a time; guards pos and pending
	pos     *progress  // where the last scan ended (nil: use the committed offsets)
	pending []progress // scan ends not yet committed, oldest first
	mu      sync.Mutex
	started bool
	closed  bool
	stop    chan struct{}
	done    chan struct{}

	// ended holds the UNIQ_KEY of transactions ended in the last EndedTTL.
	// While a producer has not answered, every scan puts a new copy of its
	// half message and checks it; an answer names one copy, so the op
	// message marks only that one. Remembering the id keeps the other
	// copies from being checked again and a second answer from committing
	// twice (Java has no such guard). In memory only: after a restart the
	// op messages alone decide, as in Java.
	endedMu sync.Mutex
	ended   map[string]time.Time
}

// New returns a stopped Service.
func New(st Store, offsets Offsets, checker Checker, cfg Config) *Service {
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = DefaultCheckInterval
	}
	if cfg.TransactionTimeout <= 0 {
		cfg.TransactionTimeout = DefaultTransactionTimeout
	}
	if cfg.CheckMax <= 0 {
		cfg.CheckMax = DefaultCheckMax
	}
	if cfg.FileReservedTime <= 0 {
		cfg.FileReservedTime = 72 * time.Hour
	}
	if cfg.EndedTTL <= 0 {
		cfg.EndedTTL = 3 * (cfg.CheckInterval + cfg.TransactionTimeout)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default().With("component", "transaction")
	}
	return &Service{st: st, offsets: offsets, checker: checker, cfg: cfg, stop: make(chan struct{}), done: make(chan struct{}),
		ended: map[string]time.Time{}}
}

// Start runs a check every CheckInterval.
func (s *Service) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return
	}
	s.started = true
	go s.loop()
}

// Close stops the check loop (waiting for a running scan).
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	started := s.started
	close(s.stop)
	s.mu.Unlock()
	if started {
		<-s.done
	}
	// Clean shutdown: the store flushes everything on its own Close, which
	// comes after this one, so the last position can be committed.
	s.scanMu.Lock()
	if s.pos != nil {
		s.offsets.Commit(SysGroup, HalfTopic, halfQueueID, s.pos.half)
		s.offsets.Commit(SysGroup, OpTopic, halfQueueID, s.pos.op)
		s.pending = nil
	}
	s.scanMu.Unlock()
	return nil
}

func (s *Service) loop() {
	defer close(s.done)
	t := time.NewTicker(s.cfg.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if _, err := s.Check(); err != nil {
				s.cfg.Logger.Warn("transaction check failed", "err", err)
			}
		}
	}
}

// EndRequest is END_TRANSACTION's header.
type EndRequest struct {
	ProducerGroup        string
	TranStateTableOffset int64 // queue offset of the half message
	CommitLogOffset      int64 // commitlog offset of the half message
	CommitOrRollback     int32 // message.Transaction{Commit,Rollback,Not}Type
	FromTransactionCheck bool
	MsgID                string
	TransactionID        string
}

// EndTransaction commits or rolls back the half message named by req.
// For COMMIT it returns the put of the real message. For NOT_TYPE
// (UNKNOWN) it does nothing and returns nil, nil: Java sends no response.
func (s *Service) EndTransaction(req EndRequest) (*store.PutResult, error) {
	switch req.CommitOrRollback {
	case message.TransactionCommitType, message.TransactionRollbackType:
	default:
		return nil, nil
	}
	half, err := s.st.GetMessageByOffset(req.CommitLogOffset)
	if err != nil {
		return nil, fmt.Errorf("%w: commitlog offset %d: %w", ErrHalfNotFound, req.CommitLogOffset, err)
	}
	if half.Topic != HalfTopic {
		return nil, fmt.Errorf("%w: commitlog offset %d holds topic %s", ErrHalfNotFound, req.CommitLogOffset, half.Topic)
	}
	if g := half.Property(message.PropertyProducerGroup); g != req.ProducerGroup {
		return nil, fmt.Errorf("%w: %q, half message has %q", ErrWrongGroup, req.ProducerGroup, g)
	}
	if half.QueueOffset != req.TranStateTableOffset {
		return nil, fmt.Errorf("%w: %d, half message has %d", ErrWrongOffset, req.TranStateTableOffset, half.QueueOffset)
	}
	id := half.Property(message.PropertyUniqClientMessageIDKey)
	if !s.markEnded(id) {
		s.cfg.Logger.Info("transaction already ended: answer ignored", "msgId", id, "producerGroup", req.ProducerGroup,
			"topic", HalfTopic, "queue", halfQueueID, "offset", half.QueueOffset)
		return nil, nil
	}
	var res *store.PutResult
	if req.CommitOrRollback == message.TransactionCommitType {
		m, err := realMessage(half)
		if err != nil {
			return nil, err
		}
		if _, err := schedule.ToSchedule(m, s.st.MaxDelayLevel()); err != nil {
			return nil, err
		}
		if res, err = s.st.PutMessage(m); err != nil {
			s.unmarkEnded(id)
			return nil, err
		}
	}
	if _, err := s.st.PutMessage(opMessage(half.QueueOffset, s.cfg.Now().UnixMilli(), half)); err != nil {
		// The transaction is ended but will be checked again; a second
		// commit answer would deliver twice.
		s.cfg.Logger.Warn("cannot write a transaction's op record: it will be checked again", "topic", OpTopic,
			"halfOffset", half.QueueOffset, "err", err)
	}
	return res, nil
}

// CheckStats reports one scan.
type CheckStats struct {
	Done, Checked, Discarded, Renewed int
	HalfOffset, OpOffset              int64 // where the scan ended (committed once flushed)
}

// Check runs one scan now (the loop calls it every CheckInterval): it reads the op
// records written since the last scan (which half messages are done), then walks the
// half queue from where the last scan ended, deciding each message (halfMessage), and
// records where it stopped, to be committed once the copies it put are flushed.
func (s *Service) Check() (CheckStats, error) {
	s.scanMu.Lock()
	defer s.scanMu.Unlock()
	sc := &scan{s: s, begin: s.cfg.Now().UnixMilli()}
	s.sweepEnded()
	s.commitFlushed()

	halfOff := s.startOffset(HalfTopic)
	opOff := s.startOffset(OpTopic)
	halfMax := s.st.MaxOffsetInQueue(HalfTopic, halfQueueID)
	sc.st.HalfOffset, sc.st.OpOffset = halfOff, opOff
	opRefs, removed := s.readOps(opOff)
	sc.removed = removed

	i := halfOff
	for ; i < halfMax && !s.stopping(); i++ {
		if removed[i] {
			sc.st.Done++
			continue
		}
		h, next, err := s.halfAt(i)
		if err != nil {
			return sc.st, err
		}
		if h == nil {
			if next > i {
				i = next - 1 // records gone (retention)
				continue
			}
			break
		}
		if !sc.halfMessage(i, h) {
			break
		}
	}

	newOp := opOff
	for j := 0; j < len(opRefs) && opRefs[j] < i; j++ {
		newOp++
	}
	s.pos = &progress{half: i, op: newOp, phyEnd: sc.lastPut}
	s.pending = append(s.pending, *s.pos)
	s.commitFlushed()
	sc.st.HalfOffset, sc.st.OpOffset = i, newOp
	return sc.st, nil
}

// readOps reads the op records from opOff: refs[j] is the half offset op opOff+j names
// (-1 when unreadable or gone), removed the set of half offsets they mark done (below
// the scan's start too: a copy's TRAN_PREPARED_QUEUE_OFFSET may name one). scanMu held.
func (s *Service) readOps(opOff int64) (refs []int64, removed map[int64]bool) {
	opMax := s.st.MaxOffsetInQueue(OpTopic, halfQueueID)
	refs = make([]int64, 0, max(opMax-opOff, 0))
	removed = map[int64]bool{}
	for off := opOff; off < opMax; {
		r := s.st.GetMessage(OpTopic, halfQueueID, off, 32, 0, nil)
		if r.Status != store.Found {
			r.Release()
			if r.NextBeginOffset <= off {
				break
			}
			for ; off < r.NextBeginOffset; off++ {
				refs = append(refs, -1)
			}
			continue
		}
		for _, rec := range r.Messages {
			v, err := message.ParseRecord(rec)
			ref := int64(-1)
			if err == nil {
				if n, perr := strconv.ParseInt(string(v.Body()), 10, 64); perr == nil {
					ref = n
				}
			}
			refs = append(refs, ref)
			if ref >= 0 {
				removed[ref] = true
			}
		}
		off = r.NextBeginOffset
		r.Release()
	}
	return refs, removed
}

// scan is the state of one Check.
type scan struct {
	s       *Service
	begin   int64          // ms: half messages stored from then on wait for the next scan
	removed map[int64]bool // half offsets an op record marks done
	st      CheckStats
	lastPut int64 // end of the last copy put: the position is durable once flushed there
}

// putCopy puts a renewed copy of h at the end of the half queue.
func (sc *scan) putCopy(h *message.MessageExt, set map[string]string) (*store.PutResult, error) {
	m, err := renewHalf(h, set)
	if err != nil {
		return nil, err
	}
	res, err := sc.s.st.PutMessage(m)
	if err == nil {
		sc.lastPut = res.PhysicalOffset + int64(res.Size)
		sc.st.Renewed++
	}
	return res, err
}

// halfMessage decides the half message h at queue offset i: done (ended, or a copy of
// one that was), discarded (checked too often, or older than the files are kept), moved
// to the end (a long immunity), or checked (a renewed copy put and its producer asked).
// It reports false where the scan stops: h is younger than the scan or not due, and
// the rest are younger still, or a put failed.
func (sc *scan) halfMessage(i int64, h *message.MessageExt) bool {
	s := sc.s
	if h.StoreTimestamp >= sc.begin {
		return false // put during this scan
	}
	if s.isEnded(h.Property(message.PropertyUniqClientMessageIDKey)) {
		sc.st.Done++ // another copy of an ended transaction
		return true
	}
	if po, err := strconv.ParseInt(h.Property(message.PropertyTranPreparedQueueOffset), 10, 64); err == nil && sc.removed[po] {
		sc.st.Done++ // a copy whose original was ended
		return true
	}
	times := 0
	if v := h.Property(message.PropertyTransactionCheckTimes); v != "" {
		times, _ = strconv.Atoi(v)
	}
	age := sc.begin - h.BornTimestamp
	if times >= s.cfg.CheckMax || age > s.cfg.FileReservedTime.Milliseconds() {
		s.discard(h, i, times)
		sc.st.Discarded++
		return true
	}
	immunity := s.cfg.TransactionTimeout.Milliseconds()
	immuneSet := false
	if v := h.Property(message.PropertyCheckImmunityTimeInSecond); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			immuneSet = true
			if n != -1 {
				immunity = n * 1000
			}
		}
	}
	if age >= 0 && age < immunity {
		if !immuneSet {
			return false // not due; later half messages are younger
		}
		// A long immunity must not hold up the queue: move the message to the end,
		// remembering where it started.
		set := map[string]string{}
		if h.Property(message.PropertyTranPreparedQueueOffset) == "" {
			set[message.PropertyTranPreparedQueueOffset] = strconv.FormatInt(i, 10)
		}
		if _, err := sc.putCopy(h, set); err != nil {
			s.cfg.Logger.Warn("cannot renew a half message", "topic", HalfTopic, "queue", halfQueueID, "offset", i, "err", err)
			return false
		}
		return true
	}
	res, err := sc.putCopy(h, map[string]string{message.PropertyTransactionCheckTimes: strconv.Itoa(times + 1)})
	if err != nil {
		s.cfg.Logger.Warn("cannot renew a half message", "topic", HalfTopic, "queue", halfQueueID, "offset", i, "err", err)
		return false
	}
	sc.st.Checked++
	s.sendCheck(res)
	return true
}

// progress is a scan position; it may be committed once the commitlog is
// flushed up to phyEnd (the copies the scan put are durable).
type progress struct {
	half, op, phyEnd int64
}

// commitFlushed commits the newest pending position whose copies are
// flushed. scanMu held.
func (s *Service) commitFlushed() {
	flushed := s.st.FlushedOffset()
	n := 0
	var last *progress
	for ; n < len(s.pending) && s.pending[n].phyEnd <= flushed; n++ {
		last = &s.pending[n]
	}
	if last == nil {
		return
	}
	s.offsets.Commit(SysGroup, HalfTopic, halfQueueID, last.half)
	s.offsets.Commit(SysGroup, OpTopic, halfQueueID, last.op)
	s.pending = append([]progress(nil), s.pending[n:]...)
}

func (s *Service) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

func (s *Service) startOffset(topic string) int64 {
	var off int64
	switch {
	case s.pos != nil && topic == HalfTopic:
		off = s.pos.half
	case s.pos != nil:
		off = s.pos.op
	default:
		off = s.offsets.Query(SysGroup, topic, halfQueueID)
	}
	if min := s.st.MinOffsetInQueue(topic, halfQueueID); off < min {
		off = min
	}
	return off
}

// halfAt reads the half message at queue offset i. Without a message it
// returns the next readable offset.
func (s *Service) halfAt(i int64) (*message.MessageExt, int64, error) {
	r := s.st.GetMessage(HalfTopic, halfQueueID, i, 1, 0, nil)
	defer r.Release()
	if r.Status != store.Found {
		return nil, r.NextBeginOffset, nil
	}
	h, err := message.DecodeRecord(r.Messages[0], false)
	if err != nil {
		s.cfg.Logger.Warn("half message unreadable: skipped", "topic", HalfTopic, "queue", halfQueueID, "offset", i, "err", err)
		return nil, i + 1, nil
	}
	return h, i + 1, nil
}

func (s *Service) sendCheck(res *store.PutResult) {
	if s.checker == nil {
		return
	}
	m, err := s.st.GetMessageByOffset(res.PhysicalOffset)
	if err != nil {
		s.cfg.Logger.Warn("cannot read a renewed half message", "offset", res.PhysicalOffset, "err", err)
		return
	}
	req := &CheckRequest{
		ProducerGroup:        m.Property(message.PropertyProducerGroup),
		TranStateTableOffset: m.QueueOffset,
		CommitLogOffset:      m.PhysicalOffset,
		OffsetMsgID:          m.OffsetMsgID(),
		MsgID:                m.Property(message.PropertyUniqClientMessageIDKey),
	}
	req.TransactionID = req.MsgID
	m.Topic = m.Property(message.PropertyRealTopic)
	if q, err := strconv.Atoi(m.Property(message.PropertyRealQueueID)); err == nil {
		m.QueueID = int32(q)
	}
	req.Msg = m
	s.checker(req)
}

// markEnded records id as ended; false if it already was.
func (s *Service) markEnded(id string) bool {
	if id == "" {
		return true
	}
	s.endedMu.Lock()
	defer s.endedMu.Unlock()
	if _, ok := s.ended[id]; ok {
		return false
	}
	s.ended[id] = s.cfg.Now()
	return true
}

func (s *Service) unmarkEnded(id string) {
	s.endedMu.Lock()
	delete(s.ended, id)
	s.endedMu.Unlock()
}

func (s *Service) isEnded(id string) bool {
	if id == "" {
		return false
	}
	s.endedMu.Lock()
	defer s.endedMu.Unlock()
	_, ok := s.ended[id]
	return ok
}

func (s *Service) sweepEnded() {
	cut := s.cfg.Now().Add(-s.cfg.EndedTTL)
	s.endedMu.Lock()
	defer s.endedMu.Unlock()
	for id, t := range s.ended {
		if t.Before(cut) {
			delete(s.ended, id)
		}
	}
}

// discard moves a half message that will not be checked again to
// TRANS_CHECK_MAX_TIME_TOPIC, where it can be looked at but is never
// delivered (Java's DefaultTransactionalMessageCheckListener).
func (s *Service) discard(h *message.MessageExt, off int64, times int) {
	s.cfg.Logger.Warn("half message discarded: checked too often or too old", "msgId", h.Property(message.PropertyUniqClientMessageIDKey),
		"realTopic", h.Property(message.PropertyRealTopic), "producerGroup", h.Property(message.PropertyProducerGroup),
		"topic", HalfTopic, "queue", halfQueueID, "offset", off, "checks", times, "to", DiscardTopic)
	m, err := renewHalf(h, nil)
	if err == nil {
		m.Topic = DiscardTopic
		_, err = s.st.PutMessage(m)
	}
	if err != nil {
		s.cfg.Logger.Warn("cannot put a discarded half message", "topic", DiscardTopic, "err", err)
	}
}
