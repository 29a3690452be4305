package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
	"github.com/openrmq/rocketmq-operator/pkg/atomicfile"
)

// CutRequestFile, in the store's root, asks the next Open to cut the commitlog at the
// offset it holds. A broker rejoining its group as a slave writes it when its commitlog
// holds bytes the new master never had (broker/ha.Divergence), then reopens the store.
// The request is durable before the broker acts on it and removed only once the cut is
// flushed, so a crash in between cuts at the next start: the cut happens once or again,
// never half.
const CutRequestFile = "cutRequest"

// Cut is what the last Open cut on request: the commitlog bytes [From, To).
type Cut struct{ From, To int64 }

// RequestCut makes the next Open of the store rooted at root cut its commitlog at
// offset, which must be a record boundary (an epoch's start offset is one).
func RequestCut(root string, offset int64) error {
	if offset < 0 {
		return fmt.Errorf("store: cut request at negative offset %d", offset)
	}
	if err := atomicfile.Write(filepath.Join(root, CutRequestFile), []byte(strconv.FormatInt(offset, 10)+"\n")); err != nil {
		return fmt.Errorf("store: write cut request: %w", err)
	}
	return nil
}

// applyCutRequest cuts the commitlog at a requested offset below its end, during
// recover and before the queues and the index are truncated to the new end. It reports
// whether a request was found (applied, or moot because the log already ends there).
func (s *Store) applyCutRequest() (bool, error) {
	b, err := os.ReadFile(filepath.Join(s.cfg.StorePathRootDir, CutRequestFile))
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: read cut request: %w", err)
	}
	off, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || off < 0 {
		return false, fmt.Errorf("store: %s holds %q, not an offset: remove it to start without the cut", CutRequestFile, b)
	}
	end := s.cl.wrote.Load()
	if off >= end {
		return true, nil
	}
	if first := s.cl.minOffset(); off < first {
		return false, fmt.Errorf("store: cut requested at %d, below the commitlog's first offset %d", off, first)
	}
	if err := s.cutCommitLog(off, true); err != nil {
		return false, err
	}
	s.LastCut = Cut{From: off, To: end}
	s.log.Warn("commitlog cut on request: these bytes were never replicated to the group's new master",
		"from", off, "to", end, "bytes", end-off)
	return true, nil
}

func removeCutRequest(root string) error {
	path := filepath.Join(root, CutRequestFile)
	for _, p := range []string{path, path + atomicfile.BackupSuffix} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return mmapfile.SyncDir(root)
}
