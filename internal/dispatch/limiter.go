package dispatch

import (
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
type Limiter struct {
	limits   Limits
	mu       sync.Mutex
	total    int
	nodes    map[string]int
	storages map[string]int
	changed  chan struct{} // closed and replaced on every release
}

// NewLimiter returns a limiter for l.
func NewLimiter(l Limits) *Limiter {
	return &Limiter{limits: l, nodes: map[string]int{}, storages: map[string]int{}, changed: make(chan struct{})}
}

// Limits returns the limits in force.
func (l *Limiter) Limits() Limits { return l.limits }

func (l *Limiter) fits(c Claim) bool {
	if l.limits.Total > 0 && l.total >= l.limits.Total {
		return false
	}
	if l.limits.PerNode > 0 {
		for _, n := range uniq(c.Nodes) {
			if l.nodes[n] >= l.limits.PerNode {
				return false
			}
		}
	}
	if l.limits.PerStorage > 0 {
		for _, s := range uniq(c.Storages) {
			if l.storages[s] >= l.limits.PerStorage {
				return false
			}
		}
	}
	return true
}

// Acquire blocks until c fits, then takes it. It returns a release function,
// or the context's error.
func (l *Limiter) Acquire(ctx context.Context, c Claim) (func(), error) {
	c = Claim{Nodes: uniq(c.Nodes), Storages: uniq(c.Storages)}
	for {
		l.mu.Lock()
		if l.fits(c) {
			l.total++
			for _, n := range c.Nodes {
				l.nodes[n]++
			}
			for _, s := range c.Storages {
				l.storages[s]++
			}
			l.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { l.release(c) }) }, nil
		}
		wait := l.changed
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wait:
		}
	}
}

func (l *Limiter) release(c Claim) {
	l.mu.Lock()
	l.total--
	for _, n := range c.Nodes {
		if l.nodes[n]--; l.nodes[n] <= 0 {
			delete(l.nodes, n)
		}
	}
	for _, s := range c.Storages {
		if l.storages[s]--; l.storages[s] <= 0 {
			delete(l.storages, s)
		}
	}
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
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
