package dispatch

import (
	"container/heap"
	"context"
	"sync"
)

// Limits bound concurrency. Zero or negative means unlimited.
type Limits struct {
	Total      int
	PerNode    int
	PerStorage int
}

// Claim names what an action occupies while it runs.
type Claim struct {
	Nodes    []string
	Storages []string // storage ids; qualify local storages as "node/storage"
}

// Limiter hands out slots under Limits.
//
// A claim that does not fit waits in the queue of one resource that is
// full (the total, a node or a storage). A release looks only at the queues
// of what it freed and hands the slots over itself, oldest waiter first, so
// it wakes only the waiters that now run: waking every waiter on every
// release made an apply of n actions cost n² wake-ups.
type Limiter struct {
	limits   Limits
	mu       sync.Mutex
	total    int
	nodes    map[string]int
	storages map[string]int
	queues   map[resource]*waitQueue
	seq      uint64
}

// resource is one limited thing: the total (kind 't'), a node ('n') or a
// storage ('s').
type resource struct {
	kind byte
	name string
}

var totalResource = resource{kind: 't'}

// waiter is one Acquire waiting for its claim to fit.
type waiter struct {
	c       Claim
	seq     uint64 // arrival order: older waiters are served first
	ready   chan struct{}
	granted bool
	q       *waitQueue
	idx     int
}

// waitQueue is a heap of waiters by arrival.
type waitQueue []*waiter

func (q waitQueue) Len() int           { return len(q) }
func (q waitQueue) Less(i, j int) bool { return q[i].seq < q[j].seq }
func (q waitQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx, q[j].idx = i, j
}
func (q *waitQueue) Push(x any) { w := x.(*waiter); w.idx = len(*q); *q = append(*q, w) }
func (q *waitQueue) Pop() any {
	old := *q
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return w
}

// NewLimiter returns a limiter for l.
func NewLimiter(l Limits) *Limiter {
	return &Limiter{limits: l, nodes: map[string]int{}, storages: map[string]int{}, queues: map[resource]*waitQueue{}}
}

// Limits returns the limits in force.
func (l *Limiter) Limits() Limits { return l.limits }

// full reports whether r has no slot left.
func (l *Limiter) full(r resource) bool {
	switch r.kind {
	case 'n':
		return l.limits.PerNode > 0 && l.nodes[r.name] >= l.limits.PerNode
	case 's':
		return l.limits.PerStorage > 0 && l.storages[r.name] >= l.limits.PerStorage
	default:
		return l.limits.Total > 0 && l.total >= l.limits.Total
	}
}

// blocker returns a full resource c needs, or false when c fits.
func (l *Limiter) blocker(c Claim) (resource, bool) {
	if l.full(totalResource) {
		return totalResource, true
	}
	for _, n := range c.Nodes {
		if r := (resource{'n', n}); l.full(r) {
			return r, true
		}
	}
	for _, s := range c.Storages {
		if r := (resource{'s', s}); l.full(r) {
			return r, true
		}
	}
	return resource{}, false
}

func (l *Limiter) take(c Claim) {
	l.total++
	for _, n := range c.Nodes {
		l.nodes[n]++
	}
	for _, s := range c.Storages {
		l.storages[s]++
	}
}

// park queues w behind r.
func (l *Limiter) park(w *waiter, r resource) {
	q := l.queues[r]
	if q == nil {
		q = &waitQueue{}
		l.queues[r] = q
	}
	w.q = q
	heap.Push(q, w)
}

// Acquire blocks until c fits, then takes it. It returns a release function,
// or the context's error.
func (l *Limiter) Acquire(ctx context.Context, c Claim) (func(), error) {
	c = Claim{Nodes: uniq(c.Nodes), Storages: uniq(c.Storages)}
	release := func() func() {
		var once sync.Once
		return func() { once.Do(func() { l.release(c) }) }
	}
	l.mu.Lock()
	// Every waiter is blocked by a full resource (a release hands over
	// what it frees at once), so a claim that fits now jumps no one able to run.
	r, blocked := l.blocker(c)
	if !blocked {
		l.take(c)
		l.mu.Unlock()
		return release(), nil
	}
	l.seq++
	w := &waiter{c: c, seq: l.seq, ready: make(chan struct{})}
	l.park(w, r)
	l.mu.Unlock()
	select {
	case <-w.ready:
		return release(), nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	if w.granted {
		// Granted as the context ended: give the slots back.
		l.mu.Unlock()
		l.release(c)
		return nil, ctx.Err()
	}
	heap.Remove(w.q, w.idx)
	l.mu.Unlock()
	return nil, ctx.Err()
}

func (l *Limiter) release(c Claim) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	freed := make([]resource, 0, 1+len(c.Nodes)+len(c.Storages))
	freed = append(freed, totalResource)
	for _, n := range c.Nodes {
		if l.nodes[n]--; l.nodes[n] <= 0 {
			delete(l.nodes, n)
		}
		freed = append(freed, resource{'n', n})
	}
	for _, s := range c.Storages {
		if l.storages[s]--; l.storages[s] <= 0 {
			delete(l.storages, s)
		}
		freed = append(freed, resource{'s', s})
	}
	l.handOver(freed)
}

// handOver serves the queues of the freed resources, oldest waiter first:
// a waiter that fits takes its slots; one still blocked moves to the queue
// of what blocks it now (a full resource, so it is not looked at again in
// this call).
func (l *Limiter) handOver(freed []resource) {
	for {
		var next *waitQueue
		for _, r := range freed {
			q := l.queues[r]
			if q == nil || q.Len() == 0 || l.full(r) {
				continue
			}
			if next == nil || (*q)[0].seq < (*next)[0].seq {
				next = q
			}
		}
		if next == nil {
			break
		}
		w := heap.Pop(next).(*waiter)
		if r, blocked := l.blocker(w.c); blocked {
			l.park(w, r)
			continue
		}
		l.take(w.c)
		w.granted, w.q = true, nil
		close(w.ready)
	}
	for _, r := range freed {
		if q := l.queues[r]; q != nil && q.Len() == 0 {
			delete(l.queues, r)
		}
	}
}

// Running is the number of slots taken.
func (l *Limiter) Running() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

func uniq(in []string) []string {
	if len(in) < 2 {
		return in
	}
	seen := make(map[string]bool, len(in))
	out := make([]string, 0, len(in))
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
