package store

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
)

// Store is the message store: commitlog, consume queues, index, flushing,
// recovery and retention. All methods are safe for concurrent use.
//
// Lock order (outer first; no other nesting):
//
//	putMu -> commitLog.createMu -> commitLog.spareMu | commitLog.mu
//	dispMu -> cqMu -> consumeQueue.mu;  dispMu -> indexService.mu
//	dispMu -> consumeQueue.placeMu -> consumeQueue.mu
//	flushMu -> commitLog.flushMu -> commitLog.mu | consumeQueue.placeMu | consumeQueue.mu | indexService.mu
//	groupCommit.mu, damageSet.mu and damageSet.fillerMu are leaves (damageSet.mu
//	is taken under commitLog.mu by recovery's cut and under dispMu by the
//	dispatcher; what a report describes is read before it is taken).
//
// Mapped-file references (Hold/Release) are lock-free and may outlive the
// locks under which the file was found.
type Store struct {
	cfg         Config
	log         *slog.Logger
	delayLevels []time.Duration
	retention   retention

	cl    *commitLog
	index *indexService

	cqMu     sync.RWMutex
	cqs      map[string]map[int32]*consumeQueue
	cqLoaded bool // every queue on disk is in cqs (set once in Open)

	putMu        sync.Mutex      // the single commitlog writer
	appendSince  atomic.Int64    // cfg clock (UnixNano) when the append holding putMu took it; 0 when none
	queueTable   map[cqKey]int64 // next queue offset per queue; under putMu
	writeErr     error           // sticky write failure; under putMu
	appendBuf    []byte          // the records of the append under way; under putMu
	kickDisp     chan struct{}   // wakes the dispatcher
	dispatched   atomic.Int64    // records below are in consume queues and index
	unqueueable  atomic.Int64    // records dispatched without a queue (queueable)
	wrongEntries atomic.Int64    // consume-queue entries a read found pointing at no fitting record
	dispMu       sync.Mutex      // serialises dispatch runs
	gc           *groupCommit    // SYNC_FLUSH only
	flushMu      sync.Mutex      // serialises logics flushes and checkpoint writes
	listeners    atomic.Pointer[[]ArrivalFunc]
	spares       *cqSpares // ready consume-queue files for the dispatcher
	damage       *damageSet
	// lastSkip is the damaged range (or filler) the dispatcher passed last:
	// the queues whose offsets it held get gap entries pointing at it.
	// Under dispMu.
	lastSkip damagedRange

	// Recovery facts, for callers and tests.
	CleanStart bool  // the previous run shut down cleanly
	Truncated  int64 // bytes cut from the commitlog tail at recovery
	LastCut    Cut   // what Open cut on request (RequestCut); zero when nothing
	// LowDiskSpace: at Open the store's volume could not hold one more
	// commitlog segment and index file (logged as a WARN).
	LowDiskSpace bool

	closed   atomic.Bool
	stop     chan struct{}
	wg       sync.WaitGroup
	memLimit int64 // bytes behind the tail still considered "in memory"
}

type cqKey struct {
	topic string
	qid   int32
}

// Open opens or creates the store under cfg.StorePathRootDir, recovering
// from an unclean shutdown if the abort marker is present, and starts the
// background dispatcher, flusher and cleaner.
func Open(cfg Config) (*Store, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	levels, _ := ParseDelayLevels(cfg.MessageDelayLevel)
	hours, _ := parseDeleteWhen(cfg.DeleteWhen)
	for _, d := range []string{cfg.StorePathRootDir, cfg.consumeQueueDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("store: create %s: %w", d, err)
		}
	}
	s := &Store{
		cfg: cfg, log: cfg.logger(), delayLevels: levels, retention: retention{hours: hours, keep: cfg.FileReservedTime},
		cqs:        map[string]map[int32]*consumeQueue{},
		queueTable: map[cqKey]int64{},
		kickDisp:   make(chan struct{}, 1),
		stop:       make(chan struct{}),
	}
	s.memLimit = totalMemory(cfg.TotalMemory) * int64(cfg.AccessMessageInMemoryMaxRatio) / 100
	s.damage = newDamageSet(filepath.Join(cfg.StorePathRootDir, DamageLogFile), cfg.MappedFileSizeCommitLog, s.log)
	removeSpares(cfg.consumeQueueDir())
	s.spares = newCQSpares(cfg.consumeQueueDir(), cfg.MappedFileSizeConsumeQueue)
	var err error
	if s.cl, err = openCommitLog(cfg.commitLogDir(), cfg.MappedFileSizeCommitLog); err != nil {
		return nil, err
	}
	if s.index, err = openIndex(cfg.indexDir(), cfg.MaxHashSlotNum, cfg.MaxIndexNum); err != nil {
		s.cl.close()
		return nil, err
	}
	if err := s.loadConsumeQueues(); err != nil {
		s.closeFiles()
		return nil, err
	}
	s.cqLoaded = true
	if err := s.recover(); err != nil {
		s.closeFiles()
		return nil, err
	}
	s.LowDiskSpace = s.checkFreeSpace()
	// The abort marker exists from here until a clean Close removes it.
	if err := writeFileAtomic(cfg.abortPath(), nil); err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("store: create abort marker: %w", err)
	}
	if cfg.FlushDiskType == SyncFlush {
		s.gc = newGroupCommit(s)
		s.cl.zeroAhead = true
	}
	s.start()
	return s, nil
}

func (s *Store) start() {
	s.wg.Add(5)
	go func() { defer s.wg.Done(); s.cl.allocLoop(s.stop) }()
	go func() { defer s.wg.Done(); s.cl.warmLoop(s.stop) }()
	s.cl.wantSpare <- struct{}{} // first spare now (buffered, cannot block)
	go s.dispatchLoop()
	go s.flushLoop()
	go s.cleanLoop()
	s.wg.Add(2)
	go s.spareLoop()
	go s.placeLoop()
	if s.gc != nil {
		s.wg.Add(1)
		go s.gc.run()
	}
}

// Close stops the store cleanly: it waits for the dispatcher to catch up,
// flushes everything, writes the checkpoint and removes the abort marker.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return ErrClosed
	}
	s.putMu.Lock() // no append in progress from here on
	close(s.stop)
	s.putMu.Unlock()
	s.wg.Wait()
	s.cl.dropSpare()    // the newest segment on disk must hold the tail
	err := s.dispatch() // catch up with the tail
	s.spares.drop()
	if err == nil {
		err = s.flushAll()
	}
	if err == nil {
		if rerr := os.Remove(s.cfg.abortPath()); rerr != nil && !os.IsNotExist(rerr) {
			err = rerr
		} else {
			err = mmapfile.SyncDir(s.cfg.StorePathRootDir)
		}
	}
	s.closeFiles()
	return err
}

func (s *Store) closeFiles() {
	s.cl.close()
	s.index.close()
	s.cqMu.Lock()
	defer s.cqMu.Unlock()
	for _, m := range s.cqs {
		for _, cq := range m {
			cq.close()
		}
	}
}

// flushAll makes commitlog, consume queues and index durable and then
// records it in the checkpoint. Durability order: data first, then the
// checkpoint that claims it.
func (s *Store) flushAll() error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	logics := s.dispatched.Load()
	if err := s.cl.flush(); err != nil {
		return err
	}
	if err := s.flushLogicsLocked(); err != nil {
		return err
	}
	return writeCheckpoint(s.cfg.checkpointPath(), checkpoint{
		commitLog: s.cl.flushed.Load(), consumeQueue: logics, index: logics,
		timestamp: s.cfg.now().UnixMilli(),
	})
}

// flushLogicsLocked flushes every consume queue and the index. flushMu held.
func (s *Store) flushLogicsLocked() error {
	for _, cq := range s.allQueues() {
		if err := cq.flush(); err != nil {
			return err
		}
	}
	return s.index.flush()
}

func (s *Store) allQueues() []*consumeQueue {
	s.cqMu.RLock()
	defer s.cqMu.RUnlock()
	var out []*consumeQueue
	for _, m := range s.cqs {
		for _, cq := range m {
			out = append(out, cq)
		}
	}
	return out
}

// flushLoop flushes the commitlog every FlushIntervalCommitLog (async mode)
// and consume queues, index and checkpoint every FlushIntervalConsumeQueue.
func (s *Store) flushLoop() {
	defer s.wg.Done()
	clTick := time.NewTicker(s.cfg.FlushIntervalCommitLog)
	cqTick := time.NewTicker(s.cfg.FlushIntervalConsumeQueue)
	defer clTick.Stop()
	defer cqTick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-clTick.C:
			if s.gc == nil {
				s.noteWriteErr(s.cl.flush())
			}
		case <-cqTick.C:
			s.noteWriteErr(s.flushAll())
		}
	}
}

// noteWriteErr makes an I/O failure sticky: later appends fail with it.
func (s *Store) noteWriteErr(err error) {
	if err == nil || !errors.Is(err, ErrWriteFailed) {
		return
	}
	s.putMu.Lock()
	if s.writeErr == nil {
		s.writeErr = err
	}
	s.putMu.Unlock()
}

func totalMemory(override int64) int64 {
	if override > 0 {
		return override
	}
	var si sysinfo
	if n := readSysinfo(&si); n > 0 {
		return n
	}
	return 8 << 30
}
