// Package ring is a bounded buffer of the latest values: the event hub's
// replay and the log ring keep theirs in one.
package ring

// Buffer keeps the last values pushed, up to its capacity. It is not safe
// for concurrent use: its owner holds its own lock.
type Buffer[T any] struct {
	vals  []T // oldest at start
	start int
	size  int
}

// New keeps the last capacity values (at least one).
func New[T any](capacity int) Buffer[T] {
	return Buffer[T]{vals: make([]T, max(capacity, 1))}
}

// Push adds v, dropping the oldest value when the buffer is full.
func (b *Buffer[T]) Push(v T) {
	if b.size < len(b.vals) {
		b.vals[(b.start+b.size)%len(b.vals)] = v
		b.size++
		return
	}
	b.vals[b.start] = v
	b.start = (b.start + 1) % len(b.vals)
}

// Len is how many values it holds.
func (b *Buffer[T]) Len() int { return b.size }

// At is the i-th oldest value it holds (0: the oldest).
func (b *Buffer[T]) At(i int) T { return b.vals[(b.start+i)%len(b.vals)] }
