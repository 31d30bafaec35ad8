package ring

import (
	"slices"
	"testing"
)

func values(b *Buffer[int]) []int {
	var out []int
	for i := range b.Len() {
		out = append(out, b.At(i))
	}
	return out
}

// A full buffer drops its oldest value for each new one and keeps the
// others in the order they came.
func TestAFullBufferKeepsTheLatestValuesOldestFirst(t *testing.T) {
	b := New[int](3)
	for v := 1; v <= 2; v++ {
		b.Push(v)
	}
	if got := values(&b); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("before it is full: %v", got)
	}
	for v := 3; v <= 7; v++ {
		b.Push(v)
	}
	if got := values(&b); !slices.Equal(got, []int{5, 6, 7}) {
		t.Fatalf("after wrapping round: %v", got)
	}
	z := New[int](0)
	z.Push(1)
	z.Push(2)
	if got := values(&z); !slices.Equal(got, []int{2}) {
		t.Fatalf("a buffer asked for no room keeps one value: %v", got)
	}
}
