package store

import "github.com/openrmq/rocketmq-operator/pkg/message"

// Stats is a snapshot of the store's positions and file counts, for metrics. Each field
// is read on its own: they need not agree with each other to the byte.
type Stats struct {
	CommitLogMinOffset int64 // first commitlog offset still stored
	CommitLogMaxOffset int64 // the tail: the next append's offset
	FlushedOffset      int64 // everything below is fdatasync'ed
	DispatchedOffset   int64 // records below are in consume queues and the index
	CommitLogSegments  int   // segment files, each MappedFileSizeCommitLog bytes
	ConsumeQueues      int   // consume queues (topic, queue id)
	IndexFiles         int
	IndexEntries       int64 // keys indexed in all index files
}

// Stats returns the store's current positions and counts. It takes each structure's
// read lock briefly; it does not touch the disk.
func (s *Store) Stats() Stats {
	st := Stats{
		CommitLogMinOffset: s.cl.minOffset(),
		CommitLogMaxOffset: s.cl.wrote.Load(),
		FlushedOffset:      s.cl.flushed.Load(),
		DispatchedOffset:   s.dispatched.Load(),
	}
	s.cl.mu.RLock()
	st.CommitLogSegments = len(s.cl.segs)
	s.cl.mu.RUnlock()
	s.cqMu.RLock()
	for _, m := range s.cqs {
		st.ConsumeQueues += len(m)
	}
	s.cqMu.RUnlock()
	s.index.mu.RLock()
	st.IndexFiles = len(s.index.files)
	for _, f := range s.index.files {
		st.IndexEntries += int64(f.header().indexCount)
	}
	s.index.mu.RUnlock()
	return st
}

// DiskUsedRatio is the used share (0..1) of the file system holding the commitlog: the
// figure retention compares with DiskMaxUsedSpaceRatio.
func (s *Store) DiskUsedRatio() (float64, error) { return s.diskUsage() }

// EarliestStoreTime is the store timestamp (ms) of the oldest message still in the
// commitlog, 0 when there is none.
func (s *Store) EarliestStoreTime() int64 {
	raw, err := s.GetRawMessage(s.cl.minOffset())
	if err != nil {
		return 0
	}
	defer raw.Release()
	v, err := message.ParseRecord(raw.Data)
	if err != nil {
		return 0
	}
	return v.StoreTimestamp()
}
