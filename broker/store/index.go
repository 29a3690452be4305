package store

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// indexService owns the index files, oldest first. The dispatcher is the
// only writer; queries and retention take mu.
type indexService struct {
	dir     string
	slots   int
	entries int

	mu    sync.RWMutex
	files []*indexFile
	// newDir is set when the dispatcher created a file that flush has not
	// yet made durable (file and directory entry).
	newDir bool
}

func openIndex(dir string, slots, entries int) (*indexService, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &indexService{dir: dir, slots: slots, entries: entries}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".tmp" {
			os.Remove(filepath.Join(dir, e.Name()))
		} else if len(e.Name()) == 17 {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	size := indexFileSize(slots, entries)
	for _, n := range names {
		f, err := mmapfile.Open(filepath.Join(dir, n), 0, size)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("%w: index file %s: %w", ErrCorrupt, n, err)
		}
		s.files = append(s.files, &indexFile{f: f, slots: slots, entries: entries})
	}
	return s, nil
}

func (s *indexService) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.files {
		x.f.Close()
	}
	s.files = nil
}

func (s *indexService) newFile(now time.Time) (*indexFile, error) {
	name := ""
	for t := now; ; t = t.Add(time.Millisecond) {
		name = t.Format("20060102150405.000")
		name = name[:14] + name[15:]
		if _, err := os.Stat(filepath.Join(s.dir, name)); os.IsNotExist(err) {
			break
		}
	}
	// Unsynced: the dispatcher must not wait for a disk round trip (under
	// load two fsyncs here held every consume queue back for seconds).
	// flush syncs the file and then its directory before a checkpoint can
	// cover its entries; a crash before that loses at most entries that
	// recovery re-dispatches anyway (openIndex extends a short file).
	f, err := mmapfile.CreateUnsynced(filepath.Join(s.dir, name), 0, indexFileSize(s.slots, s.entries))
	if err != nil {
		return nil, fmt.Errorf("%w: index file: %w", ErrWriteFailed, err)
	}
	x := &indexFile{f: f, slots: s.slots, entries: s.entries}
	x.setHeader(indexHeader{indexCount: 1})
	x.dirty.Store(true)
	s.newDir = true
	s.files = append(s.files, x)
	return x, nil
}

// build indexes one record: its UNIQ_KEY and each of its KEYS as
// "topic#key". Records at or below what the newest file already covers
// are replays and are skipped. Dispatcher only.
func (s *indexService) build(v *message.RecordView, phy int64) error {
	now := time.UnixMilli(v.StoreTimestamp())
	props := v.Properties()
	uniq, hasUniq := message.LookupProperty(props, message.PropertyUniqClientMessageIDKey)
	keys, hasKeys := message.LookupProperty(props, message.PropertyKeys)
	if !hasUniq && !hasKeys {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var x *indexFile
	if n := len(s.files); n > 0 {
		x = s.files[n-1]
		if h := x.header(); h.indexCount > 1 && phy <= h.endPhy {
			return nil
		}
	}
	topic := v.Topic()
	put := func(key []byte) error {
		if len(key) == 0 {
			return nil
		}
		if x == nil || x.full() {
			var err error
			if x, err = s.newFile(now); err != nil {
				return err
			}
		}
		x.put(keyHash(topic, key), phy, v.StoreTimestamp())
		return nil
	}
	if hasUniq {
		if err := put(uniq); err != nil {
			return err
		}
	}
	for k := range message.KeysSeq(keys) {
		if err := put(k); err != nil {
			return err
		}
	}
	return nil
}

// query returns commitlog offsets of topic#key entries stored in
// [begin, end] ms, newest first, at most max. Any begin and end are valid:
// tools send end = Long.MAX_VALUE, and no bound is ever added to or
// subtracted from without saturating.
func (s *indexService) query(topic, key string, max int, begin, end int64) []int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []int64
	if begin > end {
		return nil
	}
	for i := len(s.files) - 1; i >= 0 && len(out) < max; i-- {
		h := s.files[i].header()
		// Entry times are whole seconds after beginTs, so a file whose
		// first entry is within a second after end may still hold none in
		// range; the per-entry check decides.
		if h.indexCount <= 1 || h.endTs < begin || h.beginTs > addSat(end, 1000) {
			continue
		}
		out = s.files[i].query(keyHash(topic, key), begin, end, max, out)
	}
	return out
}

// flush makes every written entry durable: dirty files first, then the
// directory if the dispatcher created a file since the last flush. The
// fsyncs run outside mu so that the dispatcher keeps indexing meanwhile.
func (s *indexService) flush() error {
	s.mu.Lock()
	var dirty []*indexFile
	for _, x := range s.files {
		if x.dirty.Swap(false) && x.f.Hold() {
			dirty = append(dirty, x)
		}
	}
	syncDir := s.newDir
	s.newDir = false
	s.mu.Unlock()

	var err error
	for _, x := range dirty {
		if err == nil {
			if err = x.f.Sync(); err != nil {
				err = fmt.Errorf("%w: index: %w", ErrWriteFailed, err)
			}
		}
		if err != nil {
			x.dirty.Store(true) // not synced: the next flush retries
		}
		x.f.Release()
	}
	if err == nil && syncDir {
		if err = mmapfile.SyncDir(s.dir); err != nil {
			err = fmt.Errorf("%w: index: %w", ErrWriteFailed, err)
		}
	}
	if err != nil && syncDir {
		s.mu.Lock()
		s.newDir = true
		s.mu.Unlock()
	}
	return err
}

// truncate drops entries pointing at or past phyEnd (recovery).
func (s *indexService) truncate(phyEnd int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.files) - 1; i >= 0; i-- {
		h := s.files[i].header()
		if h.indexCount > 1 && h.endPhy < phyEnd {
			return
		}
		s.files[i].truncate(phyEnd)
	}
}

// endPhy is the commitlog offset of the newest indexed record (-1: none).
func (s *indexService) endPhy() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := len(s.files) - 1; i >= 0; i-- {
		if h := s.files[i].header(); h.indexCount > 1 {
			return h.endPhy
		}
	}
	return -1
}

// deleteBelow removes index files whose entries all point below phyMin,
// never the newest.
func (s *indexService) deleteBelow(phyMin int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for len(s.files) > 1 {
		h := s.files[0].header()
		if h.endPhy >= phyMin || !s.files[0].f.TryDestroy() {
			break
		}
		s.files = s.files[1:]
		n++
	}
	return n
}

// addSat is a+b clamped to the int64 range, for time bounds that may be
// math.MaxInt64 or math.MinInt64.
func addSat(a, b int64) int64 {
	c := a + b
	if (c > a) != (b > 0) {
		if b > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return c
}
