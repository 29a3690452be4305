package mmapfile

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident counts the pages of b, a page-aligned part of a mapping, that are in
// memory (mincore(2); x/sys/unix has no wrapper for it).
func resident(t testing.TB, b []byte) int {
	t.Helper()
	vec := make([]byte, (len(b)+pageSize-1)/pageSize)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
