package store

import (
	"fmt"
	"log"
	"os"
	"syscall"
	"time"
)

// deleteFilesBatchMax bounds commitlog segments removed per cleaning round.
const deleteFilesBatchMax = 10

// cleanLoop runs retention every CleanResourceInterval.
func (s *Store) cleanLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.CleanResourceInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.CleanExpired()
		}
	}
}

// CleanStats reports what a retention round removed.
type CleanStats struct {
	CommitLogSegments, ConsumeQueueFiles, IndexFiles int
	Forced                                           bool // disk above DiskMaxUsedSpaceRatio
}

// CleanExpired runs one retention round: at a DeleteWhen hour it removes
// commitlog segments last written more than FileReservedTime hours ago;
// while disk use is above DiskMaxUsedSpaceRatio it removes the oldest ones
// regardless of age. The newest segment and segments with reads in
// progress are kept. Consume-queue and index files wholly below the new
// commitlog minimum follow.
func (s *Store) CleanExpired() CleanStats {
	var st CleanStats
	now := s.cfg.now()
	ratio, err := s.diskUsage()
	if err != nil {
		log.Printf("store: disk usage probe: %v", err)
	}
	st.Forced = ratio*100 > float64(s.cfg.DiskMaxUsedSpaceRatio)
	if s.retention.timeToDelete(now) || st.Forced {
		st.CommitLogSegments = s.cl.deleteExpired(now, s.retention, st.Forced, deleteFilesBatchMax)
	}
	minPhy := s.cl.minOffset()
	s.dispMu.Lock()
	if s.dispatched.Load() < minPhy {
		s.dispatched.Store(minPhy) // nothing left to dispatch below
	}
	s.dispMu.Unlock()
	for _, cq := range s.allQueues() {
		st.ConsumeQueueFiles += cq.deleteBelow(minPhy)
	}
	st.IndexFiles = s.index.deleteBelow(minPhy)
	return st
}

func (s *Store) diskUsage() (float64, error) {
	if s.cfg.DiskUsage != nil {
		return s.cfg.DiskUsage(s.cfg.commitLogDir())
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(s.cfg.commitLogDir(), &fs); err != nil {
		return 0, fmt.Errorf("statfs: %w", err)
	}
	if fs.Blocks == 0 {
		return 0, nil
	}
	return float64(fs.Blocks-fs.Bfree) / float64(fs.Blocks), nil
}

// retention is the age rule of deleteWhen and fileReservedTime, apart from
// the files so that it can be checked at any instant (clean_test.go).
type retention struct {
	hours map[int]bool  // deleteWhen: hours of the day, local time as in Java
	keep  time.Duration // fileReservedTime
}

// timeToDelete reports whether now falls in a deleteWhen hour (Java's
// UtilAll.isItTimeToDo). The hour is read in now's location: the store's
// clock gives local time, so a DST change shifts nothing but the hour
// that is skipped or repeated.
func (r retention) timeToDelete(now time.Time) bool { return r.hours[now.Hour()] }

// expired reports whether a file last written at lastWrite has been kept
// long enough. Elapsed time, not calendar hours: month ends and DST changes
// do not make a file older.
func (r retention) expired(now, lastWrite time.Time) bool { return now.Sub(lastWrite) >= r.keep }

// deleteExpired removes up to max old segments from the head, never the
// newest, stopping at the first one it must keep. A segment's age is its
// modification time (as Java's MappedFile.getLastModifiedTimestamp) against
// the store's clock.
func (cl *commitLog) deleteExpired(now time.Time, r retention, force bool, max int) int {
	n := 0
	for n < max {
		cl.mu.Lock()
		if len(cl.segs) < 2 {
			cl.mu.Unlock()
			break
		}
		seg := cl.segs[0]
		var mtime time.Time
		if fi, err := statPath(seg.Path); err == nil {
			mtime = fi
		}
		if !force && !r.expired(now, mtime) {
			cl.mu.Unlock()
			break
		}
		if !seg.TryDestroy() { // a read holds it: try again next round
			cl.mu.Unlock()
			break
		}
		cl.segs = cl.segs[1:]
		cl.mu.Unlock()
		n++
	}
	return n
}

func statPath(path string) (time.Time, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}
