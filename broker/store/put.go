package store

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/openrmq/rocketmq-operator/pkg/message"
	"github.com/openrmq/rocketmq-operator/pkg/names"
)

// PutStatus is the outcome of a stored append.
type PutStatus int

// Put statuses (RocketMQ PutMessageStatus for stored messages).
const (
	PutOK               PutStatus = iota // stored (and flushed, under SYNC_FLUSH)
	PutFlushDiskTimeout                  // stored, but the sync flush did not finish in SyncFlushTimeout
)

func (p PutStatus) String() string {
	if p == PutFlushDiskTimeout {
		return "FLUSH_DISK_TIMEOUT"
	}
	return "PUT_OK"
}

// PutResult describes an append. For a batch, offsets are those of the
// first message and MsgIDs lists every message's offsetMsgId.
type PutResult struct {
	Status         PutStatus
	PhysicalOffset int64 // commitlog offset of the first record
	Size           int   // bytes written, all records
	StoreTimestamp int64
	QueueOffset    int64 // queue offset of the first message
	MsgCount       int
	MsgIDs         []string
}

// MsgID is the first message's offsetMsgId.
func (r *PutResult) MsgID() string { return r.MsgIDs[0] }

// PutMessage appends one message. Refused messages (too large, malformed)
// return an error wrapping ErrMessageTooLarge or ErrBadMessage and write
// nothing; an I/O failure returns ErrWriteFailed.
func (s *Store) PutMessage(m *message.Message) (*PutResult, error) {
	return s.PutMessages([]*message.Message{m})
}

// PutMessages appends a batch for one topic and queue: consecutive records
// with consecutive queue offsets, all in one segment. Under SYNC_FLUSH it
// returns once the records are durable (or SyncFlushTimeout passed).
func (s *Store) PutMessages(msgs []*message.Message) (*PutResult, error) {
	res, durable, err := s.AppendMessages(msgs)
	if err != nil {
		return nil, err
	}
	res.Status = durable.Wait()
	return res, nil
}

// AppendMessages is PutMessages without the wait for SYNC_FLUSH, so that a
// caller need not hold a thread while the group commit runs. The caller must
// call durable's Wait or Notify exactly once.
func (s *Store) AppendMessages(msgs []*message.Message) (res *PutResult, durable Durable, err error) {
	if s.gc == nil {
		res, err = s.appendBatch(msgs)
		return res, Durable{}, err
	}
	// Counted from entry until the registration with the group commit, so that
	// its gather step can wait for appenders on their way to it.
	s.gc.inflight.Add(1)
	if res, err = s.appendBatch(msgs); err != nil {
		s.gc.inflight.Add(-1)
		return nil, Durable{}, err
	}
	return res, Durable{gc: s.gc, end: res.PhysicalOffset + int64(res.Size)}, nil
}

// Durable is an append's durability: under SYNC_FLUSH, the group commit's
// fdatasync of its records; nothing to wait for under ASYNC_FLUSH.
type Durable struct {
	gc  *groupCommit // nil: ASYNC_FLUSH
	end int64
}

// Notify runs done with the final status once the records are durable (PutOK),
// or PutFlushDiskTimeout after SyncFlushTimeout or a failed flush: at once under
// ASYNC_FLUSH, else on the store's flush goroutine, so done must not block.
func (d Durable) Notify(done func(PutStatus)) {
	if d.gc == nil {
		done(PutOK)
		return
	}
	d.gc.notify(d.end, done)
}

// Wait blocks until Notify would run, and returns its status.
func (d Durable) Wait() PutStatus {
	if d.gc == nil {
		return PutOK
	}
	ch := make(chan PutStatus, 1)
	d.gc.notify(d.end, func(st PutStatus) { ch <- st })
	return <-ch
}

// AppendHeldFor is how long the append under way has held the commitlog, 0 when none
// is under way. RocketMQ calls the commitlog busy (isOSPageCacheBusy) when this passes
// osPageCacheBusyTimeOutMills: the page cache is not taking writes, and sends are
// better refused than queued.
func (s *Store) AppendHeldFor() time.Duration {
	since := s.appendSince.Load()
	if since == 0 {
		return 0
	}
	return max(time.Duration(s.cfg.now().UnixNano()-since), 0)
}

// appendBatch checks and appends msgs and stamps their message ids.
func (s *Store) appendBatch(msgs []*message.Message) (*PutResult, error) {
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: empty batch", ErrBadMessage)
	}
	sizes := make([]int, len(msgs))
	crcs := make([]int32, len(msgs))
	total := 0
	for i, m := range msgs {
		if err := m.Check(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadMessage, err)
		}
		if err := names.Topic(m.Topic); err != nil { // it becomes a directory at dispatch
			return nil, fmt.Errorf("%w: %w: %w", ErrBadMessage, ErrBadTopic, err)
		}
		if m.Topic != msgs[0].Topic || m.QueueID != msgs[0].QueueID {
			return nil, fmt.Errorf("%w: batch mixes queues", ErrBadMessage)
		}
		if m.QueueID < 0 {
			return nil, fmt.Errorf("%w: queue id %d", ErrBadMessage, m.QueueID)
		}
		sf := message.SysFlagFor(m.SysFlag, m.BornHost, s.cfg.StoreHost)
		sizes[i] = message.RecordSize(sf, len(m.Body), len(m.Topic), len(m.Properties))
		if sizes[i] > s.cfg.MaxMessageSize {
			return nil, fmt.Errorf("%w: record of %d bytes, limit %d", ErrMessageTooLarge, sizes[i], s.cfg.MaxMessageSize)
		}
		crcs[i] = message.BodyCRC(m.Body)
		total += sizes[i]
	}
	if total+message.MinBlankLength > s.cfg.MappedFileSizeCommitLog {
		return nil, fmt.Errorf("%w: batch of %d bytes exceeds a segment", ErrMessageTooLarge, total)
	}
	res, err := s.append(msgs, sizes, crcs, total)
	if err != nil {
		return nil, err
	}
	phy := res.PhysicalOffset
	for i := range msgs {
		res.MsgIDs[i] = message.CreateOffsetMsgID(s.cfg.StoreHost, phy)
		phy += int64(sizes[i])
	}
	return res, nil
}

func (s *Store) append(msgs []*message.Message, sizes []int, crcs []int32, total int) (_ *PutResult, err error) {
	s.putMu.Lock()
	defer s.putMu.Unlock()
	s.appendSince.Store(s.cfg.now().UnixNano())
	defer s.appendSince.Store(0)
	if s.cfg.InAppend != nil {
		s.cfg.InAppend()
	}
	// A fault while touching the mapping (I/O error paging in, file cut
	// under us) becomes a sticky write error instead of a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: fault writing the commitlog mapping: %v", ErrWriteFailed, r)
			s.writeErr = err
		}
	}()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if s.writeErr != nil {
		return nil, s.writeErr
	}
	seg, pos, err := s.cl.reserve(total)
	if err != nil {
		return nil, err // nothing of this message was written
	}
	now := s.cfg.now().UnixMilli()
	key := cqKey{msgs[0].Topic, msgs[0].QueueID}
	qoff := s.queueOffsetLocked(key)
	tt := message.TransactionType(msgs[0].SysFlag)
	counted := tt != message.TransactionPreparedType && tt != message.TransactionRollbackType
	res := &PutResult{
		PhysicalOffset: seg.Start + int64(pos), Size: total, StoreTimestamp: now,
		QueueOffset: qoff, MsgCount: len(msgs), MsgIDs: make([]string, len(msgs)),
	}
	if !counted {
		res.QueueOffset = 0 // RocketMQ stores prepared/rollback records with queue offset 0
	}
	// Under SYNC_FLUSH the records are encoded in a buffer and written with one pwrite:
	// every fdatasync write-protects the pages it cleans, so stores into the mapping
	// fault again at each group commit (a fifth of a send's CPU). Under ASYNC_FLUSH a
	// page faults about once, and the store into the mapping is cheaper than a syscall.
	viaFile := s.gc != nil
	dst := seg.Data[pos : pos+total]
	if viaFile {
		if cap(s.appendBuf) < total {
			s.appendBuf = make([]byte, total)
		}
		dst = s.appendBuf[:total]
	}
	p := 0
	for i, m := range msgs {
		st := message.Stamp{
			PhysicalOffset: seg.Start + int64(pos+p), StoreTimestamp: now,
			StoreHost: s.cfg.StoreHost, BodyCRC: crcs[i],
		}
		if counted {
			st.QueueOffset = qoff + int64(i)
		}
		message.EncodeRecord(dst[p:p+sizes[i]], m, &st)
		p += sizes[i]
	}
	if viaFile {
		s.cl.claim(seg.Start + int64(pos+total))
		if err := seg.WriteAt(dst, pos); err != nil {
			s.writeErr = fmt.Errorf("%w: %w", ErrWriteFailed, err)
			return nil, s.writeErr
		}
		if cap(s.appendBuf) > maxKeptAppendBuf {
			s.appendBuf = nil // a large batch's buffer is not kept
		}
	}
	// Publish: the records are complete in the file (and so the mapping) before wrote moves.
	s.cl.wrote.Store(seg.Start + int64(pos+p))
	s.cl.askWarm()
	if counted {
		s.queueTable[key] = qoff + int64(len(msgs))
	}
	kick(s.kickDisp)
	return res, nil
}

// maxKeptAppendBuf is the largest append buffer kept for the next append.
const maxKeptAppendBuf = 1 << 20

// queueOffsetLocked returns the next queue offset of key. putMu held.
func (s *Store) queueOffsetLocked(key cqKey) int64 {
	if off, ok := s.queueTable[key]; ok {
		return off
	}
	var off int64
	if cq := s.queue(key.topic, key.qid); cq != nil {
		off = cq.maxOffset.Load()
	}
	s.queueTable[key] = off
	return off
}
