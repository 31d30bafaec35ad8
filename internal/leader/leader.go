package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/proxmops/proxmops/internal/api"
)

// DefaultTimeout bounds the time from the leader's death or cut-off to a
// follower leading (config server.ha.failoverTimeout).
const DefaultTimeout = 15 * time.Second

// lockKey is the advisory lock of the leader, one per database. Both
// halves stay below 2^31 so pg_locks' classid and objid read back as is.
const lockKey int64 = 0x70786d6f_00000017

// Identity says who a replica is; the leader's is shown in /readyz,
// /metrics and the UI, and its URL is where followers forward requests.
type Identity struct {
	Replica string `json:"replica"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	// URL is where the other replicas reach this one's HTTP API.
	URL string `json:"url,omitempty"`
}

// DefaultIdentity is this process on this host, named replica.
func DefaultIdentity(replica, url string) Identity {
	host, _ := os.Hostname()
	if replica == "" {
		replica = host
	}
	return Identity{Replica: replica, Host: host, PID: os.Getpid(), URL: url}
}

// Info is a leader: who, since when and its term, which grows by one at
// every acquisition (a fencing token for whoever wants to check it).
type Info struct {
	Identity
	Since time.Time `json:"since"`
	Term  int64     `json:"term"`
}

// Status is what a replica knows: its role and the current leader (nil
// while none holds the lock, e.g. during a failover). The API serves it
// as api.ReplicaStatus (Document).
type Status struct {
	Role   api.ReplicaRole `json:"role"`
	Self   string          `json:"replica"`
	Leader *Info           `json:"leader,omitempty"`
}

// Document is the status as GET /api/v1/replicas answers it.
func (s Status) Document() api.ReplicaStatus {
	doc := api.ReplicaStatus{Role: s.Role, Replica: s.Self}
	if l := s.Leader; l != nil {
		doc.Leader = &api.LeaderInfo{Replica: l.Replica, Host: l.Host, PID: l.PID, URL: l.URL, Since: l.Since, Term: l.Term}
	}
	return doc
}

// Options configure New. URL is required.
type Options struct {
	// URL is the PostgreSQL connection URL (server.database).
	URL      string
	Identity Identity
	// Timeout is the failover bound (default DefaultTimeout); the
	// intervals below derive from it (timings).
	Timeout time.Duration
	Logger  *slog.Logger
	// Connect opens the lock connection (default pgx.ConnectConfig); tests
	// route it through a proxy they can cut.
	Connect func(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error)
}

// timings derive from the failover timeout T: the server ends the
// leader's session after T/2 idle, followers try every T/10, and the
// leader pings every T/10, each ping bounded by T/5. A term may act until
// its lease (T/3) after the sending of the last ping its session answered,
// and a follower that takes the lock from a leader that did not stop
// cleanly waits one lease before its term begins: the old term has run out
// by then on its own clock, however late its goroutines run. Worst case
// from a cut-off to a new term: T/2 + T/10 + a connection + T/3 < T.
type timings struct {
	serverIdle, retry, heartbeat, pingTimeout, lease time.Duration
}

func timingsFor(t time.Duration) timings {
	return timings{serverIdle: t / 2, retry: t / 10, heartbeat: t / 10, pingTimeout: t / 5, lease: t / 3}
}

// Elector campaigns for leadership; see Run.
type Elector struct {
	opts Options
	cfg  *pgx.ConnConfig
	tm   timings
	log  *slog.Logger

	mu      sync.Mutex
	leading bool
	current *Info         // the leader last seen (self while leading)
	changed chan struct{} // closed and replaced by each set

	ended int64 // the last term this replica led whose lead returned

	refused atomic.Int64 // lock attempts refused: another replica led
}

// New checks the options; Run campaigns.
func New(o Options) (*Elector, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Timeout < time.Second {
		return nil, fmt.Errorf("leader: failover timeout %s is below 1s", o.Timeout)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Connect == nil {
		o.Connect = pgx.ConnectConfig
	}
	if o.Identity.Replica == "" {
		o.Identity = DefaultIdentity("", o.Identity.URL)
	}
	cfg, err := pgx.ParseConfig(o.URL)
	if err != nil {
		return nil, fmt.Errorf("leader: database URL: %w", err)
	}
	tm := timingsFor(o.Timeout)
	// The server ends this session when the leader stops pinging (cut off),
	// which releases the lock; the leader pings every heartbeat.
	cfg.RuntimeParams["idle_session_timeout"] = strconv.FormatInt(tm.serverIdle.Milliseconds(), 10)
	cfg.RuntimeParams["application_name"] = "proxmops leader election (" + o.Identity.Replica + ")"
	cfg.ConnectTimeout = tm.pingTimeout
	return &Elector{opts: o, cfg: cfg, tm: tm, log: o.Logger.With("component", "leader"), changed: make(chan struct{})}, nil
}

// Timeout is the failover bound in force.
func (e *Elector) Timeout() time.Duration { return e.opts.Timeout }

// Status is this replica's role and the leader last seen.
func (e *Elector) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := Status{Role: api.ReplicaFollower, Self: e.opts.Identity.Replica}
	if e.leading {
		st.Role = api.ReplicaLeader
	}
	if e.current != nil {
		cp := *e.current
		st.Leader = &cp
	}
	return st
}

// Changed is closed at the next change of Status.
func (e *Elector) Changed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changed
}

func (e *Elector) set(leading bool, cur *Info) {
	e.mu.Lock()
	e.leading, e.current = leading, cur
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
}

// Run campaigns until ctx ends. Each time this replica wins, lead runs
// with a context that ends the moment leadership is in doubt (a failed
// ping, no answer within the lease); Run waits for lead to return before
// it releases the lock and campaigns again, so this process never leads
// twice at once. It returns nil when ctx ends.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context, self Info)) error {
	var lastErr string
	for ctx.Err() == nil {
		err := e.session(ctx, lead)
		if ctx.Err() != nil {
			break
		}
		if err != nil && err.Error() != lastErr {
			e.log.Warn("leader election: the database connection failed; retrying", "err", err, "retry", e.tm.retry.String())
		}
		if err != nil {
			lastErr = err.Error()
		} else {
			lastErr = ""
		}
		e.set(false, nil)
		sleep(ctx, e.tm.retry)
	}
	e.set(false, nil)
	return nil
}

// session is one connection's life: try the lock until it is taken (then
// lead) or the connection fails.
func (e *Elector) session(ctx context.Context, lead func(ctx context.Context, self Info)) error {
	cctx, cancel := context.WithTimeout(ctx, e.tm.pingTimeout)
	conn, err := e.opts.Connect(cctx, e.cfg.Copy())
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		// Closing ends the session, which releases the lock if it is held.
		cctx, cancel := context.WithTimeout(context.Background(), e.tm.pingTimeout)
		defer cancel()
		conn.Close(cctx)
	}()
	for ctx.Err() == nil {
		got, err := e.tryLock(ctx, conn)
		if err != nil {
			return err
		}
		if got {
			return e.leadWith(ctx, conn, lead, time.Now())
		}
		e.refused.Add(1)
		cur, err := e.readLeader(ctx, conn)
		if err != nil {
			return err
		}
		e.set(false, cur)
		sleep(ctx, e.tm.retry)
	}
	return nil
}

func (e *Elector) tryLock(ctx context.Context, conn *pgx.Conn) (bool, error) {
	qctx, cancel := context.WithTimeout(ctx, e.tm.pingTimeout)
	defer cancel()
	var got bool
	err := conn.QueryRow(qctx, "SELECT pg_try_advisory_lock($1)", lockKey).Scan(&got)
	return got, err
}

// leadWith waits for the previous term's lease when it may still run,
// publishes this replica as leader, runs lead and pings until leadership
// is in doubt or ctx ends. acquired is when the lock was taken.
func (e *Elector) leadWith(ctx context.Context, conn *pgx.Conn, lead func(ctx context.Context, self Info), acquired time.Time) error {
	if err := e.awaitPrevious(ctx, conn, acquired); err != nil {
		return fmt.Errorf("waiting for the previous leader's lease: %w", err)
	}
	l := &lease{d: e.tm.lease}
	self, err := e.publish(ctx, conn)
	if err != nil {
		return fmt.Errorf("recording this replica as leader: %w", err)
	}
	// The publish may have waited for the old term's writes: the lease
	// starts at a ping sent now.
	if err := e.ping(ctx, conn, l); err != nil {
		// This term never acted: the next leader need not wait for it.
		_ = e.markEnded(conn, self.Term)
		return err
	}
	e.set(true, &self)
	e.log.Info("leading", "replica", self.Replica, "term", self.Term)
	lctx, stop := context.WithCancelCause(withLease(ctx, l))
	go l.watch(lctx, stop)
	done := make(chan struct{})
	go func() {
		defer close(done)
		lead(lctx, self)
		stop(errLeadReturned)
	}()
	err = e.heartbeat(lctx, conn, l)
	stop(nil)
	<-done
	e.ended = self.Term
	e.set(false, nil)
	// lead returned: if this session still holds the lock (a heartbeat
	// that ran late), the next leader need not wait for this term's lease.
	merr := e.markEnded(conn, self.Term)
	if err != nil {
		e.log.Warn("stopped leading: the database did not answer; a follower takes over", "err", err)
		return err
	}
	if merr != nil {
		e.log.Warn("recording the end of this term; the next leader waits for its lease", "term", self.Term, "err", merr)
	}
	if ctx.Err() == nil {
		return errors.New("lead returned")
	}
	// A clean stop: let a follower in at once instead of at the timeout.
	uctx, cancel := context.WithTimeout(context.Background(), e.tm.pingTimeout)
	defer cancel()
	_, _ = conn.Exec(uctx, "SELECT pg_advisory_unlock($1)", lockKey)
	e.log.Info("stopped leading", "replica", self.Replica, "term", self.Term)
	return nil
}

var errLeadReturned = errors.New("lead returned")

// heartbeat pings until ctx ends (nil) or a ping fails or the lease ran
// out (an error: leadership is in doubt).
func (e *Elector) heartbeat(ctx context.Context, conn *pgx.Conn, l *lease) error {
	t := time.NewTicker(e.tm.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return leaseEnd(ctx)
		case <-t.C:
		}
		if u := l.Until(); !time.Now().Before(u) {
			return fmt.Errorf("%w (%s ago)", errLeaseRanOut, time.Since(u).Round(time.Millisecond))
		}
		if err := e.ping(ctx, conn, l); err != nil {
			if ctx.Err() != nil {
				return leaseEnd(ctx)
			}
			return err
		}
	}
}

// leaseEnd is the error of a term's ended context: the lease's, or nil.
func leaseEnd(ctx context.Context) error {
	if cause := context.Cause(ctx); errors.Is(cause, errLeaseRanOut) {
		return cause
	}
	return nil
}

// ping sends a request on the lock session; its answer extends l.
func (e *Elector) ping(ctx context.Context, conn *pgx.Conn, l *lease) error {
	sent := time.Now()
	pctx, cancel := context.WithTimeout(ctx, e.tm.pingTimeout)
	defer cancel()
	if _, err := conn.Exec(pctx, "SELECT 1"); err != nil {
		return err
	}
	l.extend(sent)
	return nil
}

// awaitPrevious returns once the previous term can no longer act: at once
// when there was none, when this replica led it, or when its leader
// recorded its end (a clean stop); else one lease after the lock was
// taken (acquired), by which time that term's lease ran out.
func (e *Elector) awaitPrevious(ctx context.Context, conn *pgx.Conn, acquired time.Time) error {
	qctx, cancel := context.WithTimeout(ctx, e.tm.pingTimeout)
	defer cancel()
	// Only the lock holder creates the tables, so this cannot race.
	for _, ddl := range []string{createLeaderTable, createEndedTable} {
		if _, err := conn.Exec(qctx, ddl); err != nil {
			return err
		}
	}
	var term, ended int64
	err := conn.QueryRow(qctx, `SELECT l.term, coalesce(x.term, 0) FROM proxmops_ha_leader l
		LEFT JOIN proxmops_ha_ended x ON x.slot = 1 WHERE l.slot = 1`).Scan(&term, &ended)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return err
	case term == ended || term == e.ended:
		return nil
	}
	e.log.Info("waiting for the previous leader's lease to run out", "term", term, "lease", e.tm.lease.String())
	sleep(ctx, time.Until(acquired.Add(e.tm.lease)))
	return ctx.Err()
}

// markEnded records that term's lead returned, while this session still
// holds the lock (so no later term exists).
func (e *Elector) markEnded(conn *pgx.Conn, term int64) error {
	qctx, cancel := context.WithTimeout(context.Background(), e.tm.pingTimeout)
	defer cancel()
	_, err := conn.Exec(qctx, `INSERT INTO proxmops_ha_ended (slot, term) VALUES (1, $1)
		ON CONFLICT (slot) DO UPDATE SET term = EXCLUDED.term`, term)
	return err
}

const createLeaderTable = `CREATE TABLE IF NOT EXISTS proxmops_ha_leader (
	slot integer PRIMARY KEY CHECK (slot = 1),
	term bigint NOT NULL,
	replica text NOT NULL,
	host text NOT NULL,
	pid integer NOT NULL,
	url text NOT NULL,
	backend_pid integer NOT NULL,
	since timestamptz NOT NULL)`

// createEndedTable holds the last term whose leader recorded that it
// stopped acting (a clean stop): its successor need not wait its lease.
const createEndedTable = `CREATE TABLE IF NOT EXISTS proxmops_ha_ended (
	slot integer PRIMARY KEY CHECK (slot = 1),
	term bigint NOT NULL)`

// publish records this replica as the leader (only the lock holder writes
// the row); it waits for the old term's checks (fence.go).
func (e *Elector) publish(ctx context.Context, conn *pgx.Conn) (Info, error) {
	qctx, cancel := context.WithTimeout(ctx, e.opts.Timeout/3)
	defer cancel()
	id := e.opts.Identity
	self := Info{Identity: id}
	err := conn.QueryRow(qctx, `INSERT INTO proxmops_ha_leader AS l VALUES (1, 1, $1, $2, $3, $4, pg_backend_pid(), now())
		ON CONFLICT (slot) DO UPDATE SET term = l.term + 1, replica = EXCLUDED.replica, host = EXCLUDED.host,
			pid = EXCLUDED.pid, url = EXCLUDED.url, backend_pid = EXCLUDED.backend_pid, since = EXCLUDED.since
		RETURNING term, since`, id.Replica, id.Host, id.PID, id.URL).Scan(&self.Term, &self.Since)
	return self, err
}

// readLeader is the recorded leader if its session still holds the lock,
// else nil (none yet, or it died and the lock is free for the taking).
func (e *Elector) readLeader(ctx context.Context, conn *pgx.Conn) (*Info, error) {
	qctx, cancel := context.WithTimeout(ctx, e.tm.pingTimeout)
	defer cancel()
	var in Info
	err := conn.QueryRow(qctx, `SELECT l.replica, l.host, l.pid, l.url, l.since, l.term FROM proxmops_ha_leader l
		WHERE l.slot = 1 AND EXISTS (SELECT 1 FROM pg_locks k WHERE k.locktype = 'advisory' AND k.granted
			AND k.pid = l.backend_pid AND k.classid::bigint = $1 AND k.objid::bigint = $2 AND k.objsubid = 1)`,
		lockKey>>32, lockKey&0xffffffff).Scan(&in.Replica, &in.Host, &in.PID, &in.URL, &in.Since, &in.Term)
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows), errors.As(err, &pgErr) && pgErr.Code == "42P01": // undefined_table: never led
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &in, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
