package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// commitLog is the sequence of fixed-size segments. One writer at a time
// (Store.putMu); readers find segments under mu and hold a reference.
type commitLog struct {
	dir     string
	segSize int

	mu   sync.RWMutex // guards segs
	segs []*mmapfile.File

	// wrote is the end of the last complete record (or blank): the byte
	// after it. It only moves forward, and only after the bytes are in the
	// mapping, so everything below it is readable.
	wrote   atomic.Int64
	flushed atomic.Int64 // everything below is fdatasync'ed
	flushMu sync.Mutex   // serialises flush

	syncHook atomic.Pointer[func()] // tests: runs before each segment sync

	// spare is the next segment, created ahead of need by allocLoop so a
	// roll does not wait for file creation. Guarded by spareMu; it is not
	// part of segs until the writer takes it.
	createMu  sync.Mutex // serialises segment file creation (writer and allocLoop)
	spareMu   sync.Mutex
	spare     *mmapfile.File
	wantSpare chan struct{}

	// warmed is the end of what warmLoop has populated past the tail (see warm):
	// the writer's stores below it find their pages in the page cache.
	warmed   atomic.Int64
	wantWarm chan struct{}
	// noWarm turns populating off on kernels before 5.14.
	noWarm atomic.Bool
	// zeroAhead makes warming write zeros instead of populating (SYNC_FLUSH; see zero).
	// Set before the store starts.
	zeroAhead bool
	// zeroMu is held by zero while it writes a chunk, and by a writer that claims
	// bytes not yet zeroed; zeroFloor, under it, is the end of the last claim: zero
	// writes nothing below it.
	zeroMu    sync.Mutex
	zeroFloor int64
}

// The first store into a page of a new segment costs the page's allocation and
// zeroing, and on a VM often a fault in the host too: 2.5-3.3 µs of CPU per KiB on
// this project's test machines, most of a send's time under putMu. warmLoop pays it
// in the background instead, keeping warmAhead bytes past the tail populated; the
// writer asks for more once fewer than warmLow remain.
const (
	warmAhead = 4 << 20
	warmLow   = 3 << 20
)

func openCommitLog(dir string, segSize int) (*commitLog, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cl := &commitLog{dir: dir, segSize: segSize, wantSpare: make(chan struct{}, 1), wantWarm: make(chan struct{}, 1)}
	names, err := listNumbered(dir)
	if err != nil {
		return nil, err
	}
	for i, start := range names {
		if start%int64(segSize) != 0 || (i > 0 && start != names[i-1]+int64(segSize)) {
			cl.close()
			return nil, fmt.Errorf("%w: commitlog segment %020d out of sequence (segment size %d)", ErrCorrupt, start, segSize)
		}
		f, err := mmapfile.Open(filepath.Join(dir, mmapfile.Name(start)), start, segSize)
		if err != nil {
			cl.close()
			return nil, err
		}
		cl.segs = append(cl.segs, f)
	}
	return cl, nil
}

// listNumbered returns the sorted start offsets of the 20-digit files in
// dir, removing leftover temporary files.
func listNumbered(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, e := range ents {
		name := e.Name()
		if filepath.Ext(name) == ".tmp" {
			os.Remove(filepath.Join(dir, name))
			continue
		}
		if len(name) != 20 || e.IsDir() {
			continue
		}
		n, err := strconv.ParseInt(name, 10, 64)
		if err != nil {
			continue
		}
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

func (cl *commitLog) close() {
	cl.spareMu.Lock()
	if cl.spare != nil {
		cl.spare.Close() // kept on disk: recovery drops it as an empty segment
		cl.spare = nil
	}
	cl.spareMu.Unlock()
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for _, s := range cl.segs {
		s.Close()
	}
	cl.segs = nil
}

// minOffset is the start of the oldest segment (0 when empty).
func (cl *commitLog) minOffset() int64 {
	cl.mu.RLock()
	defer cl.mu.RUnlock()
	if len(cl.segs) == 0 {
		return 0
	}
	return cl.segs[0].Start
}

// segment returns the held segment containing off, or nil.
func (cl *commitLog) segment(off int64) *mmapfile.File {
	cl.mu.RLock()
	defer cl.mu.RUnlock()
	if len(cl.segs) == 0 || off < cl.segs[0].Start {
		return nil
	}
	i := int((off - cl.segs[0].Start) / int64(cl.segSize))
	if i >= len(cl.segs) || !cl.segs[i].Hold() {
		return nil
	}
	return cl.segs[i]
}

// lastSegment returns the newest segment (not held; writer use only).
func (cl *commitLog) lastSegment() *mmapfile.File {
	cl.mu.RLock()
	defer cl.mu.RUnlock()
	if len(cl.segs) == 0 {
		return nil
	}
	return cl.segs[len(cl.segs)-1]
}

// newSegment adds the segment starting at start, taking the spare when it
// fits, else creating the file now. Writer only.
func (cl *commitLog) newSegment(start int64) (*mmapfile.File, error) {
	cl.createMu.Lock()
	defer cl.createMu.Unlock()
	cl.spareMu.Lock()
	f := cl.spare
	cl.spare = nil
	cl.spareMu.Unlock()
	if f != nil && f.Start != start {
		f.TryDestroy()
		f = nil
	}
	if f == nil {
		var err error
		f, err = mmapfile.Create(filepath.Join(cl.dir, mmapfile.Name(start)), start, cl.segSize)
		if err != nil {
			return nil, fmt.Errorf("%w: new commitlog segment: %w", ErrWriteFailed, err)
		}
	}
	cl.mu.Lock()
	cl.segs = append(cl.segs, f)
	cl.mu.Unlock()
	kick(cl.wantSpare) // ask for the next spare
	return f, nil
}

// allocLoop creates the spare segment after each roll (and at start).
func (cl *commitLog) allocLoop(stop <-chan struct{}) { serveKicks(stop, cl.wantSpare, cl.makeSpare) }

func (cl *commitLog) makeSpare() {
	cl.createMu.Lock()
	defer cl.createMu.Unlock()
	last := cl.lastSegment()
	cl.spareMu.Lock()
	have := cl.spare != nil
	cl.spareMu.Unlock()
	if last == nil || have {
		return
	}
	next := last.Start + int64(cl.segSize)
	f, err := mmapfile.Create(filepath.Join(cl.dir, mmapfile.Name(next)), next, cl.segSize)
	if err != nil {
		return // the writer will try itself when it needs it, and report the error
	}
	cl.populate(f, 0, min(warmAhead, cl.segSize)) // the writer's first stores after the roll
	cl.spareMu.Lock()
	cl.spare = f
	cl.spareMu.Unlock()
}

// askWarm wakes warmLoop when fewer than warmLow bytes past the tail are warm (or
// zeroed).
// Writer only, after publishing wrote.
func (cl *commitLog) askWarm() {
	if cl.warmed.Load()-cl.wrote.Load() < warmLow && !cl.noWarm.Load() {
		kick(cl.wantWarm)
	}
}

// warmLoop populates the tail segment ahead of the writer when askWarm asks.
func (cl *commitLog) warmLoop(stop <-chan struct{}) { serveKicks(stop, cl.wantWarm, cl.warm) }

// warm populates [tail, tail+warmAhead) of the tail's segment (the spare's first
// pages were populated when it was made), or zeroes it under zeroAhead. Populating
// only reads pages in, so it never races the writer's stores and never changes the
// file.
func (cl *commitLog) warm() {
	wrote := cl.wrote.Load()
	seg := cl.segment(wrote)
	if seg == nil { // the tail is at the end of the last segment
		return
	}
	defer seg.Release()
	from := max(cl.warmed.Load(), wrote)
	end := min(wrote+warmAhead, seg.Start+int64(seg.Size()))
	switch {
	case from >= end:
	case cl.zeroAhead:
		cl.zero(seg, end)
	case cl.populate(seg, int(from-seg.Start), int(end-from)):
		cl.warmed.Store(end)
	}
}

// zeroChunk is how much zero writes under zeroMu at a time: a writer that claims
// bytes not yet zeroed waits for at most one chunk.
const zeroChunk = 128 << 10

var zeroBytes = make([]byte, zeroChunk)

// zero writes zeros through the file over seg's bytes past the tail up to end, and
// syncs them. A segment is preallocated (mmapfile.Create), so its blocks are
// unwritten extents until written: every fdatasync that covers the first write into
// some of them also commits their conversion to the journal, which on ext4 doubles
// a group commit's CPU and its time (docs/benchmarks.md). Zeroed and synced ahead of
// the records, they are written extents, and a group commit only writes data.
//
// Invariant: zero never writes at or below a byte a writer wrote or is writing. It
// writes only above warmed, the tail and zeroFloor, with zeroMu held; a writer about
// to write past warmed first raises zeroFloor under zeroMu (claim).
func (cl *commitLog) zero(seg *mmapfile.File, end int64) {
	zeroed := false
	for {
		cl.zeroMu.Lock()
		from := max(cl.warmed.Load(), cl.wrote.Load(), cl.zeroFloor)
		if from >= end {
			cl.zeroMu.Unlock()
			break
		}
		n := min(end-from, zeroChunk)
		err := seg.WriteAt(zeroBytes[:n], int(from-seg.Start))
		if err == nil {
			cl.warmed.Store(from + n)
		}
		cl.zeroMu.Unlock()
		if err != nil {
			return // only a head start: the records' own writes and syncs report errors
		}
		zeroed = true
	}
	if zeroed {
		_ = seg.Sync() // likewise
	}
}

// claim keeps zero from writing below end, the end of the bytes a writer is about to
// write: at once when they are zeroed already (zero writes only above warmed), else
// after the chunk zero may be writing. Writer only, with putMu held.
func (cl *commitLog) claim(end int64) {
	if !cl.zeroAhead || end <= cl.warmed.Load() {
		return
	}
	cl.zeroMu.Lock()
	cl.zeroFloor = max(cl.zeroFloor, end)
	cl.zeroMu.Unlock()
}

// populate populates [pos, pos+n) of seg and says whether it did. It is only a
// head start for the writer: on any failure the writer's stores fault as before.
func (cl *commitLog) populate(seg *mmapfile.File, pos, n int) bool {
	// Not under zeroAhead: records go in with pwrite there, and pages mapped into the
	// broker make each fdatasync write-protect them again (64-thread sends lost a fifth
	// of their rate).
	if cl.noWarm.Load() || cl.zeroAhead {
		return false
	}
	err := seg.Populate(pos, n)
	if errors.Is(err, mmapfile.ErrPopulateUnsupported) {
		cl.noWarm.Store(true)
	}
	return err == nil
}

// dropSpare removes an unused spare (clean close), so that the newest
// segment on disk always holds the tail.
func (cl *commitLog) dropSpare() {
	cl.spareMu.Lock()
	defer cl.spareMu.Unlock()
	if cl.spare != nil {
		cl.spare.TryDestroy()
		cl.spare = nil
	}
}

// reserve returns the segment and position where size bytes can be written
// at the tail, writing a blank record and rolling to a new segment when the
// current one has not room for size plus a minimal blank. Writer only.
func (cl *commitLog) reserve(size int) (*mmapfile.File, int, error) {
	wrote := cl.wrote.Load()
	seg := cl.lastSegment()
	if seg == nil || wrote >= seg.Start+int64(cl.segSize) {
		next := wrote - wrote%int64(cl.segSize)
		s, err := cl.newSegment(next)
		if err != nil {
			return nil, 0, err
		}
		return s, int(wrote - next), nil
	}
	pos := int(wrote - seg.Start)
	if pos+size+message.MinBlankLength > cl.segSize {
		rest := cl.segSize - pos
		cl.claim(seg.Start + int64(cl.segSize))
		message.PutBlank(seg.Data[pos:], rest)
		cl.wrote.Store(seg.Start + int64(cl.segSize)) // publish the blank
		s, err := cl.newSegment(seg.Start + int64(cl.segSize))
		if err != nil {
			return nil, 0, err
		}
		return s, 0, nil
	}
	return seg, pos, nil
}

// read returns a held segment and the bytes [off, off+size) inside it.
func (cl *commitLog) read(off int64, size int) (*mmapfile.File, []byte) {
	if size <= 0 || off+int64(size) > cl.wrote.Load() {
		return nil, nil
	}
	seg := cl.segment(off)
	if seg == nil {
		return nil, nil
	}
	pos := int(off - seg.Start)
	if pos+size > seg.Size() {
		seg.Release()
		return nil, nil
	}
	return seg, seg.Data[pos : pos+size : pos+size]
}

// flush fdatasyncs every segment holding bytes in [flushed, wrote) and
// advances flushed.
func (cl *commitLog) flush() error {
	cl.flushMu.Lock()
	defer cl.flushMu.Unlock()
	target := cl.wrote.Load()
	from := cl.flushed.Load()
	if target <= from {
		return nil
	}
	for off := from - from%int64(cl.segSize); off < target; off += int64(cl.segSize) {
		seg := cl.segment(off)
		if seg == nil {
			continue // deleted by retention: nothing left to flush there
		}
		if h := cl.syncHook.Load(); h != nil {
			(*h)()
		}
		err := seg.Sync()
		seg.Release()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrWriteFailed, err)
		}
	}
	cl.flushed.Store(target)
	return nil
}

// kick wakes the goroutine serving ch (a channel of capacity 1) without waiting: a
// kick already pending covers this one.
func kick(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// serveKicks runs do after each kick on kicks until stop is closed.
func serveKicks(stop, kicks <-chan struct{}, do func()) {
	for {
		select {
		case <-stop:
			return
		case <-kicks:
		}
		do()
	}
}
