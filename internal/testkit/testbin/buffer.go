package testbin

import (
	"bytes"
	"sync"
)

// Buffer collects a child process's output while the test reads it: a
// bytes.Buffer safe for the concurrent writes of the child's stdout and
// stderr and the test's reads. The zero value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
