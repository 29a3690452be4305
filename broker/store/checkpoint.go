package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/openrmq/rocketmq-operator/broker/store/internal/mmapfile"
)

// checkpoint records how far each part of the store is durable. Written
// only after the data it describes has been synced.
type checkpoint struct {
	commitLog    int64 // commitlog bytes below are fdatasync'ed
	consumeQueue int64 // consume-queue entries for records below are durable
	index        int64 // index entries for records below are durable
	timestamp    int64 // wall clock ms when written
}

const (
	checkpointMagic = 0x524d51434b505431 // "RMQCKPT1"
	checkpointSize  = 48                 // magic 8, four int64 fields, crc32 4, pad 4
)

func (c checkpoint) encode() []byte {
	b := make([]byte, checkpointSize)
	be := binary.BigEndian
	be.PutUint64(b, checkpointMagic)
	be.PutUint64(b[8:], uint64(c.commitLog))
	be.PutUint64(b[16:], uint64(c.consumeQueue))
	be.PutUint64(b[24:], uint64(c.index))
	be.PutUint64(b[32:], uint64(c.timestamp))
	be.PutUint32(b[40:], crc32.ChecksumIEEE(b[:40]))
	return b
}

// readCheckpoint returns the stored checkpoint; ok is false when the file is
// missing or damaged (then recovery scans everything).
func readCheckpoint(path string) (checkpoint, bool) {
	b, err := os.ReadFile(path)
	be := binary.BigEndian
	if err != nil || len(b) != checkpointSize || be.Uint64(b) != checkpointMagic ||
		be.Uint32(b[40:]) != crc32.ChecksumIEEE(b[:40]) {
		return checkpoint{}, false
	}
	return checkpoint{
		commitLog:    int64(be.Uint64(b[8:])),
		consumeQueue: int64(be.Uint64(b[16:])),
		index:        int64(be.Uint64(b[24:])),
		timestamp:    int64(be.Uint64(b[32:])),
	}, true
}

// writeCheckpoint replaces the checkpoint atomically: temp file, fsync,
// rename, fsync the directory.
func writeCheckpoint(path string, c checkpoint) error {
	return writeFileAtomic(path, c.encode())
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return mmapfile.SyncDir(filepath.Dir(path))
}
