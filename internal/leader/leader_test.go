package leader

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/pgtest"
	"github.com/proxmops/proxmops/internal/testwait"
)

// term is one leadership as the test saw it: when lead started and ended,
// in the order of one shared sequence, and on the clock: when it started,
// when lead saw its context end, and its lease (ctx).
type term struct {
	replica    string
	info       Info
	start, end int64
	startAt    time.Time
	endAt      time.Time // zero while lead has not seen its end
	ctx        context.Context
}

// until is when the term stopped acting on its own clock: when lead saw its
// context end, or earlier when its lease ran out first (a starved
// goroutine learns of it late, but every act checks the lease).
func (x term) until() time.Time {
	u, ok := LeaseUntil(x.ctx)
	if !ok {
		panic("a term's context without a lease")
	}
	if !x.endAt.IsZero() && x.endAt.Before(u) {
		return x.endAt
	}
	return u
}

// campaign runs an elector in the background and records its terms.
type campaign struct {
	t      *testing.T
	e      *Elector
	cancel context.CancelFunc
	done   chan struct{}
	seq    *atomic.Int64

	mu    sync.Mutex
	terms []term
	began chan Info
}

func startCampaign(t *testing.T, e *Elector, seq *atomic.Int64) *campaign {
	return startCampaignDoing(t, e, seq, nil)
}

// startCampaignDoing is startCampaign whose terms run work (when not nil)
// until it returns; a term ends once work returned and leadership ended.
func startCampaignDoing(t *testing.T, e *Elector, seq *atomic.Int64, work func(lctx context.Context, self Info)) *campaign {
	ctx, cancel := context.WithCancel(context.Background())
	c := &campaign{t: t, e: e, cancel: cancel, done: make(chan struct{}), seq: seq, began: make(chan Info, 16)}
	go func() {
		defer close(c.done)
		_ = e.Run(ctx, func(lctx context.Context, self Info) {
			c.mu.Lock()
			i := len(c.terms)
			c.terms = append(c.terms, term{replica: self.Replica, info: self, start: seq.Add(1), startAt: time.Now(), ctx: lctx})
			c.mu.Unlock()
			c.began <- self
			if work != nil {
				work(lctx, self)
			}
			<-lctx.Done()
			c.mu.Lock()
			c.terms[i].end, c.terms[i].endAt = seq.Add(1), time.Now()
			c.mu.Unlock()
		})
	}()
	t.Cleanup(c.stop)
	return c
}

func (c *campaign) stop() {
	c.cancel()
	<-c.done
}

func (c *campaign) allTerms() []term {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]term(nil), c.terms...)
}

func newElector(t *testing.T, dbURL, replica string, timeout time.Duration, connect func(context.Context, *pgx.ConnConfig) (*pgx.Conn, error)) *Elector {
	t.Helper()
	e, err := New(Options{URL: dbURL, Identity: Identity{Replica: replica, Host: "test", PID: 1, URL: "http://" + replica}, Timeout: timeout, Connect: connect})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// waitLead waits for c's next term.
func waitLead(t *testing.T, c *campaign, within time.Duration) Info {
	t.Helper()
	select {
	case in := <-c.began:
		return in
	case <-time.After(within):
		t.Fatalf("%s did not lead within %s", c.e.opts.Identity.Replica, within)
		return Info{}
	}
}

// leading starts replica's campaign over dbURL and waits for its first term.
func leading(t *testing.T, seq *atomic.Int64, dbURL, replica string, timeout time.Duration) (*campaign, Info) {
	t.Helper()
	c := startCampaign(t, newElector(t, dbURL, replica, timeout, nil), seq)
	return c, waitLead(t, c, 10*time.Second)
}

// guardedLead is a fresh database in which replica a leads (first is its
// term), with a guard over the database; both with timeout.
func guardedLead(t *testing.T, seq *atomic.Int64, timeout time.Duration) (dbURL string, db *sql.DB, a *campaign, first Info, g *Guard) {
	t.Helper()
	dbURL = testDB(t)
	db = pgtest.OpenDB(t, dbURL)
	a, first = leading(t, seq, dbURL, "a", timeout)
	return dbURL, db, a, first, NewGuard(db, timeout, nil)
}

// following starts replica's campaign over dbURL and waits until it sees
// a leader.
func following(t *testing.T, seq *atomic.Int64, dbURL, replica string, timeout, within time.Duration) *campaign {
	t.Helper()
	c := startCampaign(t, newElector(t, dbURL, replica, timeout, nil), seq)
	testwait.For(t, replica+" to follow", within, func() bool { return c.e.Status().Leader != nil })
	return c
}

// takeoverWaits waits, within, until b's takeover waits for a lock (held
// by what) or b leads, and fails with failure when b leads.
func takeoverWaits(t *testing.T, dbURL string, b *campaign, what string, within time.Duration, failure string) {
	t.Helper()
	admin := pgtest.Connect(t, dbURL)
	testwait.For(t, "b to lead or to wait for "+what, within, func() bool {
		return len(b.allTerms()) > 0 || electionWaitsForLock(admin, "b")
	})
	if len(b.allTerms()) > 0 {
		t.Fatal(failure)
	}
}

// electionWaitsForLock reports whether replica's election session waits
// for a lock (its takeover waits for a held write).
func electionWaitsForLock(admin *pgx.Conn, replica string) bool {
	var n int
	err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE application_name = 'proxmops leader election ('||$1||')' AND wait_event_type = 'Lock'`, replica).Scan(&n)
	return err == nil && n == 1
}

func TestOneLeaderAndTheFollowerSeesIt(t *testing.T) {
	dbURL := testDB(t)
	var seq atomic.Int64
	a, first := leading(t, &seq, dbURL, "a", 3*time.Second)
	b := startCampaign(t, newElector(t, dbURL, "b", 3*time.Second, nil), &seq)
	testwait.For(t, "b to see a as leader", 10*time.Second, func() bool {
		st := b.e.Status()
		return st.Leader != nil && st.Leader.Replica == "a"
	})
	st := b.e.Status()
	if st.Role != api.ReplicaFollower || st.Leader.Term != first.Term || !st.Leader.Since.Equal(first.Since) || st.Leader.URL != "http://a" {
		t.Fatalf("follower status %+v, leader term %+v", st, first)
	}
	if st := a.e.Status(); st.Role != api.ReplicaLeader || st.Leader == nil || st.Leader.Replica != "a" {
		t.Fatalf("leader status %+v", st)
	}
	// b keeps trying and never leads while a holds the lock.
	tried := b.e.refused.Load()
	testwait.For(t, "b to be refused the lock three more times", 10*time.Second, func() bool { return b.e.refused.Load() >= tried+3 })
	if n := len(b.allTerms()); n != 0 {
		t.Fatalf("b led %d times while a held the lock", n)
	}
}

func TestACleanStopHandsOverAtOnceWithAHigherTerm(t *testing.T) {
	dbURL := testDB(t)
	var seq atomic.Int64
	a, first := leading(t, &seq, dbURL, "a", 3*time.Second)
	b := following(t, &seq, dbURL, "b", 3*time.Second, 10*time.Second)
	a.stop()
	second := waitLead(t, b, 10*time.Second)
	if second.Term != first.Term+1 || second.Replica != "b" {
		t.Fatalf("after a's stop: %+v, before: %+v", second, first)
	}
	at, bt := a.allTerms(), b.allTerms()
	if at[0].end == 0 || at[0].end > bt[0].start {
		t.Fatalf("a's term ended at %d, b's began at %d: overlap", at[0].end, bt[0].start)
	}
	// a recorded its end, so b's term need not wait for a's lease.
	var ended int64
	if err := pgtest.Connect(t, dbURL).QueryRow(context.Background(), `SELECT term FROM proxmops_ha_ended`).Scan(&ended); err != nil || ended != first.Term {
		t.Fatalf("the recorded end: term %d (%v), want a's %d", ended, err, first.Term)
	}
	if st := a.e.Status(); st.Role != api.ReplicaFollower || st.Leader != nil {
		t.Fatalf("a after stopping: %+v", st)
	}
}

// The server ends the leader's session (a restart, an administrator, a
// broken socket): the leader stops leading and one of the replicas leads
// again, never two at once, on the clock of each, however late the old
// leader learns of its loss (its pings hang, as a starved heartbeat runs
// late); and no fenced step of the old term runs once the new one began.
func TestALostSessionEndsTheTermBeforeAnotherBegins(t *testing.T) {
	for _, tc := range []struct {
		name string
		late bool
	}{
		{"the leader learns of it at its next ping", false},
		{"the leader's pings hang", true},
	} {
		t.Run(tc.name, func(t *testing.T) { lostSession(t, tc.late) })
	}
}

func lostSession(t *testing.T, late bool) {
	dbURL := testDB(t)
	g := NewGuard(pgtest.OpenDB(t, dbURL), 3*time.Second, nil)
	p := pgtest.NewLink(t, dbURL)
	var seq atomic.Int64
	var mu sync.Mutex
	var steps []time.Time // when a step of a's ran, as it ran
	work := func(lctx context.Context, self Info) {
		for ctx := WithTerm(lctx, self.Term); ctx.Err() == nil; {
			_ = g.Do(ctx, func() error {
				mu.Lock()
				steps = append(steps, time.Now())
				mu.Unlock()
				return nil
			})
			sleep(ctx, 5*time.Millisecond)
		}
	}
	a := startCampaignDoing(t, newElector(t, p.URL, "a", 3*time.Second, nil), &seq, work)
	waitLead(t, a, 10*time.Second)
	b := following(t, &seq, dbURL, "b", 3*time.Second, 10*time.Second)
	testwait.For(t, "a's fenced steps", 10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(steps) >= 3 })
	if late {
		p.Freeze()
	}
	admin := pgtest.Connect(t, dbURL)
	if _, err := admin.Exec(context.Background(),
		"SELECT pg_terminate_backend(backend_pid) FROM proxmops_ha_leader"); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "a new term", 10*time.Second, func() bool { return len(a.allTerms())+len(b.allTerms()) >= 2 })
	terms := append(a.allTerms(), b.allTerms()...)
	checkNoOverlap(t, terms)
	next := terms[len(terms)-1]
	for _, x := range terms {
		if x.startAt.After(next.startAt) {
			next = x
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, at := range steps {
		if !at.Before(next.startAt) {
			t.Fatalf("a step of a's term ran %s after %s's term %d began", at.Sub(next.startAt), next.replica, next.info.Term)
		}
	}
}

// A leader cut off from the database (packets dropped, no reset) stops
// leading on its own before the server ends its session and a follower
// takes the lock, and the follower leads within the failover timeout.
func TestACutOffLeaderStopsBeforeTheFollowerTakesOver(t *testing.T) {
	dbURL := testDB(t)
	p := pgtest.NewLink(t, dbURL)
	var seq atomic.Int64
	timeout := 3 * time.Second
	a, _ := leading(t, &seq, p.URL, "a", timeout)
	b := following(t, &seq, dbURL, "b", timeout, 10*time.Second)

	cut := time.Now()
	p.Freeze()
	second := waitLead(t, b, 4*timeout)
	took := time.Since(cut)
	if second.Replica != "b" {
		t.Fatalf("after the cut: %+v", second)
	}
	checkNoOverlap(t, append(a.allTerms(), b.allTerms()...))
	t.Logf("failover after a cut-off leader: %s (timeout %s)", took.Round(10*time.Millisecond), timeout)
}

// checkNoOverlap fails when a term began before another one, begun
// earlier, had stopped acting on its own clock.
func checkNoOverlap(t *testing.T, terms []term) {
	t.Helper()
	for i, x := range terms {
		for j, y := range terms {
			if i != j && x.startAt.Before(y.startAt) && y.startAt.Before(x.until()) {
				t.Fatalf("terms overlap: %s's term %d (started %s, acting until %s, lead saw its end: %t) and %s's term %d, started %s before that",
					x.replica, x.info.Term, x.startAt.Format(time.StampMicro), x.until().Format(time.StampMicro), !x.endAt.IsZero(),
					y.replica, y.info.Term, x.until().Sub(y.startAt))
			}
		}
	}
}
