package leader

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// Fencing (docs/ha.md#fencing). The elector's own deadline stops a leader
// that is cut off, but a process frozen for a while (SIGSTOP, a VM paused by
// its hypervisor, a long stall) resumes with every goroutine ready at once:
// what it was about to write would race its own heartbeat. So the leader's
// writes do not trust its memory; each one asks the database, in the same
// transaction, whether its term still leads:
//
//   - it takes a share lock on the leader row, provided the row still holds
//     its term (lockTerm). A new term begins with an UPDATE of that row,
//     which PostgreSQL makes wait until every such lock is released, and
//     after which no lock of the old term can be taken;
//   - a store write (state, history) runs in that transaction: it commits
//     before the next term begins, or fails;
//   - a Proxmox write request is sent and answered while the lock is held
//     (Hold), so the next term's first read of the cluster sees its effect.
//
// A hold whose process stops answering is ended by PostgreSQL itself after
// idle (idle_in_transaction_session_timeout, set on the hold), and a hold is
// only used to send within sendWindow of its start, which is shorter: a
// request is never sent on a hold PostgreSQL may already have ended.

// ErrNotLeading refuses a write of a replica that does not lead.
var ErrNotLeading = errors.New("this replica does not lead: only the leader writes")

// DeposedError refuses a write of a term that has ended: another replica
// leads (or is taking over).
type DeposedError struct{ Term int64 }

func (e *DeposedError) Error() string {
	return fmt.Sprintf("term %d of this replica has ended: another replica leads, so nothing more is written or sent to Proxmox", e.Term)
}

// WriteRefused marks the refusal as a request never sent (package pve
// reports it as it is, not as an unknown outcome).
func (e *DeposedError) WriteRefused() bool { return true }

type notLeading struct{}

func (notLeading) Error() string      { return ErrNotLeading.Error() }
func (notLeading) Is(err error) bool  { return err == ErrNotLeading }
func (notLeading) WriteRefused() bool { return true }

// lockTerm share-locks the leader row while it holds term $1 (no row: the
// term ended) and has PostgreSQL end the transaction if it idles $2 ms.
const lockTerm = `SELECT set_config('idle_in_transaction_session_timeout', $2, true)
	FROM proxmops_ha_leader WHERE slot = 1 AND term = $1 FOR SHARE`

// Guard fences the writes of this replica's leadership; see Check and
// Hold. It is shared by every controller of the replica.
type Guard struct {
	db               *sql.DB
	idle, sendWindow time.Duration
	log              *slog.Logger
	term             atomic.Int64 // the term this replica leads, 0 when none
}

// NewGuard fences this replica's writes, holding Proxmox writes on
// connections of db, for a failover timeout t: a hold idle t/2 is ended by the server (before the
// leader's lock session, ended after 2t/3), and requests are sent within
// t/4 of their hold's start.
func NewGuard(db *sql.DB, t time.Duration, log *slog.Logger) *Guard {
	if t <= 0 {
		t = DefaultTimeout
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Guard{db: db, idle: t / 2, sendWindow: t / 4, log: log.With("component", "leader")}
}

// OpenGuard is NewGuard on a pool of its own to the database at url, so
// the connections a Proxmox write holds while it waits for its answer are
// never missed by the store and the API. Close releases it.
func OpenGuard(url string, t time.Duration, log *slog.Logger) (*Guard, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("leader: database URL: %w", err)
	}
	// One per running action is plenty (reconcile.concurrency per cluster).
	db.SetMaxOpenConns(64)
	db.SetMaxIdleConns(4)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return NewGuard(db, t, log), nil
}

// Close closes the guard's pool.
func (g *Guard) Close() error { return g.db.Close() }

// Begin makes term the one this replica leads; End(term) ends it.
func (g *Guard) Begin(term int64) { g.term.Store(term) }

// End ends term (a later term begun meanwhile stays).
func (g *Guard) End(term int64) { g.term.CompareAndSwap(term, 0) }

type termKey struct{}

// WithTerm binds ctx to term: writes made under ctx are checked against it,
// not against whatever term this replica leads when they happen, so work a
// term started never passes under a later term of the same replica.
func WithTerm(ctx context.Context, term int64) context.Context {
	return context.WithValue(ctx, termKey{}, term)
}

func (g *Guard) termFor(ctx context.Context) (int64, error) {
	if t, ok := ctx.Value(termKey{}).(int64); ok {
		return t, nil
	}
	if t := g.term.Load(); t != 0 {
		return t, nil
	}
	return 0, notLeading{}
}

// Check share-locks the leader row at ctx's term for the rest of tx, or
// fails with a *DeposedError when that term ended: a store write made in tx
// after Check commits before the next term begins, or not at all.
func (g *Guard) Check(ctx context.Context, tx *sql.Tx) error {
	term, err := g.termFor(ctx)
	if err != nil {
		return err
	}
	if err := checkLease(ctx, term); err != nil {
		return err
	}
	if err := g.lock(ctx, tx, term); err != nil {
		return err
	}
	return checkLease(ctx, term)
}

func (g *Guard) lock(ctx context.Context, tx *sql.Tx, term int64) error {
	var prev string
	err := tx.QueryRowContext(ctx, lockTerm, term, strconv.FormatInt(g.idle.Milliseconds(), 10)).Scan(&prev)
	if errors.Is(err, sql.ErrNoRows) {
		return &DeposedError{Term: term}
	}
	if err != nil {
		return fmt.Errorf("checking that this replica still leads: %w", err)
	}
	return nil
}

// Hold runs send while ctx's term provably leads: in a transaction holding
// the leader row at that term (Check), kept alive while send runs. The
// term's end is a *DeposedError, send not called; a check that cannot run
// (the request cancelled first, the database unreachable or too slow to
// answer before the send window closes) is a refusal, send not called. The
// waits are bounded: the check by the send window and ctx; the hold,
// once taken, by send, which gets the Held (see Held.Context) and
// reports its outcome, which Hold returns.
func (g *Guard) Hold(ctx context.Context, send func(Held) error) error {
	term, err := g.termFor(ctx)
	if err != nil {
		return err
	}
	begun := time.Now() // before the lock is asked for: the server's idle clock starts later
	if err := checkLease(ctx, term); err != nil {
		return err
	}
	sendBy := begun.Add(g.sendWindow)
	tx, end, err := g.take(ctx, term, sendBy)
	if err != nil {
		return err
	}
	defer end()
	lost, stop := g.keepAlive(tx)
	// What send does outlives ctx's cancellation by drain at most, or until
	// the database is lost: then its hold ends (a step that ignores its
	// cancellation, a Proxmox that does not answer), so a leader stepping
	// down never holds the next term back longer than that.
	returned := make(chan struct{})
	unwatch := context.AfterFunc(ctx, func() {
		t := time.NewTimer(g.idle)
		defer t.Stop()
		select {
		case <-returned:
			return
		case <-t.C:
		case <-lost:
		}
		end()
	})
	serr := send(Held{SendBy: sendBy, drain: g.idle, lost: lost, term: term, lease: leaseOf(ctx)})
	close(returned)
	unwatch()
	alive := stop()
	var cerr error
	if alive {
		// A commit unanswered for idle/2 ends the transaction: the
		// database is cut off, and PostgreSQL ends the hold on its side.
		t := time.AfterFunc(g.idle/2, end)
		cerr = tx.Commit()
		t.Stop()
	} else {
		cerr = errors.New("a keep-alive of the hold failed")
	}
	if cerr != nil {
		// The request (or SSH step) ran while this replica stalled, lost the
		// database or gave up waiting for it: another may have led
		// meanwhile. Nothing can un-send it; the next leader reads the
		// cluster before it acts.
		g.log.Error("a write (a Proxmox request or a provisioning step) ended after its hold on the leadership ended; another replica may have led meanwhile",
			"term", term, "err", cerr)
	}
	return serr
}

// take begins the hold's transaction and checks term in it, waiting no
// longer than sendBy nor past ctx's end (nothing would be sent then). The
// transaction itself outlives ctx: it is ended by end, which the caller
// calls once what it sent returned, so a cancelled request keeps its hold
// until then.
func (g *Guard) take(ctx context.Context, term int64, sendBy time.Time) (*sql.Tx, context.CancelFunc, error) {
	hctx, end := context.WithCancel(context.WithoutCancel(ctx))
	wctx, cancelWait := context.WithDeadline(ctx, sendBy)
	defer cancelWait()
	waiting := context.AfterFunc(wctx, end)
	tx, err := g.db.BeginTx(hctx, nil)
	if err == nil {
		err = g.lock(hctx, tx, term)
	}
	if !waiting() {
		// The request was cancelled or the window closed during the wait:
		// the transaction is ended, whatever the check said.
		err = unsent{waitEnded(ctx, g.sendWindow, err)}
	}
	if err != nil {
		end()
		if tx != nil {
			_ = tx.Rollback()
		}
		var deposed *DeposedError
		var refused unsent
		if !errors.As(err, &deposed) && !errors.As(err, &refused) {
			err = unsent{fmt.Errorf("not sent: checking that this replica still leads: %w", err)}
		}
		return nil, nil, err
	}
	return tx, end, nil
}

// waitEnded says why the check was given up.
func waitEnded(ctx context.Context, window time.Duration, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("not sent: the request ended before PostgreSQL confirmed that this replica leads: %w", cerr)
	}
	if err == nil {
		err = context.DeadlineExceeded
	}
	return fmt.Errorf("not sent: PostgreSQL did not confirm within %s that this replica leads (%v)", window, err)
}

// unsent is a write refused before it was sent because its check could not
// run (package pve reports it as it is: not a request of unknown outcome,
// not an unreachable Proxmox, not retried).
type unsent struct{ err error }

func (u unsent) Error() string      { return u.err.Error() }
func (u unsent) Unwrap() error      { return u.err }
func (u unsent) WriteRefused() bool { return true }

// Held is what send gets from Hold while its term provably leads.
type Held struct {
	// SendBy is the time by which the request must have been sent: after
	// it, PostgreSQL may have ended the hold of a stalled process.
	SendBy time.Time
	drain  time.Duration
	lost   <-chan struct{}
	term   int64
	lease  *lease // the term's, if any
}

// sendable refuses a request about to be sent too late: past SendBy, or
// once its term's lease ran out (LeaseUntil; it may have been renewed
// since the check began).
func (h Held) sendable() error {
	if late := time.Since(h.SendBy); late > 0 {
		return errSendWindow{late: late}
	}
	return h.lease.check(h.term)
}

// Context is ctx for what is sent under the hold, except that ctx's
// cancellation takes effect only once the hold is lost or drain (half the
// failover timeout) has passed since: a leader that steps down cancels its
// requests, and a request already with Proxmox keeps its term held until
// it is answered, so the next term begins after its effect, yet the step
// down stays bounded. ctx's deadline holds as is. The returned cancel
// releases the context.
func (h Held) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if d, ok := ctx.Deadline(); ok {
		var cancelBy context.CancelFunc
		sctx, cancelBy = context.WithDeadline(sctx, d)
		inner := cancel
		cancel = func() { cancelBy(); inner() }
	}
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(h.drain)
		defer t.Stop()
		select {
		case <-t.C:
		case <-h.lost:
		case <-sctx.Done():
		}
		cancel()
	})
	return sctx, func() { stop(); cancel() }
}

// keepAlive pings tx until the returned stop is called; lost is closed at
// the first failed ping, and stop reports whether every ping succeeded.
func (g *Guard) keepAlive(tx *sql.Tx) (lost <-chan struct{}, stop func() bool) {
	done := make(chan struct{})
	failed := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(g.idle / 4)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), g.idle/2)
			_, err := tx.ExecContext(ctx, "SELECT 1")
			cancel()
			if err != nil {
				close(failed)
				return
			}
		}
	}()
	return failed, func() bool {
		close(done)
		wg.Wait()
		select {
		case <-failed:
			return false
		default:
			return true
		}
	}
}

// Do runs step while ctx's term provably leads, as Hold runs a Proxmox
// request: for writes that are no HTTP request (a provisioning command over
// SSH). step starts within the send window of its check and the next term
// begins after it returned; a cancelled ctx is step's to obey (the hold
// lasts until step returns).
func (g *Guard) Do(ctx context.Context, step func() error) error {
	return g.Hold(ctx, func(h Held) error {
		if err := h.sendable(); err != nil {
			return err
		}
		return step()
	})
}

// errSendWindow refuses a request whose hold is too old to send on.
type errSendWindow struct{ late time.Duration }

func (e errSendWindow) Error() string {
	return fmt.Sprintf("not sent: the check that this replica leads is %s too old (the process stalled)", e.late.Round(time.Millisecond))
}
func (errSendWindow) WriteRefused() bool { return true }

// Transport sends every request but GET and HEAD under a Hold of the
// request context's term (WithTerm, else the term this replica leads).
func (g *Guard) Transport(next http.RoundTripper) http.RoundTripper {
	return &fenceTransport{g: g, next: next}
}

type fenceTransport struct {
	g    *Guard
	next http.RoundTripper
}

func (t *fenceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		return t.next.RoundTrip(req)
	}
	var resp *http.Response
	sent := false
	err := t.g.Hold(req.Context(), func(h Held) error {
		if err := h.sendable(); err != nil {
			return err
		}
		sent = true
		sctx, release := h.Context(req.Context())
		var err error
		resp, err = t.next.RoundTrip(req.WithContext(sctx))
		if err != nil {
			release()
			return err
		}
		// The answer's body is read under sctx after the hold ended.
		resp.Body = &releaseOnClose{ReadCloser: resp.Body, release: release}
		return nil
	})
	if !sent && req.Body != nil {
		req.Body.Close() // a RoundTripper closes the body, even unsent
	}
	return resp, err
}

// releaseOnClose releases a request's context when its answer is closed.
type releaseOnClose struct {
	io.ReadCloser
	release context.CancelFunc
}

func (r *releaseOnClose) Close() error {
	err := r.ReadCloser.Close()
	r.release()
	return err
}
