package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

// Roles of a replica.
const (
	RoleLeader   = "leader"
	RoleFollower = "follower"
	// RoleSingle is a daemon on SQLite: the only writer, always leading.
	RoleSingle = "single"
)

// Status is what a replica knows: its role and the current leader (nil
// while none holds the lock, e.g. during a failover).
type Status struct {
	Role   string `json:"role"`
	Self   string `json:"replica"`
	Leader *Info  `json:"leader,omitempty"`
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
// leader's session after 2T/3 idle, followers try every T/10, and the
// leader pings every T/10, each ping bounded by T/5, and stops leading at
// the first failed ping or when none succeeded for T/3 (before the server
// can end its session, so it has stopped acting when the lock goes).
type timings struct {
	serverIdle, retry, heartbeat, pingTimeout, lease time.Duration
}

func timingsFor(t time.Duration) timings {
	return timings{serverIdle: t * 2 / 3, retry: t / 10, heartbeat: t / 10, pingTimeout: t / 5, lease: t / 3}
}

// Elector campaigns for leadership; see Run.
type Elector struct {
	opts Options
	cfg  *pgx.ConnConfig
	tm   timings
	log  *slog.Logger

	mu      sync.Mutex
	leading bool
	current *Info // the leader last seen (self while leading)
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
	return &Elector{opts: o, cfg: cfg, tm: tm, log: o.Logger.With("component", "leader")}, nil
}

// Timeout is the failover bound in force.
func (e *Elector) Timeout() time.Duration { return e.opts.Timeout }

// Status is this replica's role and the leader last seen.
func (e *Elector) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := Status{Role: RoleFollower, Self: e.opts.Identity.Replica}
	if e.leading {
		st.Role = RoleLeader
	}
	if e.current != nil {
		cp := *e.current
		st.Leader = &cp
	}
	return st
}

func (e *Elector) set(leading bool, cur *Info) {
	e.mu.Lock()
	e.leading, e.current = leading, cur
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
			return e.leadWith(ctx, conn, lead)
		}
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

// leadWith publishes this replica as leader, runs lead and pings until
// leadership is in doubt or ctx ends.
func (e *Elector) leadWith(ctx context.Context, conn *pgx.Conn, lead func(ctx context.Context, self Info)) error {
	self, err := e.publish(ctx, conn)
	if err != nil {
		return fmt.Errorf("recording this replica as leader: %w", err)
	}
	e.set(true, &self)
	e.log.Info("leading", "replica", self.Replica, "term", self.Term)
	lctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		lead(lctx, self)
	}()
	err = e.heartbeat(lctx, conn)
	stop()
	<-done
	e.set(false, nil)
	if err != nil {
		e.log.Warn("stopped leading: the database did not answer; a follower takes over", "err", err)
		return err
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

// heartbeat pings until ctx ends (nil) or a ping fails or none succeeded
// within the lease (an error: leadership is in doubt).
func (e *Elector) heartbeat(ctx context.Context, conn *pgx.Conn) error {
	t := time.NewTicker(e.tm.heartbeat)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if time.Since(lastOK) >= e.tm.lease {
			return fmt.Errorf("no ping answered for %s", time.Since(lastOK).Round(time.Millisecond))
		}
		pctx, cancel := context.WithTimeout(ctx, e.tm.pingTimeout)
		_, err := conn.Exec(pctx, "SELECT 1")
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		lastOK = time.Now()
	}
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

// publish records this replica as the leader (only the lock holder writes
// the row, so creating the table cannot race).
func (e *Elector) publish(ctx context.Context, conn *pgx.Conn) (Info, error) {
	qctx, cancel := context.WithTimeout(ctx, e.opts.Timeout/3)
	defer cancel()
	if _, err := conn.Exec(qctx, createLeaderTable); err != nil {
		return Info{}, err
	}
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
