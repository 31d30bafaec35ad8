package testwait

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer a daemon or command may write while the test
// reads it, typically waiting for a line to appear.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
