package auth

import (
	"sync"
	"time"
)

// Limiter counts failures per key (a client address, an account name) and,
// past a threshold, asks to wait before the next attempt, doubling the wait
// with each further failure up to a ceiling. Failures are forgotten after a
// quiet period and on success, so nobody is locked out for good: the real
// admin waits at most the ceiling.
type Limiter struct {
	mu        sync.Mutex
	entries   map[string]*limitEntry
	threshold int
	base, max time.Duration
	forget    time.Duration
	maxKeys   int
	now       func() time.Time
}

type limitEntry struct {
	failures     int
	last         time.Time
	blockedUntil time.Time
}

// NewLimiter allows threshold failures, then waits base, 2*base, ... up to
// max; failures older than forget no longer count.
func NewLimiter(threshold int, base, max, forget time.Duration) *Limiter {
	return &Limiter{entries: map[string]*limitEntry{}, threshold: max1(threshold), base: base, max: max,
		forget: forget, maxKeys: 100_000, now: time.Now}
}

func max1(v int) int { return max(v, 1) }

// Allow tells whether key may try now, and otherwise how long to wait.
func (l *Limiter) Allow(key string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entries[key]
	if e == nil {
		return true, 0
	}
	if wait := e.blockedUntil.Sub(l.now()); wait > 0 {
		return false, wait
	}
	return true, 0
}

// Fail records a failure of key.
func (l *Limiter) Fail(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	e := l.entries[key]
	if e == nil {
		if len(l.entries) >= l.maxKeys {
			l.prune(now)
		}
		e = &limitEntry{}
		l.entries[key] = e
	}
	if now.Sub(e.last) > l.forget {
		e.failures = 0
	}
	e.failures++
	e.last = now
	if over := e.failures - l.threshold; over >= 0 {
		wait := l.base
		for i := 0; i < over && wait < l.max; i++ {
			wait *= 2
		}
		e.blockedUntil = now.Add(min(wait, l.max))
	}
}

// Succeed forgets key's failures.
func (l *Limiter) Succeed(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.entries, key)
}

// prune drops forgotten entries; if the table is still full, it drops
// arbitrary ones rather than grow without bound under a flood.
func (l *Limiter) prune(now time.Time) {
	for k, e := range l.entries {
		if now.Sub(e.last) > l.forget && !e.blockedUntil.After(now) {
			delete(l.entries, k)
		}
	}
	for k := range l.entries {
		if len(l.entries) < l.maxKeys {
			break
		}
		delete(l.entries, k)
	}
}
