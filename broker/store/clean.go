package store

import (
	"errors"
	"fmt"
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
		s.log.Warn("disk usage probe failed", "err", err)
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

// checkFreeSpace warns, at Open, when the volume of the commitlog cannot
// hold one more segment, or that of the index one more index file (both,
// when they share a volume): the next file cannot then be created, and from
// then on every write fails (ErrWriteFailed; files are preallocated, so it
// fails at creation, never half-way). diskMaxUsedSpaceRatio still governs
// cleaning while running. It returns whether it warned.
func (s *Store) checkFreeSpace() bool {
	seg, idx := int64(s.cfg.MappedFileSizeCommitLog), int64(indexFileSize(s.cfg.MaxHashSlotNum, s.cfg.MaxIndexNum))
	cFree, cVol, err1 := s.freeSpace(s.cfg.commitLogDir())
	iFree, iVol, err2 := s.freeSpace(s.cfg.indexDir())
	if err1 != nil || err2 != nil {
		s.log.Warn("free space probe failed", "err", errors.Join(err1, err2))
		return false
	}
	warn := func(free, need int64, dir, what string) bool {
		if free >= need {
			return false
		}
		s.log.Warn("low disk space: creating the next file will fail, and then every write",
			"dir", dir, "free", sizeString(free), "need", what+" ("+sizeString(need)+")")
		return true
	}
	if cVol == iVol {
		return warn(cFree, seg+idx, s.cfg.StorePathRootDir, "one commitlog segment and one index file")
	}
	c := warn(cFree, seg, s.cfg.commitLogDir(), "one commitlog segment")
	return warn(iFree, idx, s.cfg.indexDir(), "one index file") || c
}

// freeSpace is the space an unprivileged writer may use on path's volume,
// and the volume's id.
func (s *Store) freeSpace(path string) (int64, [2]int32, error) {
	if s.cfg.DiskFree != nil {
		n, err := s.cfg.DiskFree(path)
		return n, [2]int32{}, err
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(path, &fs); err != nil {
		return 0, [2]int32{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	return int64(fs.Bavail) * int64(fs.Bsize), fs.Fsid.X__val, nil
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

// sizeString writes n bytes in MiB, or in bytes below 1 MiB.
func sizeString(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
