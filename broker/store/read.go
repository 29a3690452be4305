package store

import (
	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
)

// GetStatus is RocketMQ's GetMessageStatus.
type GetStatus int

// Get statuses, named as in RocketMQ.
const (
	Found GetStatus = iota
	NoMatchedMessage
	MessageWasRemoving
	OffsetFoundNull
	OffsetOverflowBadly
	OffsetOverflowOne
	OffsetTooSmall
	NoMatchedLogicQueue
	NoMessageInQueue
)

var getStatusNames = [...]string{"FOUND", "NO_MATCHED_MESSAGE", "MESSAGE_WAS_REMOVING", "OFFSET_FOUND_NULL",
	"OFFSET_OVERFLOW_BADLY", "OFFSET_OVERFLOW_ONE", "OFFSET_TOO_SMALL", "NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE"}

func (g GetStatus) String() string { return getStatusNames[g] }

// MessageFilter selects messages during a pull. Either method may be nil
// in a FilterFuncs; a nil MessageFilter matches everything.
type MessageFilter interface {
	// MatchTagsCode sees the consume-queue tag slot (tag hash).
	MatchTagsCode(tagsCode int64) bool
	// MatchRecord sees the raw record after the tag check (SQL92 later).
	MatchRecord(record []byte) bool
}

// FilterFuncs adapts two funcs to MessageFilter; nil funcs match all.
type FilterFuncs struct {
	Tags   func(tagsCode int64) bool
	Record func(record []byte) bool
}

// MatchTagsCode implements MessageFilter.
func (f FilterFuncs) MatchTagsCode(c int64) bool { return f.Tags == nil || f.Tags(c) }

// MatchRecord implements MessageFilter.
func (f FilterFuncs) MatchRecord(r []byte) bool { return f.Record == nil || f.Record(r) }

// TagsFilter matches messages whose tag hash is in codes (empty: all).
func TagsFilter(codes ...int64) MessageFilter {
	if len(codes) == 0 {
		return nil
	}
	set := make(map[int64]bool, len(codes))
	for _, c := range codes {
		set[c] = true
	}
	return FilterFuncs{Tags: func(c int64) bool { return set[c] }}
}

// GetResult is the answer to GetMessage. Messages are slices into the
// commitlog mapping, valid until Release; call Release exactly once.
type GetResult struct {
	Status                  GetStatus
	Messages                [][]byte
	BufferTotalSize         int
	NextBeginOffset         int64
	MinOffset               int64
	MaxOffset               int64
	SuggestPullingFromSlave bool
	held                    []*mmapfile.File // one reference per segment read
	heldBuf                 [2]*mmapfile.File
}

// Release drops the references that keep Messages mapped.
func (r *GetResult) Release() {
	for _, f := range r.held {
		f.Release()
	}
	r.held, r.Messages = nil, nil
}

// GetMessage reads up to maxMsgs messages (and about maxBytes) from
// topic/queueID starting at queue offset offset, applying filter. Transfer
// limits as RocketMQ: 256 KB / 32 messages while the read is within the
// "in memory" window (AccessMessageInMemoryMaxRatio % of RAM behind the
// commitlog tail), 64 KB / 8 beyond it. It looks at no more than
// max(Config.MaxFilterScanEntries, maxMsgs) entries.
func (s *Store) GetMessage(topic string, queueID int32, offset int64, maxMsgs, maxBytes int, filter MessageFilter) *GetResult {
	r := &GetResult{}
	if s.closed.Load() {
		r.Status = NoMatchedLogicQueue
		return r
	}
	cq := s.queue(topic, queueID)
	if cq == nil {
		r.Status, r.NextBeginOffset = NoMatchedLogicQueue, 0
		return r
	}
	r.MinOffset, r.MaxOffset = cq.minOffset.Load(), cq.maxOffset.Load()
	maxPhy := s.cl.wrote.Load()
	switch {
	case r.MaxOffset == 0:
		r.Status, r.NextBeginOffset = NoMessageInQueue, 0
		return r
	case offset < r.MinOffset:
		r.Status, r.NextBeginOffset = OffsetTooSmall, r.MinOffset
		return r
	case offset == r.MaxOffset:
		r.Status, r.NextBeginOffset = OffsetOverflowOne, offset
		return r
	case offset > r.MaxOffset:
		r.Status, r.NextBeginOffset = OffsetOverflowBadly, r.MaxOffset
		if r.MinOffset == 0 {
			r.NextBeginOffset = 0
		}
		return r
	}
	f, entries := cq.entries(offset)
	if f == nil {
		r.Status, r.NextBeginOffset = OffsetFoundNull, s.nextFileOffset(cq, offset)
		return r
	}
	defer f.Release()
	r.Status = NoMatchedMessage
	minPhy := s.cl.minOffset()
	var maxPhyPulled int64
	n := 0
	i := 0
	// Scan at most max(MaxFilterScanEntries, maxMsgs) entries, as Java: a
	// filter that matches little answers NO_MATCHED_MESSAGE with the next
	// begin offset past what was scanned, and the consumer moves on.
	scan := s.cfg.MaxFilterScanEntries
	if scan <= 0 {
		scan = DefaultMaxFilterScanEntries
	}
	if scan = max(scan, maxMsgs); scan < len(entries)/CQEntrySize {
		entries = entries[:scan*CQEntrySize]
	}
	for ; i+CQEntrySize <= len(entries) && n < maxMsgs; i += CQEntrySize {
		e := getEntry(entries[i:])
		maxPhyPulled = e.phy
		if e.phy < minPhy {
			continue
		}
		if s.batchFull(int(e.size), r.BufferTotalSize, n, maxBytes, maxPhy-e.phy > s.memLimit) {
			break
		}
		if filter != nil && !filter.MatchTagsCode(e.tagsCode) {
			if n == 0 {
				r.Status = NoMatchedMessage
			}
			continue
		}
		seg, rec := s.cl.read(e.phy, int(e.size))
		if seg == nil {
			if n == 0 {
				r.Status = MessageWasRemoving
			}
			continue
		}
		// A damaged record, or a gap entry, reads as a message that is gone
		// (Java's answer for a missing one): skipped, the next begin offset
		// past it, so the consumer moves on and never receives it.
		if c, err := s.checkEntry(cq, offset+int64(i/CQEntrySize), e, rec, s.cfg.CheckCRCOnRead); c != entryOK {
			seg.Release()
			s.refused(cq, offset+int64(i/CQEntrySize), e, c, err)
			if n == 0 {
				r.Status = MessageWasRemoving
			}
			continue
		}
		if filter != nil && !filter.MatchRecord(rec) {
			seg.Release()
			if n == 0 {
				r.Status = NoMatchedMessage
			}
			continue
		}
		if r.Messages == nil {
			// Sized for a whole batch at once: no regrowth on the pull path.
			r.Messages = make([][]byte, 0, min(maxMsgs, max(s.cfg.MaxTransferCountOnMessageInMemory, 1)))
			r.held = r.heldBuf[:0]
		}
		r.Messages = append(r.Messages, rec)
		if k := len(r.held); k > 0 && r.held[k-1] == seg {
			seg.Release() // the batch already holds this segment
		} else {
			r.held = append(r.held, seg)
		}
		r.BufferTotalSize += len(rec)
		r.Status = Found
		n++
	}
	r.NextBeginOffset = offset + int64(i/CQEntrySize)
	r.SuggestPullingFromSlave = maxPhy-maxPhyPulled > s.memLimit
	return r
}

// batchFull applies RocketMQ's per-pull transfer limits. The first message
// always goes.
func (s *Store) batchFull(size, total, count, maxBytes int, inDisk bool) bool {
	if total == 0 || count == 0 {
		return false
	}
	if maxBytes > 0 && total+size > maxBytes {
		return true
	}
	if inDisk {
		return total+size > s.cfg.MaxTransferBytesOnMessageInDisk || count >= s.cfg.MaxTransferCountOnMessageInDisk
	}
	return total+size > s.cfg.MaxTransferBytesOnMessageInMemory || count >= s.cfg.MaxTransferCountOnMessageInMemory
}

// nextFileOffset is the first queue offset of the file after off's.
func (s *Store) nextFileOffset(cq *consumeQueue, off int64) int64 {
	per := int64(cq.fileSize / CQEntrySize)
	return off - off%per + per
}

// CommitLogReaders returns how many read references (GetResult, raw reads) hold each
// commitlog segment, oldest first: all zero once every read was released. For tests
// of the readers that hand the mapped records on.
func (s *Store) CommitLogReaders() []int64 {
	s.cl.mu.RLock()
	defer s.cl.mu.RUnlock()
	out := make([]int64, len(s.cl.segs))
	for i, f := range s.cl.segs {
		out[i] = max(f.Refs()-1, 0) // less the owner's reference
	}
	return out
}
