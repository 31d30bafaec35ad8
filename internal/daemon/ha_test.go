package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/leader"
	"github.com/proxmops/proxmops/internal/pgtest"
	"github.com/proxmops/proxmops/internal/store"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// The HA test (docs/ha.md): two daemons, as processes (the chaos suite's
// child, which runs Run as `proxmops serve` does), share a test PostgreSQL
// and reconcile a simulated cluster reached through a proxy that logs every
// create. One leads; the test SIGKILLs it while it creates the guests of a
// new commit, and the follower takes over, re-reads the cluster and
// converges that commit: each guest exists once, and each was created by
// exactly one POST. A browser on the follower saw the leader's progress
// through PostgreSQL before the kill.

const haVMs = 4 // per commit

// createLog records the guest creations the simulator was asked for.
type createLog struct {
	mu    sync.Mutex
	posts map[string]int // vmid -> create POSTs that reached the simulator
	// With hold set, a create of a new VMID once holdAt VMIDs were created
	// waits until hold is closed, and is dropped if its client went away
	// meanwhile: a leader killed then is surely mid-apply, whatever the
	// machine's speed.
	hold    chan struct{}
	holdAt  int
	waiting int // creates held now
}

// held is the number of creates waiting now.
func (l *createLog) held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiting
}

// holdFrom lets creates through until n VMIDs were created, then holds
// the others until release.
func (l *createLog) holdFrom(n int) (release func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hold, l.holdAt = make(chan struct{}), n
	return sync.OnceFunc(func() { close(l.hold) })
}

// wrap serves sim, noting each create (POST /nodes/{node}/qemu) by vmid.
func (l *createLog) wrap(sim *pvesim.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if r.Method == http.MethodPost && len(parts) == 5 && parts[2] == "nodes" && parts[4] == "qemu" {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			form, _ := url.ParseQuery(string(body))
			vmid := form.Get("vmid")
			if vmid == "" { // a JSON body
				var m map[string]any
				if json.Unmarshal(body, &m) == nil {
					vmid = fmt.Sprint(m["vmid"])
				}
			}
			l.mu.Lock()
			hold := l.hold
			if hold != nil && (l.posts[vmid] > 0 || len(l.posts) < l.holdAt) {
				hold = nil
			}
			if hold != nil {
				l.waiting++
			}
			l.mu.Unlock()
			if hold != nil {
				var gone bool
				select {
				case <-hold:
				case <-r.Context().Done():
					gone = true // its sender died: it never reaches Proxmox
				}
				l.mu.Lock()
				l.waiting--
				l.mu.Unlock()
				if gone {
					return
				}
			}
			l.mu.Lock()
			l.posts[vmid]++
			l.mu.Unlock()
		}
		sim.ServeHTTP(w, r)
	})
}

func (l *createLog) counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for k, v := range l.posts {
		out[k] = v
	}
	return out
}

// startHASim serves the failover tests' simulator behind a proxy that counts
// creates (endpoint is the proxy's API URL), with the chaos suite's
// repository helpers on a fresh directory holding the HA repository.
func startHASim(t *testing.T) (r *chaosRun, creates *createLog, endpoint string) {
	t.Helper()
	sim := startChaosSim(t, pvesim.Options{TaskSpeed: 0.3, StatusInterval: -1})
	creates = &createLog{posts: map[string]int{}}
	proxy := httptest.NewServer(creates.wrap(sim))
	t.Cleanup(proxy.Close)
	r = &chaosRun{t: t, sim: sim, dir: t.TempDir(), cores: map[int]string{}}
	r.initHARepo()
	return r, creates, proxy.URL + "/api2/json"
}

// haReplica is one daemon of the pair.
type haReplica struct {
	name, dir, cfgFile, logFile, apiURL string
	port                                heldPort // its API socket, kept across its starts
	cmd                                 *exec.Cmd
	exited                              chan struct{}
}

func TestHAFailoverConvergesANewCommitOnTheFollowerWithNoActionRunTwice(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("inside the child")
	}
	dbURL := pgtest.Database(t)
	r, creates, endpoint := startHASim(t)
	keyFile := filepath.Join(r.dir, "proxmops.key")
	token := haToken(t, dbURL, keyFile)
	adminToken := haAdminToken(t, dbURL, keyFile)

	a := r.haReplica("a", dbURL, keyFile, endpoint, "15s")
	b := r.haReplica("b", dbURL, keyFile, endpoint, "15s")
	r.startPair(a, b, token)

	// A browser on the follower, listening before the new commit.
	seen := watchEvents(t, b, token)
	// The follower's listening connection to PostgreSQL drops: what the
	// leader sends meanwhile is lost to it, so once it listens again it
	// asks the leader for its list, which its browser gets whole.
	snapshots := seen.count(api.SSESnapshot)
	dropListener(t, dbURL, "b")
	r.haWait("the follower's browser to get the leader's list after listening again", 60*time.Second,
		func() bool { return seen.count(api.SSESnapshot) > snapshots }, a, b)
	// A write on the follower reaches the leader (the follower's own
	// controller would refuse it: only the leader acts).
	if code, body := haPost(b, adminToken, "/api/v1/sync"); code != http.StatusAccepted {
		t.Fatalf("POST /api/v1/sync on the follower: %d %s", code, body)
	}

	// A new commit: more guests to create. Kill the leader once it has
	// asked for the first of them and the follower's browser saw its
	// progress, while the others are still to come.
	before := len(creates.counts())
	release := creates.holdFrom(before + 1)
	defer release()
	r.addVMs(haVMs, haVMs)
	r.haWait("the leader to start creating, seen on the follower", 60*time.Second, func() bool {
		return len(creates.counts()) > before && seen.progress() > 0
	}, a)
	kill := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	// The creates the killed leader left waiting end with it; only then
	// may the others through.
	testwait.For(t, "the killed leader's held creates to end", 30*time.Second, func() bool { return creates.held() == 0 })
	release()
	progressBefore := seen.progress()
	createdAtKill, lockedAtKill := len(creates.counts()), r.anyLocked()
	if createdAtKill == len(r.cores) && !lockedAtKill {
		t.Fatalf("the leader had created every guest and none was locked at the kill: not mid-apply")
	}

	waitRole(t, b, token, api.ReplicaLeader, 60*time.Second)
	tookOver := time.Since(kill)
	r.haWait("the new commit converged on the follower", 120*time.Second, func() bool { return r.converged() && haSynced(b, token, len(r.cores)) }, b)
	converged := time.Since(kill)

	r.wantOneCreateEach(creates)
	if extra := len(creates.counts()) - len(r.cores); extra != 0 {
		t.Errorf("%d creates of undeclared VMs: %v", extra, creates.counts())
	}
	interrupted := haInterrupted(t, dbURL, keyFile, r.cores)
	if interrupted == 0 {
		t.Errorf("no action recorded as interrupted: the new leader did not read what the killed one left in flight")
	}
	t.Logf("failover: the follower led %.1fs after the SIGKILL and converged the new commit %.1fs after it (failover timeout %s); at the kill %d of %d guests were asked for, one locked: %v; %d actions recorded interrupted; %d progress events of the leader seen on the follower",
		tookOver.Seconds(), converged.Seconds(), leader.DefaultTimeout, createdAtKill, len(r.cores), lockedAtKill, interrupted, progressBefore)
}

// dropListener ends a replica's fan-out listening session on the server,
// once the replica has one: on a busy machine the follower may still be
// connecting its listener when the test gets here.
func dropListener(t *testing.T, dbURL, replica string) {
	t.Helper()
	ctx := context.Background()
	conn := pgtest.Connect(t, dbURL)
	app := "proxmops fan-out listener (" + replica + ")"
	deadline := time.Now().Add(60 * time.Second)
	for {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name = $1`, app).Scan(&n); err != nil || n > 1 {
			t.Fatalf("ending %s's listening session: %d ended, %v", replica, n, err)
		}
		if n == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has had no listening session for 60s", replica)
		}
		time.Sleep(20 * time.Millisecond) // polling the server for the condition
	}
}

// haInterrupted counts the history entries that record an action
// interrupted by the kill.
func haInterrupted(t *testing.T, dbURL, keyFile string, vms map[int]string) int {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{URL: dbURL, KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := 0
	for vmid := range vms {
		h, err := st.History(context.Background(), "VirtualMachine", fmt.Sprintf("chaos-%d", vmid-500), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range h {
			if e.Event == api.EventFailed && strings.Contains(e.Message, "interrupted") {
				n++
			}
		}
	}
	return n
}

func (r *chaosRun) initHARepo() {
	r.repo = gittest.Init(r.t, filepath.Join(r.dir, "repo"))
	r.addVMs(0, haVMs)
}

// addVMs commits VMs first..first+n-1.
func (r *chaosRun) addVMs(first, n int) {
	files := map[string]string{}
	for i := first; i < first+n; i++ {
		r.cores[500+i] = "1"
		files[fmt.Sprintf("vms/chaos-%d.yaml", i)] = chaosManifest(i, "1")
	}
	r.repo.Commit(fmt.Sprintf("VMs %d to %d", first, first+n-1), files)
}

// haToken makes the database (and its key file) and a viewer API token in
// it, before any daemon starts.
func haToken(t *testing.T, dbURL, keyFile string) string {
	return haAPIToken(t, dbURL, keyFile, "ha", api.RoleViewer)
}

// haAdminToken is an admin API token (for writes) in the database.
func haAdminToken(t *testing.T, dbURL, keyFile string) string {
	return haAPIToken(t, dbURL, keyFile, "ha-admin", api.RoleAdmin)
}

func haAPIToken(t *testing.T, dbURL, keyFile, name string, role api.Role) string {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{URL: dbURL, KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tok, hash := auth.NewToken(auth.PrefixAPI)
	if _, err := st.CreateAPIToken(context.Background(), name, role, hash, 0); err != nil {
		t.Fatal(err)
	}
	return tok
}

func (r *chaosRun) haReplica(name, dbURL, keyFile, endpoint, failover string) *haReplica {
	dir := filepath.Join(r.dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		r.t.Fatal(err)
	}
	port := holdPort(r.t)
	addr := port.addr
	rep := &haReplica{name: name, dir: dir, port: port, cfgFile: filepath.Join(dir, "proxmops.yaml"), logFile: filepath.Join(dir, "daemon.log"), apiURL: "http://" + addr}
	r.writeDaemonConfig(rep.cfgFile, endpoint, filepath.Join(r.dir, "token"), 2, addr, fmt.Sprintf(`  database: %s
  keyFile: %s
ha:
  replica: %s
  advertiseURL: %s
  failoverTimeout: %s
`, dbURL, keyFile, name, rep.apiURL, failover))
	return rep
}

func (r *chaosRun) startReplica(rep *haReplica) {
	cmd, exited := startDaemonChild(r.t, rep.cfgFile, rep.dir, rep.logFile, rep.port)
	rep.cmd, rep.exited = cmd, exited
	r.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-rep.exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-rep.exited
		}
		if b, _ := os.ReadFile(rep.logFile); strings.Contains(string(b), "DATA RACE") {
			r.t.Errorf("replica %s: the race detector reported: %s", rep.name, tail(rep.logFile))
		}
	})
}

// startPair starts a, waits for it to lead, then b as its follower, and
// waits for the first commit to converge.
func (r *chaosRun) startPair(a, b *haReplica, token string) {
	r.t.Helper()
	r.startReplica(a)
	waitRole(r.t, a, token, api.ReplicaLeader, 60*time.Second)
	r.startReplica(b)
	waitRole(r.t, b, token, api.ReplicaFollower, 60*time.Second)
	r.haWait("the first commit converged", 120*time.Second, func() bool { return r.converged() && haSynced(a, token, len(r.cores)) }, a, b)
}

// wantOneCreateEach checks that each declared VM was created by exactly one
// POST, whichever replica sent it.
func (r *chaosRun) wantOneCreateEach(creates *createLog) {
	r.t.Helper()
	for vmid := range r.cores {
		if n := creates.counts()[fmt.Sprint(vmid)]; n != 1 {
			r.t.Errorf("VM %d: %d create POSTs, want exactly 1 (all: %v)", vmid, n, creates.counts())
		}
	}
}

// haWait waits for ok, failing with the replicas' logs.
func (r *chaosRun) haWait(what string, timeout time.Duration, ok func() bool, live ...*haReplica) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		for _, rep := range live {
			select {
			case <-rep.exited:
				r.t.Fatalf("replica %s exited while waiting for %s: %s", rep.name, what, tail(rep.logFile))
			default:
			}
		}
		if time.Now().After(deadline) {
			var logs strings.Builder
			for _, rep := range live {
				fmt.Fprintf(&logs, "\n--- %s:\n%s", rep.name, tail(rep.logFile))
			}
			r.t.Fatalf("timed out waiting for %s\ncluster: %s%s", what, r.describe(), logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tail(file string) string {
	b, _ := os.ReadFile(file)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(len(lines)-30, 0):], "\n")
}

func haPost(rep *haReplica, token, path string) (int, string) {
	req, _ := http.NewRequest("POST", rep.apiURL+path, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := testHTTP.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func haGet(rep *haReplica, token, path string, into any) bool {
	st, b, err := apiGet(rep.apiURL, token, path)
	return err == nil && st == 200 && json.Unmarshal(b, into) == nil
}

func waitRole(t *testing.T, rep *haReplica, token string, role api.ReplicaRole, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var st api.ReplicaStatus
		if haGet(rep, token, "/api/v1/replicas", &st) && st.Role == role && st.Leader != nil {
			return
		}
		select {
		case <-rep.exited:
			t.Fatalf("replica %s exited: %s", rep.name, tail(rep.logFile))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s is not %s after %s (%+v): %s", rep.name, role, timeout, st, tail(rep.logFile))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// haSynced asks a replica (served by the leader's list, forwarded from a
// follower) whether n chaos VMs are Synced with nothing running.
func haSynced(rep *haReplica, token string, n int) bool {
	var list api.ResourceList
	if !haGet(rep, token, "/api/v1/resources", &list) {
		return false
	}
	synced := 0
	for _, res := range list.Resources {
		if strings.HasPrefix(res.Name, "chaos-") && res.Status == vocab.StatusSynced && res.Progress == nil {
			synced++
		}
	}
	return synced == n
}

// eventWatch is a browser's event stream on one replica.
type eventWatch struct {
	mu     sync.Mutex
	counts map[string]int
	prog   int
}

func (w *eventWatch) progress() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.prog
}

// count is the number of events of type typ seen.
func (w *eventWatch) count(typ string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts[typ]
}

func watchEvents(t *testing.T, rep *haReplica, token string) *eventWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", rep.apiURL+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := testHTTP.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		cancel()
		t.Fatalf("events on %s: %s", rep.name, resp.Status)
	}
	w := &eventWatch{counts: map[string]int{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		var typ string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && typ == api.SSEResource:
				var sum api.ResourceSummary
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &sum) == nil && sum.Progress != nil {
					w.mu.Lock()
					w.prog++
					w.mu.Unlock()
				}
				fallthrough
			case strings.HasPrefix(line, "data: "):
				w.mu.Lock()
				w.counts[typ]++
				w.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		<-done
	})
	return w
}

// The leader loses the network to PostgreSQL while it creates guests (every
// byte between it and the database dropped, nothing reset): it stops
// acting on its own, the server ends its lock session, and the follower
// takes over within the failover timeout and converges the commit, each
// guest created by one POST.
func TestHANetworkLossFencesTheLeaderAndTheFollowerConverges(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("inside the child")
	}
	const failover = 3 * time.Second
	dbURL := pgtest.Database(t)
	r, creates, endpoint := startHASim(t)
	keyFile := filepath.Join(r.dir, "proxmops.key")
	token := haToken(t, dbURL, keyFile)
	link := pgtest.NewLink(t, dbURL) // a's only way to the database

	a := r.haReplica("a", link.URL, keyFile, endpoint, failover.String())
	b := r.haReplica("b", dbURL, keyFile, endpoint, failover.String())
	r.startPair(a, b, token)

	before := len(creates.counts())
	r.addVMs(haVMs, haVMs)
	r.haWait("the leader to start creating", 60*time.Second, func() bool { return len(creates.counts()) > before }, a)
	cut := time.Now()
	link.Freeze()
	waitRole(t, b, token, api.ReplicaLeader, 60*time.Second)
	tookOver := time.Since(cut)
	r.haWait("the new commit converged on the follower", 120*time.Second, func() bool { return r.converged() && haSynced(b, token, len(r.cores)) }, b)
	converged := time.Since(cut)

	r.wantOneCreateEach(creates)
	if b, _ := os.ReadFile(a.logFile); !strings.Contains(string(b), "leadership ended") {
		t.Errorf("the cut-off leader never said it stopped acting: %s", tail(a.logFile))
	}
	t.Logf("network loss: the follower led %.1fs after the cut and converged the new commit %.1fs after it (failover timeout %s)",
		tookOver.Seconds(), converged.Seconds(), failover)
}
