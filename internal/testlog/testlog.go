// Package testlog holds what tests share to read the logs of the code they run.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer collects log lines for a test to read while the code under test still writes
// them from its own goroutines.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
