package daemon

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/leader"
	"github.com/proxmops/proxmops/internal/pgtest"
	"github.com/proxmops/proxmops/pvesim"
)

// The fencing tests (docs/ha.md#fencing): a leader that lost its term
// without knowing it yet must not send one more write to Proxmox nor write
// one more row to the store. Each replica reaches the simulator through a
// proxy of its own that notes, for every write request, the leader term in
// force in the database when it arrived; a trigger notes the same for every
// row written to the controller's tables, with the writer's replica.

// writeLog notes one replica's Proxmox write requests with the term in
// force when each arrived.
type writeLog struct {
	db *sql.DB
	mu sync.Mutex
	w  []termWrite
}

type termWrite struct {
	what string
	term int64 // 0: none recorded yet
}

func (l *writeLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			var term sql.NullInt64
			_ = l.db.QueryRowContext(r.Context(), `SELECT term FROM proxmops_ha_leader WHERE slot = 1`).Scan(&term)
			l.mu.Lock()
			l.w = append(l.w, termWrite{what: r.Method + " " + r.URL.Path, term: term.Int64})
			l.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// split counts the writes sent in term and those sent while a later term
// was in force.
func (l *writeLog) split(term int64) (in int, late []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.w {
		switch {
		case w.term == term:
			in++
		case w.term > term:
			late = append(late, fmt.Sprintf("%s under term %d", w.what, w.term))
		}
	}
	return in, late
}

// noteWrites has PostgreSQL note every row written to the controller's
// tables (state, history) with the writer's application_name and the
// leader's term in force when it wrote.
const noteWrites = `
CREATE TABLE ha_test_writes (app text NOT NULL, tbl text NOT NULL, term bigint);
CREATE FUNCTION ha_test_note() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE t bigint;
BEGIN
	IF to_regclass('proxmops_ha_leader') IS NOT NULL THEN
		EXECUTE 'SELECT term FROM proxmops_ha_leader WHERE slot = 1' INTO t;
	END IF;
	INSERT INTO ha_test_writes VALUES (current_setting('application_name'), TG_TABLE_NAME, t);
	RETURN NULL;
END $$;
CREATE TRIGGER ha_test_note AFTER INSERT OR UPDATE OR DELETE ON state FOR EACH ROW EXECUTE FUNCTION ha_test_note();
CREATE TRIGGER ha_test_note AFTER INSERT OR UPDATE OR DELETE ON history FOR EACH ROW EXECUTE FUNCTION ha_test_note();`

// fenceRig is two replicas, a and b, on a test database and a simulator.
type fenceRig struct {
	t              *testing.T
	r              *chaosRun
	db             *sql.DB
	dbURL, token   string
	creates        *createLog
	a, b           *haReplica
	logA, logB     *writeLog
	termA          int64
	failover       time.Duration
	aDB            string // a's database URL (through linkA when set)
	linkA          *pgtest.Link
	startedCreates int
}

func newFenceRig(t *testing.T, failover time.Duration, proxyA bool) *fenceRig {
	f := &fenceRig{t: t, failover: failover, dbURL: pgtest.Database(t)}
	sim := startChaosSim(t, pvesim.Options{TaskSpeed: 0.3, StatusInterval: -1})
	db := pgtest.OpenDB(t, f.dbURL)
	f.db = db
	f.creates = &createLog{posts: map[string]int{}}
	f.logA, f.logB = &writeLog{db: db}, &writeLog{db: db}
	pa := httptest.NewServer(f.logA.wrap(f.creates.wrap(sim)))
	t.Cleanup(pa.Close)
	pb := httptest.NewServer(f.logB.wrap(f.creates.wrap(sim)))
	t.Cleanup(pb.Close)

	f.r = &chaosRun{t: t, sim: sim, dir: t.TempDir(), cores: map[int]string{}}
	f.r.initHARepo()
	keyFile := filepath.Join(f.r.dir, "proxmops.key")
	f.token = haToken(t, f.dbURL, keyFile) // creates the tables
	if _, err := db.Exec(noteWrites); err != nil {
		t.Fatal(err)
	}
	// The store's connections carry the replica's name (the election and
	// fan-out connections name themselves).
	f.aDB = f.dbURL
	if proxyA {
		f.linkA = pgtest.NewLink(t, f.dbURL)
		f.aDB = f.linkA.URL
	}
	f.a = f.r.haReplica("a", f.aDB+"&application_name=replica-a", keyFile, pa.URL+"/api2/json", failover.String())
	f.b = f.r.haReplica("b", f.dbURL+"&application_name=replica-b", keyFile, pb.URL+"/api2/json", failover.String())
	return f
}

// start runs a (the leader) then b, converges the first commit, and pushes
// a second one, returning once a has asked for its first new guest.
func (f *fenceRig) start() {
	t, r := f.t, f.r
	r.startReplica(f.a)
	waitRole(t, f.a, f.token, api.ReplicaLeader, 60*time.Second)
	r.startReplica(f.b)
	waitRole(t, f.b, f.token, api.ReplicaFollower, 60*time.Second)
	r.haWait("the first commit converged", 120*time.Second, func() bool { return r.converged() && haSynced(f.a, f.token, len(r.cores)) }, f.a, f.b)
	var st leader.Status
	if !haGet(f.a, f.token, "/api/v1/replicas", &st) || st.Leader == nil || st.Leader.Replica != "a" {
		t.Fatalf("a's status: %+v", st)
	}
	f.termA = st.Leader.Term
	before := len(f.creates.counts())
	r.addVMs(haVMs, haVMs)
	r.haWait("the leader to start creating", 60*time.Second, func() bool { return len(f.creates.counts()) > before }, f.a)
}

// check converges the new commit on b and checks that a sent and wrote
// nothing once b's term was in force, that it did before (so the test
// observes something), and that each guest was created once.
func (f *fenceRig) check() (sent, wrote int) {
	t, r := f.t, f.r
	r.haWait("the new commit converged on the follower", 120*time.Second, func() bool { return r.converged() && haSynced(f.b, f.token, len(r.cores)) }, f.a, f.b)
	waitRole(t, f.a, f.token, api.ReplicaFollower, 60*time.Second)

	sent, lateSent := f.logA.split(f.termA)
	if len(lateSent) != 0 {
		t.Errorf("a sent %d Proxmox writes after its term %d ended: %v", len(lateSent), f.termA, lateSent)
	}
	rows, err := f.db.Query(`SELECT tbl, term FROM ha_test_writes WHERE app = 'replica-a' AND term IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var late []string
	for rows.Next() {
		var tbl string
		var term int64
		if err := rows.Scan(&tbl, &term); err != nil {
			t.Fatal(err)
		}
		switch {
		case term == f.termA:
			wrote++
		case term > f.termA:
			late = append(late, fmt.Sprintf("%s under term %d", tbl, term))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(late) != 0 {
		t.Errorf("a wrote %d rows to the store after its term %d ended: %v", len(late), f.termA, late)
	}
	if sent == 0 || wrote == 0 {
		t.Fatalf("a sent %d Proxmox writes and wrote %d rows in its term: the test observes nothing", sent, wrote)
	}
	r.wantOneCreateEach(f.creates)
	if b, _ := os.ReadFile(f.a.logFile); !strings.Contains(string(b), "leadership ended") {
		t.Errorf("the old leader never said it stopped acting: %s", tail(f.a.logFile))
	}
	return sent, wrote
}

// The leader freezes (SIGSTOP: a stalled VM, a long pause) while it creates
// the guests of a new commit, long enough for the follower to take over,
// then runs again with every goroutine ready at once, its heartbeat racing
// the writes it was about to make.
func TestHAAFrozenLeaderResumesAndWritesNothingAfterItsTerm(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("inside the child")
	}
	f := newFenceRig(t, 3*time.Second, false)
	f.start()
	if err := f.a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			f.a.cmd.Process.Signal(syscall.SIGCONT)
		}
	})
	waitRole(t, f.b, f.token, api.ReplicaLeader, 60*time.Second)
	tookOver := time.Since(stopped)
	if err := f.a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	sent, wrote := f.check()
	t.Logf("frozen leader: the follower led %.1fs after the SIGSTOP; a sent %d Proxmox writes and wrote %d rows in its term %d, none after it",
		tookOver.Seconds(), sent, wrote, f.termA)
}

// The leader's lock session ends on the server (an administrator, a
// restart of the database's pooler) while the leader's election
// connection hangs, so its heartbeat only learns of it at the ping's
// timeout; its other connections, to the store and to Proxmox, work. The
// follower takes the lock at once: for a while the old leader believes it
// leads and the follower does lead. The database's check refuses every
// write of the old term from the follower's takeover on.
func TestHALeaderUnawareOfItsLostLockWritesNothingAfterItsTerm(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("inside the child")
	}
	f := newFenceRig(t, 10*time.Second, true)
	f.start()
	var pid, port int
	if err := f.db.QueryRow(`SELECT l.backend_pid, a.client_port FROM proxmops_ha_leader l
		JOIN pg_stat_activity a ON a.pid = l.backend_pid`).Scan(&pid, &port); err != nil {
		t.Fatal(err)
	}
	if !f.linkA.FreezeConn(port) {
		t.Fatalf("a's election connection (port %d) does not go through its proxy", port)
	}
	cut := time.Now()
	if _, err := f.db.Exec(`SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	waitRole(t, f.b, f.token, api.ReplicaLeader, 60*time.Second)
	tookOver := time.Since(cut)
	sent, wrote := f.check()
	t.Logf("unaware leader: the follower led %.1fs after a's lock session ended; a sent %d Proxmox writes and wrote %d rows in its term %d, none after it",
		tookOver.Seconds(), sent, wrote, f.termA)
}
