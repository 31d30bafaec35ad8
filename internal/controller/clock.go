package controller

import (
	"sync"
	"time"
)

// Clock is the time source of the loop, injected so tests are
// deterministic.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer firing once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is a stoppable one-shot timer.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

type realClock struct{}

func (realClock) Now() time.Time                 { return time.Now() }
func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }

// FakeClock is a manual clock for tests: time moves only with Advance.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	// armed is signalled whenever a timer is created, so a test can wait
	// for the loop to arm its next one.
	armed chan time.Duration
}

// NewFakeClock starts at start.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start, armed: make(chan time.Duration, 64)}
}

// Now is the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer implements Clock.
func (c *FakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	t := &fakeTimer{clock: c, at: c.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.fired = true
		t.c <- c.now
	} else {
		c.timers = append(c.timers, t)
	}
	c.mu.Unlock()
	select {
	case c.armed <- d:
	default:
	}
	return t
}

// Armed delivers the duration of every timer created (best effort, buffered).
func (c *FakeClock) Armed() <-chan time.Duration { return c.armed }

// Advance moves time forward by d, firing the timers that are due.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.fired && !t.at.After(c.now) {
			t.fired = true
			t.c <- c.now
			continue
		}
		if !t.fired {
			kept = append(kept, t)
		}
	}
	c.timers = kept
}

type fakeTimer struct {
	clock *FakeClock
	at    time.Time
	c     chan time.Time
	fired bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	if t.fired {
		return false
	}
	t.fired = true
	return true
}
