// Package syncbuf is a bytes.Buffer that goroutines may read while others write it (a child process's
// output, read by a test while the process runs).
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is safe for concurrent writers and readers; the zero value is empty and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
