// Package mmapfile is a fixed-size, preallocated, memory-mapped file with a
// reference count that keeps the mapping alive while readers hold slices of
// it.
package mmapfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// File is one memory-mapped file. Data is the whole mapping; callers
// coordinate their own write positions.
type File struct {
	Path  string
	Start int64 // logical offset of byte 0 (from the file name)
	Data  []byte
	// OnDisk is the file's size when it was opened, before Open extended a
	// short file: less than len(Data) means the end of the file was lost.
	OnDisk int64
	f      *os.File
	// refs counts the owner (1) plus readers. It reaches 0 exactly once, at
	// which point the mapping is unmapped and the file closed.
	refs    atomic.Int64
	removed atomic.Bool
}

// Create makes a new file of size bytes, preallocated on disk so that a full
// disk fails here and never while writing into the mapping, then maps it.
// The parent directory is fsynced so the name survives a crash.
func Create(path string, start int64, size int) (*File, error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if err := preallocate(f, int64(size)); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("preallocate %s (%d bytes): %w", path, size, err)
	}
	// Durability order: size durable, rename, then the directory entry.
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	if err := SyncDir(filepath.Dir(path)); err != nil {
		f.Close()
		return nil, err
	}
	return mapFile(f, path, start, size)
}

// CreateUnsynced is Create without the fsyncs: it costs no disk round
// trip. The file still appears under its final name only at its full size
// (temp name, preallocate, rename), but nothing of it is durable until the
// caller Syncs it and then SyncDirs every directory it (or a MkdirAll
// before it) created; a crash before that may lose the file, leave its
// ".tmp", or leave it short (Open extends a short file).
func CreateUnsynced(path string, start int64, size int) (*File, error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if err := preallocate(f, int64(size)); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("preallocate %s (%d bytes): %w", path, size, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	return mapFile(f, path, start, size)
}

func preallocate(f *os.File, size int64) error {
	err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return f.Truncate(size)
	}
	return err
}

// Open maps an existing file; its size must be size bytes (a shorter file
// is extended).
func Open(path string, start int64, size int) (*File, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	onDisk := st.Size()
	if st.Size() != int64(size) {
		if st.Size() > int64(size) {
			f.Close()
			return nil, fmt.Errorf("store: file %s is %d bytes, expected %d", path, st.Size(), size)
		}
		if err := preallocate(f, int64(size)); err != nil {
			f.Close()
			return nil, fmt.Errorf("extend %s: %w", path, err)
		}
	}
	m, err := mapFile(f, path, start, size)
	if err == nil {
		m.OnDisk = onDisk
	}
	return m, err
}

// OpenReadOnly maps an existing file as it is, read only, whatever its
// size (offline checks: nothing is extended or written). An empty file
// has no mapping. Writing to Data faults.
func OpenReadOnly(path string, start int64) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	m := &File{Path: path, Start: start, OnDisk: st.Size(), f: f}
	m.refs.Store(1)
	if st.Size() == 0 {
		return m, nil
	}
	if m.Data, err = syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED); err != nil {
		f.Close()
		return nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	return m, nil
}

func mapFile(f *os.File, path string, start int64, size int) (*File, error) {
	data, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	m := &File{Path: path, Start: start, Data: data, OnDisk: int64(size), f: f}
	m.refs.Store(1)
	return m, nil
}

// Size is the mapping length.
func (m *File) Size() int { return len(m.Data) }

// Populate brings the pages of [pos, pos+n) into the page cache and the mapping
// (MADV_POPULATE_READ) without writing them: a later store into them skips the
// page's allocation and zeroing. pos is rounded down to a page. It fails with
// ErrPopulateUnsupported on kernels before 5.14.
func (m *File) Populate(pos, n int) error {
	if pos < 0 || n < 0 || pos+n > len(m.Data) {
		return fmt.Errorf("populate %s: [%d, %d) outside its %d bytes", m.Path, pos, pos+n, len(m.Data))
	}
	start := pos - pos%pageSize
	err := unix.Madvise(m.Data[start:pos+n], unix.MADV_POPULATE_READ)
	if errors.Is(err, unix.EINVAL) {
		return ErrPopulateUnsupported
	}
	if err != nil {
		return fmt.Errorf("populate %s [%d, %d): %w", m.Path, start, pos+n, err)
	}
	return nil
}

// ErrPopulateUnsupported is Populate's error where the kernel lacks MADV_POPULATE_READ.
var ErrPopulateUnsupported = errors.New("madvise(MADV_POPULATE_READ) not supported by this kernel (needs Linux 5.14)")

var pageSize = os.Getpagesize()

// Sync makes the mapping durable (fdatasync). Pages dirtied through
// a shared mapping are part of the page cache, so fdatasync covers them.
func (m *File) Sync() error {
	if err := syscall.Fdatasync(int(m.f.Fd())); err != nil {
		return fmt.Errorf("fdatasync %s: %w", m.Path, err)
	}
	return nil
}

// WriteAt writes b at pos through the file (pwrite), not through the mapping, which
// sees the bytes at once (one page cache). It costs a syscall where a store into the
// mapping costs page faults: on first touch, and again after every fdatasync, which
// write-protects the pages it cleans; and an I/O error is an error, not a fault.
func (m *File) WriteAt(b []byte, pos int) error {
	if pos < 0 || pos+len(b) > len(m.Data) {
		return fmt.Errorf("write %s: [%d, %d) outside its %d bytes", m.Path, pos, pos+len(b), len(m.Data))
	}
	if _, err := m.f.WriteAt(b, int64(pos)); err != nil {
		return fmt.Errorf("write %s: %w", m.Path, err)
	}
	return nil
}

// Hold takes a reader reference; it fails once the file is released.
func (m *File) Hold() bool {
	for {
		n := m.refs.Load()
		if n <= 0 {
			return false
		}
		if m.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release drops a reference taken by Hold.
func (m *File) Release() {
	if m.refs.Add(-1) == 0 {
		m.cleanup()
	}
}

// Refs returns the current reference count (owner included).
func (m *File) Refs() int64 { return m.refs.Load() }

// TryDestroy releases the owner reference and removes the file, but only
// when no reader holds it. It reports whether the file is gone.
func (m *File) TryDestroy() bool {
	m.removed.Store(true)
	if !m.refs.CompareAndSwap(1, 0) {
		m.removed.Store(false)
		return false
	}
	m.cleanup()
	return true
}

// Close drops the owner reference without removing the file; the mapping
// goes away when the last reader releases it.
func (m *File) Close() {
	m.Release()
}

func (m *File) cleanup() {
	if m.Data != nil {
		_ = syscall.Munmap(m.Data) // fails only for a range that is not a mapping
	}
	m.f.Close()
	if m.removed.Load() {
		os.Remove(m.Path)
	}
}

// SyncDir fsyncs a directory so that entries created or removed in it are
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// Name formats a logical start offset as RocketMQ's 20-digit file name.
func Name(start int64) string { return fmt.Sprintf("%020d", start) }

const fallocZeroRange = 0x10 // FALLOC_FL_ZERO_RANGE

// ZeroFrom zeroes the file from pos to its end and makes that durable. It
// asks the filesystem to zero the range (keeping the blocks allocated, so
// a later write cannot hit ENOSPC) and falls back to clearing the non-zero
// pages through the mapping. It reports how many bytes were not zero
// (exact only on the fallback path; otherwise the size of the range).
func (m *File) ZeroFrom(pos int) (int64, error) {
	if pos >= len(m.Data) {
		return 0, nil
	}
	// Flush our own dirty pages first so the filesystem sees them.
	if err := m.Sync(); err != nil {
		return 0, err
	}
	n := int64(len(m.Data) - pos)
	if err := syscall.Fallocate(int(m.f.Fd()), fallocZeroRange, int64(pos), n); err == nil {
		return n, m.Sync()
	}
	var dirty int64
	for off := pos; off < len(m.Data); off += 4096 {
		page := m.Data[off:min(off+4096, len(m.Data))]
		if !allZero(page) {
			dirty += int64(len(page))
			clear(page)
		}
	}
	return dirty, m.Sync()
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
