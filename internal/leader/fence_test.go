package leader

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/proxmops/proxmops/internal/pgtest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/testwait"
)

// checkIn runs the guard's check in a transaction of its own.
func checkIn(g *Guard, db *sql.DB, ctx context.Context) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := g.Check(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// Two terms, one after the other: the first term's checks pass while it
// leads and fail once the second began, whichever replica asks; a replica
// leading no term is refused.
func TestTheCheckPassesOnlyForTheTermThatLeads(t *testing.T) {
	var seq atomic.Int64
	dbURL, db, a, first, g := guardedLead(t, &seq, 3*time.Second)

	if err := checkIn(g, db, context.Background()); !errors.Is(err, ErrNotLeading) {
		t.Fatalf("a guard with no term begun: %v, want ErrNotLeading", err)
	}
	g.Begin(first.Term)
	if err := checkIn(g, db, context.Background()); err != nil {
		t.Fatalf("the leading term: %v", err)
	}
	b := following(t, &seq, dbURL, "b", 3*time.Second, 10*time.Second)
	a.stop()
	second := waitLead(t, b, 10*time.Second)

	// a's process still believes in its term: the database says no.
	var deposed *DeposedError
	if err := checkIn(g, db, context.Background()); !errors.As(err, &deposed) || deposed.Term != first.Term {
		t.Fatalf("the ended term %d: %v, want a DeposedError", first.Term, err)
	}
	if err := checkIn(g, db, WithTerm(context.Background(), second.Term)); err != nil {
		t.Fatalf("the new term %d: %v", second.Term, err)
	}
	// Work bound to the old term stays refused after this replica leads
	// a later one.
	g.Begin(second.Term)
	if err := checkIn(g, db, WithTerm(context.Background(), first.Term)); !errors.As(err, &deposed) {
		t.Fatalf("a context bound to the ended term: %v, want a DeposedError", err)
	}
	g.End(first.Term) // not the current term: no effect
	if err := checkIn(g, db, context.Background()); err != nil {
		t.Fatalf("ending an older term ended the current one: %v", err)
	}
}

// A write held by the leading term (a Proxmox request waiting for its
// answer) keeps the next term from beginning until it is answered, even
// when the lock already changed hands; the next term's writes then pass and
// the old term's are refused unsent.
func TestTheNextTermBeginsOnlyAfterTheHeldWriteIsAnswered(t *testing.T) {
	var seq atomic.Int64
	dbURL, _, a, first, g := guardedLead(t, &seq, 3*time.Second)
	g.Begin(first.Term)
	b := following(t, &seq, dbURL, "b", 3*time.Second, 10*time.Second)

	sending, release := make(chan struct{}), make(chan struct{})
	var answered int64
	held := make(chan error, 1)
	go func() {
		held <- g.Hold(context.Background(), func(Held) error {
			close(sending)
			<-release
			answered = seq.Add(1)
			return nil
		})
	}()
	<-sending
	a.stop() // the lock is free; b takes it and records its term

	takeoverWaits(t, dbURL, b, "a's held write", 10*time.Second, "b led while a's write was held")
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	second := waitLead(t, b, 10*time.Second)
	if bt := b.allTerms(); bt[0].start < answered || second.Term != first.Term+1 {
		t.Fatalf("b's term %d began at %d, a's write was answered at %d", second.Term, bt[0].start, answered)
	}
	called := false
	err := g.Hold(context.Background(), func(Held) error { called = true; return nil })
	var deposed *DeposedError
	if !errors.As(err, &deposed) || called {
		t.Fatalf("a write of the ended term: %v (sent: %v), want a DeposedError unsent", err, called)
	}
}

// Through a Proxmox client, the guard's transport sends reads always and
// writes only while their term leads; a refused write comes back as the
// refusal, not as a request of unknown outcome.
func TestTheTransportSendsNoWriteOfAnEndedTerm(t *testing.T) {
	var seq atomic.Int64
	dbURL, _, a, first, g := guardedLead(t, &seq, 3*time.Second)

	var gets, writes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		} else {
			writes.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":null}`))
	}))
	t.Cleanup(srv.Close)
	client, err := pve.New(pve.Config{Endpoint: srv.URL, TokenID: "root@pam!t", TokenSecret: "s",
		WrapTransport: g.Transport})
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithTerm(context.Background(), first.Term)
	if err := client.Post(ctx, "/nodes/n1/qemu/100/status/start", nil, nil); err != nil {
		t.Fatalf("a write of the leading term: %v", err)
	}
	if err := client.Post(context.Background(), "/nodes/n1/qemu/100/status/start", nil, nil); !errors.Is(err, ErrNotLeading) {
		t.Fatalf("a write with no term, none begun: %v, want ErrNotLeading", err)
	}

	b := following(t, &seq, dbURL, "b", 3*time.Second, 10*time.Second)
	a.stop()
	waitLead(t, b, 10*time.Second)

	var deposed *DeposedError
	for _, call := range []func() error{
		func() error { return client.Post(ctx, "/nodes/n1/qemu/100/status/stop", nil, nil) },
		func() error { return client.Put(ctx, "/nodes/n1/qemu/100/config", nil, nil) },
		func() error { return client.Delete(ctx, "/nodes/n1/qemu/100", nil, nil) },
	} {
		err := call()
		var unknown *pve.UnknownOutcomeError
		if !errors.As(err, &deposed) || errors.As(err, &unknown) {
			t.Fatalf("a write of the ended term: %v, want the refusal", err)
		}
	}
	if err := client.Get(ctx, "/version", nil, nil); err != nil {
		t.Fatalf("a read of the ended term: %v", err)
	}
	if w, r := writes.Load(), gets.Load(); w != 1 || r != 1 {
		t.Fatalf("Proxmox got %d writes and %d reads, want the 1 write of the leading term and the read", w, r)
	}
}

// A leader whose lock session stops answering (every byte dropped) stops
// acting when its lease runs out, on its own clock: a fenced step or store
// write of its term is then refused even though the database still names
// its term (no follower took over yet), and the term's context ends.
func TestAWriteAfterItsTermsLeaseIsRefusedThoughTheDatabaseStillNamesTheTerm(t *testing.T) {
	_, db, p := linkedDB(t)
	var seq atomic.Int64
	const timeout = 3 * time.Second
	a, first := leading(t, &seq, p.URL, "a", timeout)
	g := NewGuard(db, timeout, nil) // its own connections still answer
	lctx := a.allTerms()[0].ctx
	// Work of the term that outlives the term's context, as a request
	// already under way does: only the lease stops it.
	ctx := WithTerm(context.WithoutCancel(lctx), first.Term)
	if err := g.Do(ctx, func() error { return nil }); err != nil {
		t.Fatalf("a step within the lease: %v", err)
	}

	p.Freeze()
	testwait.For(t, "a's lease to run out", 4*timeout, func() bool {
		u, _ := LeaseUntil(lctx)
		return !time.Now().Before(u)
	})
	ran := false
	err := g.Do(ctx, func() error { ran = true; return nil })
	var expired *LeaseError
	if !errors.As(err, &expired) || ran || !refusedUnsent(err) {
		t.Fatalf("a step past the lease: %v (ran: %t), want a LeaseError, unsent", err, ran)
	}
	if err := checkIn(g, db, ctx); !errors.As(err, &expired) {
		t.Fatalf("a store write past the lease: %v, want a LeaseError", err)
	}
	var term int64
	if err := db.QueryRow(`SELECT term FROM proxmops_ha_leader WHERE slot = 1`).Scan(&term); err != nil || term != first.Term {
		t.Fatalf("the database names term %d (%v), want a's %d still", term, err, first.Term)
	}
	testwait.For(t, "a's term's context to end", 4*timeout, func() bool { return lctx.Err() != nil })
	t.Logf("refused: %v", err)
}

// The lease is checked again when the request is about to be sent: a step
// whose check waited (another transaction held the leader row) while its
// term's lease ran out is refused once the check passes, though the
// database still names its term.
func TestAStepWhoseLeaseRanOutWhileItsCheckWaitedIsRefused(t *testing.T) {
	dbURL, db, p := linkedDB(t)
	var seq atomic.Int64
	a, first := leading(t, &seq, p.URL, "a", 3*time.Second) // lease 1s
	// A send window (2.5s) longer than the lease: only the lease refuses.
	g := NewGuard(db, 10*time.Second, nil)
	ctx := WithTerm(context.WithoutCancel(a.allTerms()[0].ctx), first.Term)

	admin := pgtest.Connect(t, dbURL)
	tx, err := admin.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(context.Background(), `SELECT 1 FROM proxmops_ha_leader WHERE slot = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Bool
	done := make(chan error, 1)
	go func() { done <- g.Do(ctx, func() error { ran.Store(true); return nil }) }()
	testwait.For(t, "the step's check to wait for the row", 10*time.Second, func() bool {
		var n int
		err := db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		return err == nil && n == 1
	})
	p.Freeze()
	testwait.For(t, "a's lease to run out", 10*time.Second, func() bool {
		u, _ := LeaseUntil(ctx)
		return !time.Now().Before(u)
	})
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	err = <-done
	var expired *LeaseError
	if !errors.As(err, &expired) || ran.Load() || !refusedUnsent(err) {
		t.Fatalf("the step: %v (ran: %t), want a LeaseError, unsent", err, ran.Load())
	}
}
