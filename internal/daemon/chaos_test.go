package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/controller"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/internal/store"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// The chaos suite (docs/reliability.md, "Chaos suite"): the
// daemon runs as a child process (this test binary re-run as
// TestChaosDaemonChild, which calls Run exactly as `proxmops serve` does)
// against a simulated cluster over real HTTP that fails requests, drops
// answers, fails tasks and times out locks; the parent SIGKILLs it while it
// applies, starts it again on the same database, and checks that the
// cluster converges with no duplicate guest, no guest left locked, no
// unowned guest touched, the history intact and the database sound.
//
// Short by default (make test); PROXMOPS_CHAOS_SEEDS=N runs seeds 1..N,
// PROXMOPS_CHAOS_KILLS=K kills K times per seed, and PROXMOPS_CHAOS_LAG=1
// keeps the simulator's 10 s status lag (off in the short run).
const chaosFaults = "error-rate=0.15,drop-rate=0.05,task-fail-rate=0.1,lock-timeout-rate=0.05"

const (
	chaosTokenID     = "root@pam!proxmops"
	chaosTokenSecret = "chaos-secret"
	chaosVMs         = 6
	childEnv         = "PROXMOPS_CHAOS_CHILD"
)

// TestChaosDaemonChild is the daemon under test when run by TestChaos; on
// its own it does nothing.
func TestChaosDaemonChild(t *testing.T) {
	cfgFile := os.Getenv(childEnv)
	if cfgFile == "" {
		t.Skip("the chaos suite's daemon; TestChaos runs it as a child process")
	}
	cfg, _, err := config.Load(config.LoadOptions{File: cfgFile, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	logger, ring, err := NewLogger(cfg.Log, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	// The API's socket is the parent's (heldPort), inherited as fd 3: no
	// other process can take the port between two starts.
	ln, err := net.FileListener(os.NewFile(3, "api listener"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err = Run(ctx, Options{Config: cfg, Logger: logger, Logs: ring, SetupOutput: io.Discard, Listener: ln,
		Controller: func(o *controller.Options) {
			o.ShutdownGrace = 2 * time.Second
			o.MinPassGap = 200 * time.Millisecond
			o.PVE = func(c *pve.Config) { c.TaskPollMin, c.TaskPollMax = 5*time.Millisecond, 50*time.Millisecond }
		}})
	if err != nil {
		t.Fatal(err)
	}
}

// chaosFigures are one seed's results.
type chaosFigures struct {
	seed                  int64
	kills, killsWithLock  int
	passes, finalPasses   int
	converge, total       time.Duration
	interrupted, failures int
}

func TestChaos(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("inside the child")
	}
	seeds := envInt("PROXMOPS_CHAOS_SEEDS", 2)
	kills := envInt("PROXMOPS_CHAOS_KILLS", 2)
	lag := os.Getenv("PROXMOPS_CHAOS_LAG") == "1"
	faults, err := pvesim.ParseFaults(chaosFaults)
	if err != nil {
		t.Fatal(err)
	}
	var figures []chaosFigures
	for seed := int64(1); seed <= int64(seeds); seed++ {
		ok := t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			figures = append(figures, runChaos(t, seed, kills, lag, faults))
		})
		if !ok {
			break
		}
	}
	worst := chaosFigures{}
	for _, f := range figures {
		t.Logf("seed %d: %d kills (%d with a guest locked), %d passes in all, %d in the last run; converged %.1fs after the last start, %.1fs in all; %d interrupted actions, %d failed actions recorded",
			f.seed, f.kills, f.killsWithLock, f.passes, f.finalPasses, f.converge.Seconds(), f.total.Seconds(), f.interrupted, f.failures)
		if f.converge > worst.converge {
			worst = f
		}
	}
	if len(figures) > 0 {
		t.Logf("worst: seed %d, %d passes in the last run, %.1fs to converge", worst.seed, worst.finalPasses, worst.converge.Seconds())
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// testHTTP asks the daemons under test: with a timeout, since a held
// port (below) accepts connections even while no daemon runs to answer.
var testHTTP = &http.Client{Timeout: 15 * time.Second}

// apiGet reads path from the daemon's API at base with the API token, and
// returns the answer's status and body.
func apiGet(base, token, path string) (int, []byte, error) {
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := testHTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// heldPort is a listening socket the test keeps open for a daemon child
// to inherit at each start: reserving a port by listening and closing
// would let another process take it before the child binds it.
type heldPort struct {
	file *os.File
	addr string
}

func holdPort(t testing.TB) heldPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(); ln.Close() })
	return heldPort{file: f, addr: ln.Addr().String()}
}

// chaosRun is one seed's world: the simulator, the repository, the daemon.
type chaosRun struct {
	t       *testing.T
	sim     *pvesim.Server
	dir     string
	cfgFile string
	logFile string
	repo    *gittest.Repo
	cores   map[int]string // vmid -> desired cores
	foreign map[int]pvesim.GuestInfo
	port    heldPort // the daemon's API socket, kept across its starts
	child   *exec.Cmd
	exited  chan struct{}
	apiURL  string // the daemon's HTTP API
	token   string // a viewer API token for it
}

func runChaos(t *testing.T, seed int64, kills int, lag bool, faults pvesim.Faults) chaosFigures {
	rng := rand.New(rand.NewSource(seed))
	statusInterval := time.Duration(-1)
	if lag {
		statusInterval = 0
	}
	sim := startChaosSim(t, pvesim.Options{TaskSpeed: 0.05, Seed: seed, StatusInterval: statusInterval})
	r := &chaosRun{t: t, sim: sim, dir: t.TempDir(), cores: map[int]string{}, foreign: map[int]pvesim.GuestInfo{}}
	r.addForeignGuests()
	r.initRepo()
	r.writeConfig()
	r.createToken()
	sim.SetFaults(faults)

	fig := chaosFigures{seed: seed}
	start := time.Now()
	for k := range kills {
		if k > 0 {
			r.commitCores(rng) // work for this run: updates, with reboots
		}
		writesBefore := chaosWrites(sim)
		r.startChild()
		// Mid-apply: once the daemon has changed something, after a
		// seed-chosen moment.
		r.waitFor("the daemon to start applying", 60*time.Second, func() bool { return chaosWrites(sim) > writesBefore })
		time.Sleep(time.Duration(rng.Intn(400)) * time.Millisecond)
		if r.anyLocked() {
			fig.killsWithLock++
		}
		r.kill()
		fig.kills++
	}
	r.commitCores(rng) // and for the last run
	lastStart := time.Now()
	passesBefore := r.countPasses()
	r.startChild()
	// Converged once the cluster is as declared and the restarted daemon
	// says so too: every VM Synced, nothing running.
	r.waitConverged(lastStart)
	fig.converge = time.Since(lastStart)
	fig.total = time.Since(start)
	fig.finalPasses = r.countPasses() - passesBefore
	// Quiet the faults, stop gracefully, then read the database.
	sim.SetFaults(pvesim.Faults{})
	r.stopChild()
	fig.passes = r.countPasses()
	if !r.converged() {
		t.Fatal("the cluster moved away from the desired state after convergence")
	}
	fig.interrupted, fig.failures = r.checkStore()
	return fig
}

func (r *chaosRun) addForeignGuests() {
	for i, vmid := range []int{900, 901} {
		spec := pvesim.GuestSpec{VMID: vmid, Node: fmt.Sprintf("pve%d", i+1), Running: i == 0,
			Config: map[string]string{"name": fmt.Sprintf("someone-elses-%d", i), "cores": "1", "memory": "512",
				"tags": "prod", "scsi0": fmt.Sprintf("local-lvm:vm-%d-disk-0,size=4G", vmid)}}
		if err := r.sim.AddGuest(spec); err != nil {
			r.t.Fatal(err)
		}
		g, _ := r.sim.Guest(vmid)
		r.foreign[vmid] = g
	}
}

func chaosManifest(i int, cores string) string {
	n, err := strconv.Atoi(cores)
	if err != nil {
		panic("cores: " + cores)
	}
	return testvm.VM{Name: fmt.Sprintf("chaos-%d", i), Node: fmt.Sprintf("pve%d", i%3+1), VMID: 500 + i, Cores: n,
		Tags: []string{"chaos"}, Running: true}.YAML()
}

func (r *chaosRun) initRepo() {
	files := map[string]string{}
	for i := range chaosVMs {
		r.cores[500+i] = "1"
		files[fmt.Sprintf("vms/chaos-%d.yaml", i)] = chaosManifest(i, "1")
	}
	r.initRepoWith("chaos VMs", files)
}

// initRepoWith makes the repository under dir with one commit of files.
func (r *chaosRun) initRepoWith(msg string, files map[string]string) {
	r.repo = gittest.Init(r.t, filepath.Join(r.dir, "repo"))
	r.repo.Commit(msg, files)
}

// commitCores flips the cores (1 <-> 2) of a seed-chosen half of the VMs,
// at least one.
func (r *chaosRun) commitCores(rng *rand.Rand) {
	files := map[string]string{}
	for _, i := range rng.Perm(chaosVMs)[:1+rng.Intn(chaosVMs/2)] {
		cores := map[string]string{"1": "2", "2": "1"}[r.cores[500+i]]
		r.cores[500+i] = cores
		files[fmt.Sprintf("vms/chaos-%d.yaml", i)] = chaosManifest(i, cores)
	}
	r.repo.Commit("change cores", files)
}

// createToken stores a viewer API token in the daemon's database before
// its first start, so the test can read the daemon's own status.
func (r *chaosRun) createToken() {
	st, err := store.Open(context.Background(), store.Options{Path: filepath.Join(r.dir, "proxmops.db")})
	if err != nil {
		r.t.Fatal(err)
	}
	defer st.Close()
	tok, hash := auth.NewToken(auth.PrefixAPI)
	if _, err := st.CreateAPIToken(context.Background(), "chaos", api.RoleViewer, hash, 0); err != nil {
		r.t.Fatal(err)
	}
	r.token = tok
}

// daemonSynced asks the daemon whether every declared VM is Synced.
func (r *chaosRun) daemonSynced() bool {
	st, b, err := apiGet(r.apiURL, r.token, "/api/v1/resources")
	if err != nil {
		return false // not answering yet
	}
	var list api.ResourceList
	if st != 200 || json.Unmarshal(b, &list) != nil {
		return false
	}
	synced := 0
	for _, res := range list.Resources {
		if res.Kind == "VirtualMachine" && strings.HasPrefix(res.Name, "chaos-") && res.Status == vocab.StatusSynced && res.Progress == nil {
			synced++
		}
	}
	return synced == len(r.cores)
}

func (r *chaosRun) writeConfig() {
	r.port = holdPort(r.t) // the same port for every start of the daemon
	addr := r.port.addr
	r.apiURL = "http://" + addr
	r.cfgFile = filepath.Join(r.dir, "proxmops.yaml")
	r.logFile = filepath.Join(r.dir, "daemon.log")
	r.writeDaemonConfig(r.cfgFile, r.sim.APIURL(), "token", 4, addr, "  databasePath: proxmops.db\n")
}

// writeDaemonConfig writes the run's token file and cfgFile: a daemon over
// endpoint and the run's repository, with concurrency, serving addr, then
// the lines of server (the rest of the server section and any sections
// after it), logging JSON at debug level.
func (r *chaosRun) writeDaemonConfig(cfgFile, endpoint, tokenFile string, concurrency int, addr, server string) {
	cfg := fmt.Sprintf(`cluster:
  endpoint: %s
  tokenId: "%s"
  tokenSecretFile: %s
source:
  repoURL: file://%s
  revision: main
  cacheDir: git-cache
reconcile:
  interval: 1s
  concurrency: %d
server:
  addr: %s
%slog:
  format: json
  level: debug
`, endpoint, chaosTokenID, tokenFile, filepath.ToSlash(filepath.Join(r.dir, "repo")), concurrency, addr, server)
	if err := os.WriteFile(filepath.Join(r.dir, "token"), []byte(chaosTokenSecret), 0o600); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// startChild starts the daemon as a child process, its log appended to
// logFile.
func (r *chaosRun) startChild() {
	cmd, exited := startDaemonChild(r.t, r.cfgFile, r.dir, r.logFile, r.port)
	r.child, r.exited = cmd, exited
	r.t.Cleanup(func() {
		if r.child == cmd {
			cmd.Process.Kill()
			<-r.exited
		}
	})
}

// kill ends the daemon with SIGKILL: no shutdown, no last save.
func (r *chaosRun) kill() {
	if err := r.child.Process.Signal(syscall.SIGKILL); err != nil {
		r.t.Fatal(err)
	}
	<-r.exited
	r.child = nil
}

// stopChild stops the daemon gracefully (SIGTERM, as systemd does).
func (r *chaosRun) stopChild() {
	r.child.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(60 * time.Second):
		r.t.Fatal("the daemon did not stop after SIGTERM")
	}
	if code := r.child.ProcessState.ExitCode(); code != 0 {
		r.t.Errorf("the daemon exited with %d after SIGTERM; its log: %s", code, r.logTail())
	}
	r.child = nil
}

func (r *chaosRun) waitFor(what string, timeout time.Duration, ok func() bool) {
	r.t.Helper()
	if !r.waitUntil(what, timeout, ok) {
		r.timedOut(what)
	}
}

// waitUntil polls ok for timeout, failing the test if the daemon exits.
func (r *chaosRun) waitUntil(what string, timeout time.Duration, ok func() bool) bool {
	r.t.Helper()
	return testwait.Until(timeout, func() bool {
		select {
		case <-r.exited:
			r.t.Fatalf("the daemon exited while waiting for %s: %s", what, r.logTail())
		default:
		}
		return ok()
	})
}

func (r *chaosRun) timedOut(what string) {
	r.t.Helper()
	r.t.Fatalf("timed out waiting for %s\ncluster: %s\nthe daemon's view: %s\ndaemon log: %s", what, r.describe(), r.daemonView(), r.logTail())
}

// waitConverged waits for the cluster to be as declared and the daemon to
// say so, two minutes after since; longer only while the daemon's own retry
// schedule says a failed action is due later (a retryable failure waits
// half an interval, doubling with each failure in a row, so a VM whose
// attempts kept meeting injected faults is retried later each time), and
// never past five minutes.
func (r *chaosRun) waitConverged(since time.Time) {
	r.t.Helper()
	const what, grace = "convergence", 30 * time.Second
	deadline := since.Add(120 * time.Second)
	for !r.waitUntil(what, time.Until(deadline), func() bool { return r.converged() && r.daemonSynced() }) {
		due := r.nextRetry()
		if !due.Add(grace).After(deadline) || due.Sub(since) > 5*time.Minute {
			r.timedOut(what)
		}
		r.t.Logf("not converged yet: the daemon retries a failed action at %s", due.Format(time.RFC3339))
		deadline = due.Add(grace)
	}
}

var retriedAfter = regexp.MustCompile(`retried after (\S+)`)

// nextRetry is the latest time the daemon names for a retry of a failed
// action ("retried after ..." in a resource's reason); zero when none.
func (r *chaosRun) nextRetry() time.Time {
	var due time.Time
	for _, m := range retriedAfter.FindAllStringSubmatch(r.daemonView(), -1) {
		if t, err := time.Parse(time.RFC3339, strings.TrimSuffix(m[1], "\"")); err == nil && t.After(due) {
			due = t
		}
	}
	return due
}

func chaosWrites(sim *pvesim.Server) int64 {
	var n int64
	for _, c := range sim.Requests() {
		if c.Method != "GET" {
			n += c.Count
		}
	}
	return n
}

type simState struct {
	Guests map[int]*pvesim.Guest `json:"guests"`
}

func (r *chaosRun) state() simState {
	b, err := r.sim.StateJSON()
	if err != nil {
		r.t.Fatal(err)
	}
	var s simState
	if err := json.Unmarshal(b, &s); err != nil {
		r.t.Fatal(err)
	}
	return s
}

func (r *chaosRun) anyLocked() bool {
	for _, g := range r.state().Guests {
		if g.Conf["lock"] != "" {
			return true
		}
	}
	return false
}

// converged: each declared VM exactly once, as declared, owned, running
// and unlocked; nothing else but the untouched unowned guests.
func (r *chaosRun) converged() bool {
	st := r.state()
	names := map[string]int{}
	for _, g := range st.Guests {
		names[g.Conf["name"]]++
	}
	for vmid, cores := range r.cores {
		g := st.Guests[vmid]
		name := fmt.Sprintf("chaos-%d", vmid-500)
		if g == nil || names[name] != 1 || g.Conf["name"] != name || g.Conf["cores"] != cores || g.Conf["lock"] != "" ||
			!g.Running || len(g.Pending) > 0 || !slices.Contains(strings.Split(g.Conf["tags"], ";"), engine.OwnerTag) {
			return false
		}
	}
	return len(st.Guests) == len(r.cores)+len(r.foreign) && r.foreignUntouched()
}

func (r *chaosRun) foreignUntouched() bool {
	for vmid, before := range r.foreign {
		now, ok := r.sim.Guest(vmid)
		if !ok || !reflect.DeepEqual(now.Config, before.Config) || now.Running != before.Running {
			r.t.Errorf("unowned guest %d touched: %+v, was %+v", vmid, now, before)
			return false
		}
	}
	return true
}

func (r *chaosRun) describe() string {
	var b strings.Builder
	for vmid, g := range r.state().Guests {
		fmt.Fprintf(&b, "\n  %d name=%s cores=%s lock=%q running=%v tags=%s pending=%v", vmid, g.Conf["name"], g.Conf["cores"], g.Conf["lock"], g.Running, g.Conf["tags"], g.Pending)
	}
	return b.String()
}

func (r *chaosRun) countPasses() int {
	b, _ := os.ReadFile(r.logFile)
	return bytes.Count(b, []byte(`"msg":"pass done"`))
}

// logTail is the end of the daemon's log without its routine lines (each
// pass's fetch and summary), which would hide what went wrong.
func (r *chaosRun) logTail() string {
	b, _ := os.ReadFile(r.logFile)
	var lines []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		if !strings.Contains(line, `"msg":"pass done"`) && !strings.Contains(line, `"msg":"git fetch"`) {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines[max(len(lines)-40, 0):], "\n")
}

// daemonView is what the daemon says of each declared VM: its status,
// planned action and reason.
func (r *chaosRun) daemonView() string {
	_, doc, err := apiGet(r.apiURL, r.token, "/api/v1/resources")
	if err != nil {
		return err.Error()
	}
	var list api.ResourceList
	if err := json.Unmarshal(doc, &list); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, res := range list.Resources {
		if strings.HasPrefix(res.Name, "chaos-") {
			fmt.Fprintf(&b, "\n  %s status=%s action=%s progress=%v reason=%q", res.Name, res.Status, res.Action, res.Progress != nil, res.Reason)
		}
	}
	return b.String()
}

// historyText renders a history (newest first) oldest first, one entry a
// line.
func historyText(h []api.HistoryEntry) string {
	var b strings.Builder
	for i := len(h) - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "\n  %s %s: %s", h[i].Time.Format("15:04:05.000"), h[i].Event, h[i].Message)
	}
	return b.String()
}

// checkStore opens the database the killed and restarted daemons shared:
// SQLite's integrity check passes, and every VM's history is readable, in
// order, ends in a success, and records the interrupted actions.
func (r *chaosRun) checkStore() (interrupted, failures int) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Path: filepath.Join(r.dir, "proxmops.db")})
	if err != nil {
		r.t.Fatal(err)
	}
	defer st.Close()
	var check string
	if err := st.DB().QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		r.t.Fatalf("PRAGMA integrity_check: %q %v", check, err)
	}
	for vmid := range r.cores {
		name := fmt.Sprintf("chaos-%d", vmid-500)
		h, err := st.History(ctx, "VirtualMachine", name, 0)
		if err != nil || len(h) == 0 {
			r.t.Fatalf("history of %s: %d entries, %v", name, len(h), err)
		}
		for i, e := range h { // newest first
			if i > 0 && (e.ID >= h[i-1].ID || e.Time.After(h[i-1].Time)) {
				r.t.Errorf("history of %s out of order at %d: %+v after %+v", name, i, e, h[i-1])
			}
			switch e.Event {
			case api.EventCreated, api.EventApplied, api.EventSynced, api.EventDrifted:
			case api.EventFailed:
				failures++
				if strings.Contains(e.Message, "interrupted") {
					interrupted++
				}
			default:
				r.t.Errorf("history of %s: unexpected event %+v", name, e)
			}
		}
		if h[0].Event == api.EventFailed {
			r.t.Errorf("%s converged but its last history event is a failure: %+v", name, h[0])
		}
		// Created once, whatever the kills and faults: an interrupted or
		// failed create the cluster finished reads "created" when found,
		// and nothing before it reads as if the VM had been there.
		created := 0
		for i := len(h) - 1; i >= 0; i-- { // oldest first
			switch h[i].Event {
			case api.EventCreated:
				created++
			case api.EventSynced, api.EventDrifted, api.EventApplied:
				if created == 0 {
					r.t.Errorf("history of %s: %s before created:%s", name, h[i].Event, historyText(h))
				}
			}
		}
		if created != 1 {
			r.t.Errorf("history of %s: created %d times, want once:%s", name, created, historyText(h))
		}
	}
	return interrupted, failures
}

// startChaosSim serves a three-node simulator with the chaos token on
// loopback until the test ends.
func startChaosSim(t *testing.T, o pvesim.Options) *pvesim.Server {
	t.Helper()
	o.Nodes, o.TokenID, o.TokenSecret = 3, chaosTokenID, chaosTokenSecret
	sim := simtest.Start(t, o)
	return sim
}

// startDaemonChild runs this test binary as a daemon on cfgFile in dir, its
// log appended to logFile; exited closes once the process has ended.
func startDaemonChild(t testing.TB, cfgFile, dir, logFile string, port heldPort) (cmd *exec.Cmd, exited chan struct{}) {
	t.Helper()
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(os.Args[0], "-test.run=^TestChaosDaemonChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+cfgFile)
	cmd.Dir = dir
	cmd.ExtraFiles = []*os.File{port.file}
	// Both to the log: a child that fails before its logger (t.Fatal)
	// says why on stdout.
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		t.Fatal(err)
	}
	exited = make(chan struct{})
	go func() {
		cmd.Wait()
		log.Close()
		close(exited)
	}()
	return cmd, exited
}
