package leader

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/pgtest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/pvesim"
)

// simWrites is a simulated cluster with VM 100 on pve1, reached over HTTP
// through a front that notes, for each write request that reaches it, the
// leader term in force in the database when it arrived, and that can hold
// write requests before the simulator handles them (a slow Proxmox).
type simWrites struct {
	sim  *pvesim.Server
	url  string
	db   *sql.DB // a direct connection: the term in force
	gate atomic.Pointer[chan struct{}]
	in   chan struct{} // one value per write request that reached the front

	mu    sync.Mutex
	terms []int64
}

func newSimWrites(t *testing.T, db *sql.DB) *simWrites {
	t.Helper()
	sim := pvesim.New(pvesim.Options{Nodes: 1, TokenID: "root@pam!t", TokenSecret: "s", TaskSpeed: 0, StatusInterval: -1})
	if err := sim.AddGuest(pvesim.GuestSpec{VMID: 100, Node: "pve1", Config: map[string]string{"name": "web", "memory": "512"}}); err != nil {
		t.Fatal(err)
	}
	s := &simWrites{sim: sim, db: db, in: make(chan struct{}, 1024)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			var term sql.NullInt64
			_ = db.QueryRowContext(context.Background(), `SELECT term FROM proxmops_ha_leader WHERE slot = 1`).Scan(&term)
			s.mu.Lock()
			s.terms = append(s.terms, term.Int64)
			s.mu.Unlock()
			s.in <- struct{}{}
			if g := s.gate.Load(); g != nil {
				<-*g
			}
		}
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL + "/api2/json"
	return s
}

// hold makes write requests wait at the front until the returned release.
func (s *simWrites) hold() (release func()) {
	g := make(chan struct{})
	s.gate.Store(&g)
	var once sync.Once
	return func() { once.Do(func() { s.gate.Store(nil); close(g) }) }
}

// writes is how many write requests reached the front, and how many of
// them under a term after term.
func (s *simWrites) writes(term int64) (n, late int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.terms {
		if x > term {
			late++
		}
	}
	return len(s.terms), late
}

func (s *simWrites) client(t *testing.T, g *Guard, timeout time.Duration) *pve.Client {
	t.Helper()
	c, err := pve.New(pve.Config{Endpoint: s.url, TokenID: "root@pam!t", TokenSecret: "s",
		Timeout: timeout, TaskPollMin: 5 * time.Millisecond, WrapTransport: g.Transport})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func describe(c *pve.Client, ctx context.Context, text string) error {
	p := &pve.Params{}
	p.Set("description", text)
	return c.Put(ctx, "/nodes/pve1/qemu/100/config", p, nil)
}

// refusedUnsent reports whether err says the write was never sent: a
// refusal, neither a request of unknown outcome nor an unreachable Proxmox.
func refusedUnsent(err error) bool {
	var refused interface{ WriteRefused() bool }
	var unknown *pve.UnknownOutcomeError
	var unreachable *pve.UnreachableError
	return errors.As(err, &refused) && refused.WriteRefused() && !errors.As(err, &unknown) && !errors.As(err, &unreachable)
}

// A write whose check cannot run (the request was cancelled first, the
// database refuses connections or does not answer) is refused and
// reported as never sent: not as a request of unknown outcome, not as an
// unreachable Proxmox after retries, and not after waiting for the caller's
// cancellation or the client's timeout.
func TestAWriteWhoseCheckCannotRunIsRefusedUnsent(t *testing.T) {
	dbURL := testDB(t)
	db := pgtest.OpenDB(t, dbURL)
	var seq atomic.Int64
	_, first := leading(t, &seq, dbURL, "a", 3*time.Second)
	sim := newSimWrites(t, db)

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusing := strings.Replace(dbURL, hostOf(t, dbURL), closed.Addr().String(), 1)
	closed.Close()
	frozen := pgtest.NewLink(t, dbURL)
	frozen.Freeze()

	for _, tc := range []struct {
		name  string
		dbURL string
		ctx   func() context.Context
	}{
		{"the request was cancelled before its check", dbURL, func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}},
		{"the database refuses connections", refusing, context.Background},
		{"the database does not answer", frozen.URL, context.Background},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGuard(pgtest.OpenDB(t, tc.dbURL), 3*time.Second, nil)
			// The client's own timeout is far above the guard's bounds:
			// a write that waits for it fails the test.
			client := sim.client(t, g, 30*time.Second)
			before, _ := sim.writes(first.Term)
			done := make(chan error, 1)
			go func() { done <- describe(client, WithTerm(tc.ctx(), first.Term), "unsent") }()
			select {
			case err := <-done:
				if !refusedUnsent(err) {
					t.Fatalf("the write: %v (%T), want a refusal of a write never sent", err, errors.Unwrap(err))
				}
				t.Logf("refused: %v", err)
			case <-time.After(20 * time.Second):
				t.Fatal("the write waited for the client's timeout instead of being refused within the guard's bounds")
			}
			if n, _ := sim.writes(first.Term); n != before {
				t.Fatalf("Proxmox got %d writes, want none", n-before)
			}
			if gi, _ := sim.sim.Guest(100); gi.Config["description"] != "" {
				t.Fatalf("the refused write changed the guest: %q", gi.Config["description"])
			}
		})
	}
}

func hostOf(t *testing.T, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// The leader steps down while one of its writes is being handled by
// Proxmox: the write's request is cancelled (a leader that stops leading
// cancels its running actions) and the lock is free. The write still
// holds its term until Proxmox answered it, so the next term begins only
// after the write's effect, and its first read of the cluster sees it.
func TestACancelledWriteHoldsItsTermUntilProxmoxAnswers(t *testing.T) {
	var seq atomic.Int64
	const timeout = 20 * time.Second // the answer is awaited up to timeout/2 after the cancellation
	dbURL, db, a, first, g := guardedLead(t, &seq, timeout)
	sim := newSimWrites(t, db)
	client := sim.client(t, g, 60*time.Second)
	b := following(t, &seq, dbURL, "b", timeout, 30*time.Second)

	release := sim.hold()
	defer release()
	ctx, cancel := context.WithCancel(WithTerm(context.Background(), first.Term))
	done := make(chan error, 1)
	go func() { done <- describe(client, ctx, "answered") }()
	<-sim.in // Proxmox has the request and has not answered yet
	cancel()
	a.stop()

	takeoverWaits(t, dbURL, b, "a's write", 30*time.Second,
		"b's term began while Proxmox was still handling a's write, which was cancelled: b reads a cluster a's term is still changing")
	released := seq.Add(1)
	release()
	if err := <-done; err != nil {
		t.Fatalf("the cancelled write answered meanwhile: %v, want its answer", err)
	}
	second := waitLead(t, b, 30*time.Second)
	if gi, _ := sim.sim.Guest(100); gi.Config["description"] != "answered" {
		t.Fatalf("b leads and the guest's description is %q: a's write had not taken effect", gi.Config["description"])
	}
	if bt := b.allTerms(); bt[0].start < released || second.Term != first.Term+1 {
		t.Fatalf("b's term %d began at %d, a's write was released at %d", second.Term, bt[0].start, released)
	}
}

// A leader cut off from the database (every byte dropped, nothing reset)
// while it writes: it steps down within its lease; each write it tried
// meanwhile either was answered while its term led or is refused unsent
// (neither a request of unknown outcome nor a wait for the client's
// timeout); Proxmox gets no write of it once the follower's term is in
// force, and its term ends before the follower's begins.
func TestACutOffLeaderStepsDownAndRefusesItsWritesUnsent(t *testing.T) {
	dbURL, db, p := linkedDB(t)
	var seq atomic.Int64
	const timeout = 3 * time.Second
	sim := newSimWrites(t, db)
	g := NewGuard(pgtest.OpenDB(t, p.URL), timeout, nil)
	client := sim.client(t, g, 60*time.Second)

	var mu sync.Mutex
	var answered, cutAnswered int
	var refused, other []error
	var cut atomic.Bool
	var between sync.RWMutex // the test cuts between two writes
	write := func(lctx context.Context, self Info) {
		ctx := WithTerm(lctx, self.Term)
		for i := 0; lctx.Err() == nil; i++ {
			between.RLock() // until the write is counted, on the side of the cut it was made
			err := describe(client, ctx, "w"+strconv.Itoa(i))
			mu.Lock()
			switch {
			case err == nil && cut.Load():
				cutAnswered++
			case err == nil:
				answered++
			case refusedUnsent(err):
				refused = append(refused, err)
			default:
				other = append(other, err)
			}
			mu.Unlock()
			between.RUnlock()
			if err != nil {
				sleep(lctx, 50*time.Millisecond)
			}
		}
	}
	a := startCampaignDoing(t, newElector(t, p.URL, "a", timeout, nil), &seq, write)
	first := waitLead(t, a, 10*time.Second)
	b := following(t, &seq, dbURL, "b", timeout, 10*time.Second)
	testwait.For(t, "a to write", 10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return answered >= 3 })

	between.Lock()
	cut.Store(true)
	p.Freeze()
	between.Unlock()
	second := waitLead(t, b, 4*timeout)
	testwait.For(t, "a to step down", 4*timeout, func() bool { at := a.allTerms(); return at[0].end != 0 })
	checkNoOverlap(t, append(a.allTerms(), b.allTerms()...))
	if second.Replica != "b" {
		t.Fatalf("after the cut: %+v", second)
	}
	if _, late := sim.writes(first.Term); late != 0 {
		t.Fatalf("Proxmox got %d writes of a after b's term began", late)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(other) != 0 {
		t.Fatalf("writes of the cut-off leader failed otherwise than refused unsent: %v", other)
	}
	if len(refused) == 0 || cutAnswered != 0 {
		t.Fatalf("of the writes of the cut-off leader, %d were refused and %d answered, want every one refused", len(refused), cutAnswered)
	}
	t.Logf("cut-off leader: %d writes answered before the cut, %d refused unsent after it (first: %v)", answered, len(refused), refused[0])
}

// A step under the check that does not end when its request is cancelled
// (a stuck SSH session, a Proxmox that never answers) keeps the next term
// waiting only for the drain: then its hold ends, the next term begins,
// and the step's own outcome is still what the caller gets.
func TestAStepIgnoringItsCancellationLosesItsHoldAfterTheDrain(t *testing.T) {
	var seq atomic.Int64
	const timeout = 2 * time.Second // the drain is timeout/2
	dbURL, _, a, first, g := guardedLead(t, &seq, timeout)
	b := following(t, &seq, dbURL, "b", timeout, 10*time.Second)

	ctx, cancel := context.WithCancel(WithTerm(context.Background(), first.Term))
	running, stuck := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- g.Do(ctx, func() error {
			close(running)
			<-stuck // deaf to ctx
			return nil
		})
	}()
	<-running
	cancel()
	a.stop()
	second := waitLead(t, b, 10*timeout)
	select {
	case err := <-done:
		t.Fatalf("the step returned (%v) though it was still stuck", err)
	default:
	}
	// A failed takeover attempt may use up a term number, never repeat one.
	if second.Term <= first.Term {
		t.Fatalf("b's term %d after a's %d", second.Term, first.Term)
	}
	checkNoOverlap(t, append(a.allTerms(), b.allTerms()...))
	close(stuck)
	if err := <-done; err != nil {
		t.Fatalf("the step's outcome: %v, want its own (nil)", err)
	}
	if err := g.Do(ctx, func() error { t.Fatal("a step of the ended term ran"); return nil }); !refusedUnsent(err) {
		t.Fatalf("a step after the term: %v, want a refusal", err)
	}
}
