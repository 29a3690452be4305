package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
)

// CQEntrySize is the size of a consume-queue entry: commitlog offset (8),
// record size (4), tag hash (8).
const CQEntrySize = 20

// cqEntry is one decoded consume-queue entry.
type cqEntry struct {
	phy      int64
	size     int32
	tagsCode int64
}

func getEntry(b []byte) cqEntry {
	return cqEntry{
		phy:      int64(binary.BigEndian.Uint64(b)),
		size:     int32(binary.BigEndian.Uint32(b[8:])),
		tagsCode: int64(binary.BigEndian.Uint64(b[12:])),
	}
}

func putEntry(b []byte, e cqEntry) {
	binary.BigEndian.PutUint64(b, uint64(e.phy))
	binary.BigEndian.PutUint32(b[8:], uint32(e.size))
	binary.BigEndian.PutUint64(b[12:], uint64(e.tagsCode))
}

// preBlank fills the slots before a queue's first entry when that entry is
// not the first of its file (a slave that starts from its master's newest
// segment), as Java's ConsumeQueue.fillPreBlank does: never read, and
// non-empty so that recoverEnd does not take them for the queue's end.
var preBlank = cqEntry{phy: 0, size: math.MaxInt32}

// consumeQueue is the logical queue of one topic and queue id. The
// dispatcher is its only writer; readers hold the file they read.
type consumeQueue struct {
	topic    string
	queueID  int32
	dir      string
	fileSize int

	mu    sync.RWMutex // guards files
	files []*mmapfile.File

	maxOffset atomic.Int64 // next queue offset to write; entries below are readable
	minOffset atomic.Int64 // first valid queue offset
	flushed   int64        // entries below are durable (dispatcher/flush goroutine, under Store.flushMu)
	// newFiles is set when the dispatcher created a file (and maybe its
	// directories) that the next flush must make durable.
	newFiles atomic.Bool
	spares   *cqSpares // nil: create files in place

	placeMu sync.Mutex       // guards pending, gone and the Path of pending files
	pending []*mmapfile.File // spares in files, not yet under their names (see place)
	gone    bool             // destroyed: place nothing more
}

// openConsumeQueue opens the queue's files in dir (Config.queueDir).
func openConsumeQueue(dir, topic string, qid int32, fileSize int) (*consumeQueue, error) {
	cq := &consumeQueue{topic: topic, queueID: qid, dir: dir, fileSize: fileSize}
	names, err := listNumbered(cq.dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, start := range names {
		if start%int64(fileSize) != 0 {
			cq.close()
			return nil, fmt.Errorf("%w: consume queue file %s/%020d misaligned", ErrCorrupt, cq.dir, start)
		}
		if n := len(cq.files); n > 0 && cq.files[n-1].Start+int64(fileSize) != start {
			// A hole: keep only the newest contiguous run.
			for _, f := range cq.files {
				f.Close()
			}
			cq.files = nil
		}
		f, err := mmapfile.Open(filepath.Join(cq.dir, mmapfile.Name(start)), start, fileSize)
		if err != nil {
			cq.close()
			return nil, err
		}
		cq.files = append(cq.files, f)
	}
	cq.recoverEnd()
	return cq, nil
}

// recoverEnd finds the first empty entry from the newest file backwards.
func (cq *consumeQueue) recoverEnd() {
	for i := len(cq.files) - 1; i >= 0; i-- {
		f := cq.files[i]
		n := 0
		for ; n+CQEntrySize <= len(f.Data); n += CQEntrySize {
			if getEntry(f.Data[n:]).size <= 0 {
				break
			}
		}
		if n > 0 || i == 0 {
			end := (f.Start + int64(n)) / CQEntrySize
			cq.maxOffset.Store(end)
			cq.flushed = end
			cq.minOffset.Store(cq.files[0].Start / CQEntrySize)
			return
		}
	}
}

func (cq *consumeQueue) close() {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	for _, f := range cq.files {
		f.Close()
	}
	cq.files = nil
}

// file returns the held file holding queue offset off, or nil.
func (cq *consumeQueue) file(off int64) *mmapfile.File {
	cq.mu.RLock()
	defer cq.mu.RUnlock()
	pos := off * CQEntrySize
	if len(cq.files) == 0 || pos < cq.files[0].Start {
		return nil
	}
	i := int((pos - cq.files[0].Start) / int64(cq.fileSize))
	if i >= len(cq.files) || !cq.files[i].Hold() {
		return nil
	}
	return cq.files[i]
}

// entries returns a held file and the entries from off to the end of that
// file or of the queue, whichever comes first.
func (cq *consumeQueue) entries(off int64) (*mmapfile.File, []byte) {
	max := cq.maxOffset.Load()
	if off >= max {
		return nil, nil
	}
	f := cq.file(off)
	if f == nil {
		return nil, nil
	}
	pos := int(off*CQEntrySize - f.Start)
	end := f.Size()
	if lim := int(max*CQEntrySize - f.Start); lim < end {
		end = lim
	}
	return f, f.Data[pos:end:end]
}

// entry reads the entry at queue offset off.
func (cq *consumeQueue) entry(off int64) (cqEntry, bool) {
	f, b := cq.entries(off)
	if f == nil {
		return cqEntry{}, false
	}
	defer f.Release()
	return getEntry(b), true
}

// put writes the entry e for queue offset off and reports whether it did.
// Dispatcher only. An entry below maxOffset is a replay and is skipped.
//
// Queue offsets are dense, so when off is past maxOffset (the records in
// between were in a damaged range, or this queue starts mid-stream on a
// replica) the offsets in between get gap entries, gap's phy and size, so
// that the first empty entry stays the queue's end and the gap reads as a
// missing message (see "Damage" in doc.go). A gap longer than a file is not
// filled: off is refused (errQueueGap) rather than trusted.
func (cq *consumeQueue) put(off int64, e, gap cqEntry) (bool, error) {
	max := cq.maxOffset.Load()
	if off < max {
		return false, nil
	}
	per := int64(cq.fileSize / CQEntrySize)
	if cq.noFiles() {
		// A fresh run starts at off's file (newFile); the slots before off in
		// it are pre-blanks (write), not gaps: no record was ever there.
		return true, cq.write(off, e)
	}
	if off-max > per {
		return false, fmt.Errorf("%w: %s/%d: record claims queue offset %d, the queue is at %d", errQueueGap, cq.topic, cq.queueID, off, max)
	}
	for q := max; q < off; q++ {
		if err := cq.write(q, gap); err != nil {
			return false, err
		}
	}
	return true, cq.write(off, e)
}

// errQueueGap marks a record whose queue offset is too far ahead to fill.
var errQueueGap = errors.New("queue offset too far ahead")

func (cq *consumeQueue) noFiles() bool {
	cq.mu.RLock()
	defer cq.mu.RUnlock()
	return len(cq.files) == 0
}

// write stores e at queue offset off (maxOffset or, for a fresh run, a
// later offset in a new file) and publishes it.
func (cq *consumeQueue) write(off int64, e cqEntry) error {
	pos := off * CQEntrySize
	f := cq.file(off)
	if f == nil {
		var err error
		if f, err = cq.newFile(pos-pos%int64(cq.fileSize), cq.spares.take()); err != nil {
			return err
		}
		f.Hold()
	}
	defer f.Release()
	if min := cq.minOffset.Load(); min == cq.maxOffset.Load() && min == f.Start/CQEntrySize && off > min {
		// The queue's first entry, past the start of its file.
		for o := min; o < off; o++ {
			putEntry(f.Data[o*CQEntrySize-f.Start:], preBlank)
		}
		cq.minOffset.Store(off)
	}
	putEntry(f.Data[pos-f.Start:], e)
	cq.maxOffset.Store(off + 1) // publish after the bytes are in place
	return nil
}

// lastEntry returns the entry at maxOffset-1, if the queue has one.
func (cq *consumeQueue) lastEntry() (cqEntry, bool) {
	max := cq.maxOffset.Load()
	if max <= cq.minOffset.Load() {
		return cqEntry{}, false
	}
	return cq.entry(max - 1)
}

// shortFrom returns the first queue offset whose entry was not wholly in
// its file on disk at Open (the file had been cut short, and Open extended
// it with zeros), if any. Open only.
func (cq *consumeQueue) shortFrom() (int64, bool) {
	cq.mu.RLock()
	defer cq.mu.RUnlock()
	for _, f := range cq.files {
		if f.OnDisk < int64(len(f.Data)) {
			return (f.Start + f.OnDisk - f.OnDisk%CQEntrySize) / CQEntrySize, true
		}
	}
	return 0, false
}

// cutFrom removes the entries at and after queue offset off (recovery).
func (cq *consumeQueue) cutFrom(off int64) {
	end := cq.maxOffset.Load()
	if off >= end {
		return
	}
	off = max(off, cq.minOffset.Load())
	for q := off; q < end; {
		f := cq.file(q)
		if f == nil {
			break
		}
		p := int(q*CQEntrySize - f.Start)
		clear(f.Data[p:])
		q = (f.Start + int64(f.Size())) / CQEntrySize
		f.Release()
	}
	cq.maxOffset.Store(off)
	if cq.flushed > off {
		cq.flushed = off
	}
	cq.dropFilesFrom(off*CQEntrySize + int64(cq.fileSize) - (off*CQEntrySize)%int64(cq.fileSize))
}

// newFile adds the file starting at byte position start. It runs on the
// dispatcher before the entry that needs it becomes readable, so it does no
// fsync and, given a spare (see cqspare.go), no file system work at all:
// the spare keeps its spare name until place moves it, in the background.
// The file and its directories are made durable by the next flush, before
// any checkpoint claims entries in it.
func (cq *consumeQueue) newFile(start int64, spare *mmapfile.File) (*mmapfile.File, error) {
	f := spare
	if f == nil {
		if err := os.MkdirAll(cq.dir, 0o755); err != nil {
			return nil, fmt.Errorf("%w: consume queue %s/%d: %w", ErrWriteFailed, cq.topic, cq.queueID, err)
		}
		var err error
		f, err = mmapfile.CreateUnsynced(filepath.Join(cq.dir, mmapfile.Name(start)), start, cq.fileSize)
		if err != nil {
			return nil, fmt.Errorf("%w: consume queue %s/%d: %w", ErrWriteFailed, cq.topic, cq.queueID, err)
		}
		cq.newFiles.Store(true) // before the file can hold a published entry
	} else {
		f.Start = start
		cq.placeMu.Lock()
		cq.pending = append(cq.pending, f)
		cq.placeMu.Unlock()
	}
	var old []*mmapfile.File
	cq.mu.Lock()
	if n := len(cq.files); n > 0 && cq.files[n-1].Start+int64(cq.fileSize) != start {
		// Not contiguous (first entry far ahead): start a fresh run.
		old, cq.files = cq.files, nil
	}
	if len(cq.files) == 0 {
		cq.minOffset.Store(start / CQEntrySize)
		cq.maxOffset.Store(start / CQEntrySize)
	}
	cq.files = append(cq.files, f)
	cq.mu.Unlock()
	if len(old) > 0 {
		_ = cq.place() // TryDestroy removes by name; a failure leaves the spare name, removed as well
		for _, o := range old {
			o.TryDestroy()
		}
	} else if spare != nil {
		cq.spares.schedule(cq)
	}
	return f, nil
}

// place moves the spares newFile took to their names in the queue's
// directory. The placer goroutine runs it soon after; flush runs it before
// syncing (so before a checkpoint claims the entries), and so does anything
// that removes files by name. Nothing is placed once the queue is destroyed.
func (cq *consumeQueue) place() error {
	cq.placeMu.Lock()
	defer cq.placeMu.Unlock()
	if cq.gone || len(cq.pending) == 0 {
		return nil
	}
	if err := os.MkdirAll(cq.dir, 0o755); err != nil {
		return fmt.Errorf("%w: consume queue %s/%d: %w", ErrWriteFailed, cq.topic, cq.queueID, err)
	}
	for len(cq.pending) > 0 {
		f := cq.pending[0]
		path := filepath.Join(cq.dir, mmapfile.Name(f.Start))
		if err := os.Rename(f.Path, path); err != nil {
			return fmt.Errorf("%w: consume queue %s/%d: place %s: %w", ErrWriteFailed, cq.topic, cq.queueID, f.Path, err)
		}
		f.Path = path
		cq.pending = cq.pending[1:]
		cq.newFiles.Store(true)
	}
	cq.pending = nil
	return nil
}

// flush fdatasyncs the files holding entries written since the last flush,
// then, if the dispatcher created files since, fsyncs the queue's directory
// and its parents (which MkdirAll may have created).
func (cq *consumeQueue) flush() error {
	if err := cq.place(); err != nil {
		return err
	}
	newFiles := cq.newFiles.Swap(false) // before end: covers every file end reaches into
	end := cq.maxOffset.Load()
	fs := int64(cq.fileSize) / CQEntrySize
	from := cq.flushed
	cq.mu.RLock()
	if len(cq.files) > 0 {
		// Step from the first file, not through the gap a fresh run leaves
		// below it (newFile): a queue offset far ahead would take forever.
		from = max(from, cq.files[0].Start/CQEntrySize)
	}
	cq.mu.RUnlock()
	for off := from - from%fs; off < end; off += fs {
		f := cq.file(off)
		if f == nil {
			continue
		}
		err := f.Sync()
		f.Release()
		if err != nil {
			cq.newFiles.Store(newFiles || cq.newFiles.Load())
			return fmt.Errorf("%w: consume queue %s/%d: %w", ErrWriteFailed, cq.topic, cq.queueID, err)
		}
	}
	if newFiles {
		topicDir := filepath.Dir(cq.dir)
		for _, d := range []string{cq.dir, topicDir, filepath.Dir(topicDir)} {
			if err := mmapfile.SyncDir(d); err != nil && !os.IsNotExist(err) {
				cq.newFiles.Store(true)
				return fmt.Errorf("%w: consume queue %s/%d: %w", ErrWriteFailed, cq.topic, cq.queueID, err)
			}
		}
	}
	cq.flushed = end
	return nil
}

// truncate removes entries pointing at or past commitlog offset phyEnd.
// Entries are ascending in commitlog offset, so it walks back from the end.
func (cq *consumeQueue) truncate(phyEnd int64) {
	for {
		max := cq.maxOffset.Load()
		if max <= cq.minOffset.Load() {
			return
		}
		e, ok := cq.entry(max - 1)
		if !ok || e.phy+int64(e.size) <= phyEnd || e == preBlank {
			return
		}
		f := cq.file(max - 1)
		p := int((max-1)*CQEntrySize - f.Start)
		clear(f.Data[p : p+CQEntrySize])
		f.Release()
		cq.maxOffset.Store(max - 1)
		if cq.flushed > max-1 {
			cq.flushed = max - 1
		}
		cq.dropFilesFrom((max - 1) * CQEntrySize)
	}
}

// dropFilesFrom removes files starting at or after byte position pos, so
// that the newest file always holds the queue's end.
func (cq *consumeQueue) dropFilesFrom(pos int64) {
	_ = cq.place() // a failure leaves the spare name, which TryDestroy then removes
	cq.mu.Lock()
	defer cq.mu.Unlock()
	for n := len(cq.files); n > 1 && cq.files[n-1].Start >= pos; n = len(cq.files) {
		if !cq.files[n-1].TryDestroy() {
			return
		}
		cq.files = cq.files[:n-1]
	}
}

// deleteBelow removes whole files whose entries all point below the
// commitlog offset phyMin (the newest file is always kept) and moves
// minOffset to the first entry at or above phyMin.
func (cq *consumeQueue) deleteBelow(phyMin int64) int {
	_ = cq.place() // a failure leaves the spare name, which TryDestroy then removes
	deleted := 0
	for {
		cq.mu.Lock()
		if len(cq.files) < 2 {
			cq.mu.Unlock()
			break
		}
		f := cq.files[0]
		last := getEntry(f.Data[len(f.Data)-CQEntrySize:])
		if last.size > 0 && last.phy+int64(last.size) > phyMin || !f.TryDestroy() {
			cq.mu.Unlock()
			break
		}
		cq.files = cq.files[1:]
		cq.mu.Unlock()
		deleted++
	}
	cq.correctMin(phyMin)
	return deleted
}

// correctMin moves minOffset to the first entry whose record is at or above
// phyMin, searching the oldest file.
func (cq *consumeQueue) correctMin(phyMin int64) {
	cq.mu.RLock()
	if len(cq.files) == 0 {
		cq.mu.RUnlock()
		return
	}
	start := cq.files[0].Start / CQEntrySize
	cq.mu.RUnlock()
	min := cq.minOffset.Load()
	if min < start {
		min = start
	}
	max := cq.maxOffset.Load()
	for min < max {
		e, ok := cq.entry(min)
		if !ok || e.phy >= phyMin && e != preBlank {
			break
		}
		min++
	}
	cq.minOffset.Store(min)
}

func (cq *consumeQueue) destroy() {
	cq.placeMu.Lock() // pending spares are removed under their spare names
	defer cq.placeMu.Unlock()
	cq.gone = true
	cq.pending = nil
	cq.mu.Lock()
	defer cq.mu.Unlock()
	for _, f := range cq.files {
		if !f.TryDestroy() {
			f.Close()
			os.Remove(f.Path)
		}
	}
	cq.files = nil
	os.RemoveAll(cq.dir)
}
