package mmapfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCreateHoldDestroy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, Name(4096))
	f, err := Create(path, 4096, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "00000000000000004096" || f.Start != 4096 || f.Size() != 8192 {
		t.Fatalf("name %s start %d size %d", filepath.Base(path), f.Start, f.Size())
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() != 8192 {
		t.Fatalf("file size %v %v", st, err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatal("temp file left behind")
	}
	copy(f.Data, "hello")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if !f.Hold() {
		t.Fatal("Hold failed on a live file")
	}
	if f.TryDestroy() {
		t.Fatal("destroyed while held")
	}
	if string(f.Data[:5]) != "hello" {
		t.Fatal("mapping damaged by a refused destroy")
	}
	f.Release()
	if !f.TryDestroy() {
		t.Fatal("destroy refused with no readers")
	}
	if f.Hold() {
		t.Fatal("Hold succeeded on a destroyed file")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("file still on disk: %v", err)
	}
}

func TestCloseWaitsForReaders(t *testing.T) {
	path := filepath.Join(t.TempDir(), Name(0))
	f, err := Create(path, 0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	copy(f.Data, "data")
	f.Hold()
	f.Close()
	// Still mapped for the reader.
	if string(f.Data[:4]) != "data" {
		t.Fatal("reader lost its mapping")
	}
	f.Release()
	g, err := Open(path, 0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if string(g.Data[:4]) != "data" {
		t.Fatal("data not persisted")
	}
}

func TestZeroFrom(t *testing.T) {
	f, err := Create(filepath.Join(t.TempDir(), Name(0)), 0, 3*4096)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range f.Data {
		f.Data[i] = 7
	}
	if _, err := f.ZeroFrom(100); err != nil {
		t.Fatal(err)
	}
	if f.Data[99] != 7 || !allZero(f.Data[100:]) {
		t.Fatal("ZeroFrom did not zero exactly the tail")
	}
}

func TestWriteAtIsSeenInTheMappingAndBounded(t *testing.T) {
	f, err := Create(filepath.Join(t.TempDir(), Name(0)), 0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.WriteAt([]byte("record"), 4090); err != nil {
		t.Fatal(err)
	}
	if got := string(f.Data[4090:]); got != "record" {
		t.Fatalf("mapping holds %q", got)
	}
	for _, pos := range []int{4091, -1} {
		if err := f.WriteAt([]byte("record"), pos); err == nil {
			t.Errorf("WriteAt(%d) past the file's 4096 bytes: no error", pos)
		}
	}
}

func TestPopulateReadsPagesInWithoutWriting(t *testing.T) {
	const size = 64 << 10
	f, err := Create(filepath.Join(t.TempDir(), Name(0)), 0, size)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	from, to := pageSize+5, 5*pageSize // pages 1 to 4; from is rounded down
	if n := resident(t, f.Data[pageSize:to]); n != 0 {
		t.Fatalf("%d pages of a new file resident before Populate", n)
	}
	err = f.Populate(from, to-from)
	if errors.Is(err, ErrPopulateUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n := resident(t, f.Data[pageSize:to]); n != 4 {
		t.Fatalf("%d of pages 1-4 resident after Populate, want 4", n)
	}
	if !allZero(f.Data) {
		t.Fatal("Populate changed the file")
	}
	for _, r := range [][2]int{{-1, 10}, {size - 10, 11}, {0, -1}} {
		if err := f.Populate(r[0], r[1]); err == nil {
			t.Errorf("Populate(%d, %d) of a %d-byte file: no error", r[0], r[1], size)
		}
	}
}
