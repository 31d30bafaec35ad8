package auth

import (
	"sync"
	"time"
)

// Limiter counts failed attempts per key (a client address, an account
// name, or both) and, past a threshold, asks to wait before the next one,
// doubling the wait with each further failure up to a ceiling. Failures are
// forgotten after a quiet period and on success, so nobody is locked out for
// good: the real user waits at most the ceiling.
//
// An attempt is reserved before the costly check (Reserve) and settled after
// it (Attempt.Fail, Succeed, Cancel). Attempts in flight count against the
// threshold, so concurrent requests cannot get more guesses than sequential
// ones: with threshold 5, 60 parallel wrong passwords get at most 5 checks.
// Once past the threshold and after the wait, one attempt at a time is let
// through.
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
	inflight     int
	last         time.Time
	blockedUntil time.Time
}

// NewLimiter allows threshold failures, then waits base, 2*base, ... up to
// ceiling; failures older than forget no longer count.
func NewLimiter(threshold int, base, ceiling, forget time.Duration) *Limiter {
	return &Limiter{entries: map[string]*limitEntry{}, threshold: max(threshold, 1), base: base, max: ceiling,
		forget: forget, maxKeys: 100_000, now: time.Now}
}

// SetClock replaces the clock (tests move it instead of sleeping).
func (l *Limiter) SetClock(now func() time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.now = now
}

// Threshold is the number of failures allowed before the first wait.
func (l *Limiter) Threshold() int { return l.threshold }

// Backoff is the wait after the n-th failure (0 below the threshold).
func (l *Limiter) Backoff(failures int) time.Duration {
	over := failures - l.threshold
	if over < 0 {
		return 0
	}
	wait := l.base
	for i := 0; i < over && wait < l.max; i++ {
		wait *= 2
	}
	return min(wait, l.max)
}

// reserve takes one attempt for key, or tells how long to wait.
func (l *Limiter) reserve(key string) (bool, time.Duration) {
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
	if e.inflight == 0 && now.Sub(e.last) > l.forget {
		e.failures, e.blockedUntil = 0, time.Time{}
	}
	if wait := e.blockedUntil.Sub(now); wait > 0 {
		return false, wait
	}
	budget := l.threshold - e.failures
	if budget < 1 {
		budget = 1 // past the threshold: one probe at a time after each wait
	}
	if e.inflight >= budget {
		// The outcome of the attempts in flight decides; ask again shortly.
		return false, max(l.base, time.Second)
	}
	e.inflight++
	return true, 0
}

// settle ends an attempt reserved for key.
func (l *Limiter) settle(key string, failed, succeeded bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entries[key]
	if e == nil {
		return
	}
	e.inflight = max(e.inflight-1, 0)
	switch {
	case failed:
		now := l.now()
		e.failures++
		e.last = now
		if wait := l.Backoff(e.failures); wait > 0 {
			e.blockedUntil = now.Add(wait)
		}
	case succeeded:
		e.failures, e.blockedUntil = 0, time.Time{}
	}
	if e.inflight == 0 && e.failures == 0 {
		delete(l.entries, key)
	}
}

// prune drops forgotten entries; if the table is still full, it drops
// arbitrary idle ones rather than grow without bound under a flood.
func (l *Limiter) prune(now time.Time) {
	for k, e := range l.entries {
		if e.inflight == 0 && now.Sub(e.last) > l.forget && !e.blockedUntil.After(now) {
			delete(l.entries, k)
		}
	}
	for k, e := range l.entries {
		if len(l.entries) < l.maxKeys {
			break
		}
		if e.inflight == 0 {
			delete(l.entries, k)
		}
	}
}

// Limit is one key in one limiter.
type Limit struct {
	Limiter *Limiter
	Key     string
	// KeepOnSuccess keeps the key's failures when the attempt succeeds
	// (a client spraying many accounts must not clear its count by
	// logging in to one it owns).
	KeepOnSuccess bool
}

// Attempt is an attempt reserved under several limits; settle it exactly
// once with Fail, Succeed or Cancel.
type Attempt struct {
	limits []Limit
	once   sync.Once
}

// Reserve reserves one attempt under every limit, or under none. When any
// refuses, it returns nil, the index of the limit asking for the longest
// wait and that wait.
func Reserve(limits ...Limit) (*Attempt, int, time.Duration) {
	which, longest := -1, time.Duration(0)
	var held []Limit
	for i, lim := range limits {
		ok, wait := lim.Limiter.reserve(lim.Key)
		if ok {
			held = append(held, lim)
		} else if which < 0 || wait > longest {
			which, longest = i, wait
		}
	}
	if which < 0 {
		return &Attempt{limits: limits}, -1, 0
	}
	for _, lim := range held {
		lim.Limiter.settle(lim.Key, false, false)
	}
	return nil, which, longest
}

// Fail counts the attempt as a failure under every limit.
func (a *Attempt) Fail() { a.settle(true, false) }

// Succeed forgets the failures under every limit.
func (a *Attempt) Succeed() { a.settle(false, true) }

// Cancel gives the attempt back without counting it (the check could not be
// made, e.g. the request was malformed or the server busy).
func (a *Attempt) Cancel() { a.settle(false, false) }

func (a *Attempt) settle(failed, succeeded bool) {
	a.once.Do(func() {
		for _, lim := range a.limits {
			lim.Limiter.settle(lim.Key, failed, succeeded && !lim.KeepOnSuccess)
		}
	})
}
