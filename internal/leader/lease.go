package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The lease bounds a term by the clock, not by the scheduling of its
// goroutines. A ping sent at s and answered proves the lock session lived
// when the server got it, at or after s; a follower can take the lock only
// after that session ended. So a term that acts only until s + lease after
// its last answered ping, and a follower that waits one lease after the
// lock answered it before its term begins, never overlap, however late the
// old leader's heartbeat runs (a starved or frozen process): the old term
// has run out on its own clock before the new one starts.
type lease struct {
	d     time.Duration
	mu    sync.Mutex
	until time.Time
}

// extend records a request sent at sent that the lock session answered.
func (l *lease) extend(sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u := sent.Add(l.d); u.After(l.until) {
		l.until = u
	}
}

// Until is when the term stops acting unless a later ping is answered.
func (l *lease) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// errLeaseRanOut is the cause of a term's context ended by its lease.
var errLeaseRanOut = errors.New("no ping of the lock session answered within the lease")

// watch ends ctx with errLeaseRanOut once the lease ran out, until ctx
// ends otherwise.
func (l *lease) watch(ctx context.Context, expire context.CancelCauseFunc) {
	for {
		d := time.Until(l.Until())
		if d <= 0 {
			expire(errLeaseRanOut)
			return
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

type leaseKey struct{}

func withLease(ctx context.Context, l *lease) context.Context {
	return context.WithValue(ctx, leaseKey{}, l)
}

// LeaseUntil is when the term that runs ctx (the context lead got) stops
// acting unless its lock session answers again; ok is false for a context
// of no term. Whatever acts for a term checks it at the moment it acts:
// the term's context ends at that time too, but its goroutines may learn
// it late.
func LeaseUntil(ctx context.Context) (until time.Time, ok bool) {
	l := leaseOf(ctx)
	if l == nil {
		return time.Time{}, false
	}
	return l.Until(), true
}

func leaseOf(ctx context.Context) *lease {
	l, _ := ctx.Value(leaseKey{}).(*lease)
	return l
}

// LeaseError refuses a write of a term whose lease ran out: its lock
// session did not answer in time, so another replica may lead.
type LeaseError struct {
	Term  int64
	Until time.Time
}

func (e *LeaseError) Error() string {
	return fmt.Sprintf("the lease of term %d of this replica ran out %s ago (its database session did not answer in time): another replica may lead, so nothing more is written or sent to Proxmox",
		e.Term, time.Since(e.Until).Round(time.Millisecond))
}

// WriteRefused marks the refusal as a request never sent.
func (e *LeaseError) WriteRefused() bool { return true }

// checkLease fails when ctx's term lease ran out by now.
func checkLease(ctx context.Context, term int64) error {
	return leaseOf(ctx).check(term)
}

// check fails when the lease (of term) ran out by now; a nil lease (work
// outside a term's context) has none to run out.
func (l *lease) check(term int64) error {
	if l == nil {
		return nil
	}
	if u := l.Until(); !time.Now().Before(u) {
		return &LeaseError{Term: term, Until: u}
	}
	return nil
}
