// Package syncbuf is a bytes.Buffer safe for concurrent writers: a log sink
// for tests and test helpers whose output comes from many goroutines.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer collects writes; Write and String are safe for concurrent use.
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
