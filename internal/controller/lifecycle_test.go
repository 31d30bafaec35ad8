package controller

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

func TestRestartKeepsHistoryAndConverges(t *testing.T) {
	sim, repo := simWithRepo(t, 0, "vm", map[string]string{"vms/a.yaml": vmManifest("a", 360, 2)})
	dir := t.TempDir()
	e1 := newEnv(t, sim, repo, dir).start()
	e1.waitStatus("VirtualMachine/a", vocab.StatusSynced)
	e1.waitFor("created recorded", func(api.ResourceList) bool {
		return containsEvent(events_(e1.history("VirtualMachine/a")), api.EventCreated)
	})
	before := e1.history("VirtualMachine/a")
	e1.stop()

	// While the daemon is down, the repository changes.
	repo.Commit("more cores", map[string]string{"vms/a.yaml": vmManifest("a", 360, 3)})
	sim.ResetRequests()

	e2 := newEnv(t, sim, repo, dir).start()
	e2.waitFor("converged after restart", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/a")
		return r != nil && r.Status == vocab.StatusSynced && guestCores(t, sim, 360) == "3"
	})
	after := e2.history("VirtualMachine/a")
	if len(after) < len(before) {
		t.Fatalf("history shrank across the restart: %v -> %v", events_(before), events_(after))
	}
	for i := range before {
		if after[i].ID != before[i].ID || after[i].Event != before[i].Event {
			t.Fatalf("history changed across the restart: %v -> %v", events_(before), events_(after))
		}
	}
	if n := sim.RequestCountFor("POST", "/nodes/{node}/qemu"); n != 0 {
		t.Errorf("the VM was created again after the restart (%d creates)", n)
	}
	e2.stop()

	// A restart with nothing changed writes no history and touches nothing.
	// The count is taken once e2 has stopped: its last entries may land
	// after the status already reads Synced.
	sim.ResetRequests()
	e3 := newEnv(t, sim, repo, dir)
	n := len(e3.history("VirtualMachine/a"))
	e3.start()
	e3.waitFor("first pass", func(l api.ResourceList) bool { return l.LastPass != nil })
	e3.waitStatus("VirtualMachine/a", vocab.StatusSynced)
	if got := len(e3.history("VirtualMachine/a")); got != n {
		t.Errorf("a quiet restart wrote %d history entries", got-n)
	}
	if w := writes(sim); w != 0 {
		t.Errorf("a quiet restart sent %d writes", w)
	}
}

// killedWhileCreating runs a controller over a repository declaring VM a
// (vmid, two cores) and kills it while its create task runs (a create
// takes a few seconds): nothing it does from then on reaches the database
// in dir.
func killedWhileCreating(t *testing.T, vmid int) (*pvesim.Server, *gittest.Repo, string) {
	t.Helper()
	sim, repo := simWithRepo(t, 0.5, "vm", map[string]string{"vms/a.yaml": vmManifest("a", vmid, 2)})
	dir := t.TempDir()
	e1 := newEnv(t, sim, repo, dir).start()
	e1.waitFor("create running", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/a")
		return r != nil && r.Status == vocab.StatusProgressing && r.Progress != nil && r.Progress.Task != ""
	})
	e1.kill()
	return sim, repo, dir
}

func TestKilledMidApplyConvergesOnNextStart(t *testing.T) {
	sim, repo, dir := killedWhileCreating(t, 370)
	e2 := newEnv(t, sim, repo, dir, func(o *Options) { o.Config.Reconcile.Interval = time.Minute }).start()
	e2.waitInterruptedRecorded("VirtualMachine/a")
	// The create task went on in the cluster; the new daemon finishes the
	// job from what it observes (it may need a pass once the lock is gone).
	deadline := time.Now().Add(40 * time.Second)
	for {
		l, _ := e2.c.Resources(context.Background())
		r := find(l, "VirtualMachine/a")
		if r != nil && r.Status == vocab.StatusSynced {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no convergence after the restart: %s", dump(l))
		}
		e2.c.SyncAll(context.Background())
		time.Sleep(200 * time.Millisecond)
	}
	g, ok := sim.Guest(370)
	if !ok || !g.Running || g.Config["cores"] != "2" {
		t.Fatalf("guest after convergence: %+v (exists %v)", g, ok)
	}
	if n := sim.RequestCountFor("POST", "/nodes/{node}/qemu"); n != 1 {
		t.Errorf("%d creates: the interrupted create was repeated", n)
	}
}

func TestGracefulStopRecordsInterruptedActions(t *testing.T) {
	// slow enough to outlast the grace period
	sim, repo := simWithRepo(t, 2, "vm", map[string]string{"vms/a.yaml": vmManifest("a", 375, 2)})
	e := newEnv(t, sim, repo, "", func(o *Options) { o.ShutdownGrace = 50 * time.Millisecond }).start()
	e.waitFor("create running", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/a")
		return r != nil && r.Status == vocab.StatusProgressing
	})
	e.stopMidAction("VirtualMachine/a")
	// Recorded once: the next start does not record it again.
	e.closeWithNothingInFlight()
}

func TestNoDoubleQueueAndQueueLimit(t *testing.T) {
	sim, repo := simWithRepo(t, 0.3, "vms", map[string]string{
		"vms/a.yaml": vmManifest("a", 380, 1),
		"vms/b.yaml": vmManifest("b", 381, 1),
	})
	e := newEnv(t, sim, repo, "", func(o *Options) { o.QueueLimit = 1 }).start()
	l := e.waitFor("one queued, one deferred", func(l api.ResourceList) bool {
		a, b := find(l, "VirtualMachine/a"), find(l, "VirtualMachine/b")
		return a != nil && b != nil && (a.Status == vocab.StatusProgressing) != (b.Status == vocab.StatusProgressing)
	})
	deferred := find(l, "VirtualMachine/b")
	if deferred.Status == vocab.StatusProgressing {
		deferred = find(l, "VirtualMachine/a")
	}
	if !strings.Contains(deferred.Reason, "queue is full") {
		t.Errorf("deferred resource's reason %q", deferred.Reason)
	}
	// Passes while the action runs never queue it again.
	for range 5 {
		e.c.SyncAll(context.Background())
		e.c.Refresh(context.Background())
		time.Sleep(20 * time.Millisecond)
	}
	busy := "VirtualMachine/a"
	if deferred.Name == "a" {
		busy = "VirtualMachine/b"
	}
	kind, name := splitKey(busy)
	if err := e.c.SyncOne(context.Background(), kind, name); err != nil && !errors.Is(err, api.ErrConflict) {
		t.Errorf("sync one of a busy resource: %v", err)
	}
	e.waitStatus("VirtualMachine/a", vocab.StatusSynced)
	e.waitStatus("VirtualMachine/b", vocab.StatusSynced)
	if n := sim.RequestCountFor("POST", "/nodes/{node}/qemu"); n != 2 {
		t.Fatalf("%d VM creates for 2 VMs", n)
	}
}

func TestSubmodulesArePartOfTheDesiredState(t *testing.T) {
	sim := startSim(t, 0)
	sub := gittest.New(t)
	s1 := sub.Commit("lxc defs", map[string]string{"vms/sub.yaml": vmManifest("sub", 390, 1)})
	top := gittest.New(t)
	top.Commit("top", map[string]string{"vms/top.yaml": vmManifest("top", 391, 1)})
	top.AddSubmodule("shared", sub.URL(), s1)
	e := newEnv(t, sim, top, "").start()
	e.waitStatus("VirtualMachine/sub", vocab.StatusSynced)
	e.waitStatus("VirtualMachine/top", vocab.StatusSynced)

	// Bumping the submodule changes the cluster.
	s2 := sub.Commit("more cores", map[string]string{"vms/sub.yaml": vmManifest("sub", 390, 2)})
	top.AddSubmodule("shared", sub.URL(), s2)
	e.c.Refresh(context.Background())
	e.waitFor("submodule change applied", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/sub")
		return r != nil && r.Status == vocab.StatusSynced && guestCores(t, sim, 390) == "2"
	})
}

func TestPlanOfAnotherRevision(t *testing.T) {
	e := syncedVM(t, 0, "a", 400, 1)
	sim, repo := e.sim, e.repo
	base := e.first

	// A pull request's branch: one more VM, one changed.
	pr := repo.Commit("pr", map[string]string{"vms/a.yaml": vmManifest("a", 400, 2), "vms/b.yaml": vmManifest("b", 401, 1)})
	repo.ResetHard(base)
	if err := repo.Git.Storer.SetReference(branchRef("feature", pr)); err != nil {
		t.Fatal(err)
	}
	p, err := e.c.Plan(context.Background(), "feature")
	if err != nil {
		t.Fatal(err)
	}
	if p.Revision != pr.String() || p.Summary.Create != 1 || p.Summary.Update != 1 {
		t.Fatalf("plan of the branch: %+v", p)
	}
	cur, err := e.c.Plan(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if cur.Summary.Create+cur.Summary.Update != 0 {
		t.Errorf("plan of the watched revision: %+v", cur.Summary)
	}
	if _, err := e.c.Plan(context.Background(), "no-such-branch"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("plan of a missing branch: %v", err)
	}
	if _, ok := sim.Guest(401); ok {
		t.Error("a plan changed the cluster")
	}
}

func TestTestSettingsReportsEachCheck(t *testing.T) {
	sim, repo := simWithRepo(t, 0, "vm", map[string]string{"vms/a.yaml": vmManifest("a", 410, 1)})
	e := newEnv(t, sim, repo, "")
	defer e.st.Close()
	defer e.c.Close()

	res, err := e.c.TestSettings(context.Background(), values(sim, repo.URL(), e.dir))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]api.Check{}
	for _, c := range res.Checks {
		byName[c.Name] = c
	}
	if c := byName["cluster: version"]; !c.OK || !strings.Contains(c.Message, "9.") {
		t.Errorf("version check: %+v", c)
	}
	// The commit, its subject, and what validated.
	if c := byName["source: repository"]; !c.OK || !regexp.MustCompile(`^commit [0-9a-f]{7,} \(vm\): 1 VirtualMachine, all valid$`).MatchString(c.Message) {
		t.Errorf("source check: %+v", c)
	}
	if _, ok := byName["cluster: privileges"]; !ok {
		t.Errorf("no privileges check: %+v", res.Checks)
	}

	bad := values(sim, "file:///nonexistent/repo", e.dir)
	bad.Cluster.TokenSecret = "wrong"
	res, err = e.c.TestSettings(context.Background(), bad)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK {
		t.Fatalf("bad settings passed: %+v", res)
	}
	for _, c := range res.Checks {
		if c.OK || c.Message == "" {
			t.Errorf("check %q should fail with words: %+v", c.Name, c)
		}
	}

	empty := config.Defaults()
	res, _ = e.c.TestSettings(context.Background(), empty)
	if res.OK || len(res.Checks) < 2 || !strings.Contains(res.Checks[0].Message, "cluster.endpoint") {
		t.Errorf("empty settings: %+v", res)
	}
}
