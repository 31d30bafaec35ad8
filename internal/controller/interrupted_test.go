package controller

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// The history of an action a kill interrupts says, once the daemon is back,
// what became of it: the task went on in the cluster (Proxmox's worker does
// not depend on the client that started it).

// killWhenSent asks e for a pass and kills it once the cluster got its
// method path request (the task it starts then runs on).
func (e *env) killWhenSent(what, method, path string) {
	e.t.Helper()
	e.c.Refresh(context.Background())
	testwait.For(e.t, what, 30*time.Second, func() bool { return e.sim.RequestCountFor(method, path) > 0 })
	e.kill()
}

// historyTail is the last n entries of key's history.
func (e *env) historyTail(key string, n int) []api.HistoryEntry {
	e.t.Helper()
	h := e.history(key)
	if len(h) < n {
		e.t.Fatalf("history:%s", historyLine(h))
	}
	return h[len(h)-n:]
}

// nudge runs passes until ok holds (the fake clock never fires the
// interval): after a restart the guest may still be locked by the task
// the killed daemon started.
func (e *env) nudge(what string, ok func(api.ResourceList) bool) {
	e.t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for {
		l, _ := e.c.Resources(context.Background())
		if ok(l) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s: %s", what, dump(l))
		}
		e.c.SyncAll(context.Background())
		time.Sleep(100 * time.Millisecond)
	}
}

func synced(key string) func(api.ResourceList) bool {
	return func(l api.ResourceList) bool {
		r := find(l, key)
		return r != nil && r.Status == vocab.StatusSynced && r.Progress == nil
	}
}

// historyLine renders a history as "event: message" lines for failures.
func historyLine(h []api.HistoryEntry) string {
	var b strings.Builder
	for _, x := range h {
		b.WriteString("\n  " + string(x.Event) + ": " + x.Message)
	}
	return b.String()
}

// wantHistory checks the events in order and a word of each message.
func wantHistory(t *testing.T, key string, h []api.HistoryEntry, want ...[2]string) {
	t.Helper()
	ok := len(h) == len(want)
	for i := 0; ok && i < len(h); i++ {
		ok = string(h[i].Event) == want[i][0] && strings.Contains(h[i].Message, want[i][1])
	}
	if !ok {
		t.Fatalf("%s history:%s\nwant (event, words in the message): %v", key, historyLine(h), want)
	}
}

// A create a kill interrupts finishes in the cluster; the restarted daemon
// finds the guest and records "created" once, after the interruption,
// not "synced" standing in for the creation.
func TestKilledCreateFinishedInTheClusterReadsCreated(t *testing.T) {
	sim, repo, dir := killedWhileCreating(t, 371)
	if g, ok := sim.Guest(371); !ok || g.Config["lock"] != "create" {
		t.Fatalf("the kill should land while the create task runs: %+v", g)
	}

	e2 := newEnv(t, sim, repo, dir).start()
	e2.nudge("convergence", synced("VirtualMachine/a"))
	h := e2.history("VirtualMachine/a")
	if len(h) < 2 {
		t.Fatalf("history:%s", historyLine(h))
	}
	wantHistory(t, "VirtualMachine/a", h[:2],
		[2]string{"failed", "create interrupted"},
		[2]string{"created", "the create interrupted by the daemon's stop went on in the cluster and finished"})
	// The create's start may not have run before the kill: then the next
	// action starts the guest, and that is all that follows.
	for _, x := range h[2:] {
		if x.Event != api.EventApplied || !strings.Contains(x.Message, "stopped -> running") {
			t.Fatalf("after created, only the start may follow:%s", historyLine(h))
		}
	}
	if n := sim.RequestCountFor("POST", "/nodes/{node}/qemu"); n != 1 {
		t.Errorf("%d creates: the interrupted create was repeated", n)
	}
}

// A create a kill interrupts that the cluster then fails (here it cannot
// take the config lock and removes its half-made guest, as create_vm's
// error path does) leaves nothing: the restarted daemon creates the guest
// again and records "created" for that create.
func TestKilledCreateThatFailedInTheClusterIsCreatedAgain(t *testing.T) {
	sim, repo := simWithRepo(t, 0.5, "vm", map[string]string{"vms/a.yaml": vmManifest("a", 372, 2)})
	dir := t.TempDir()
	release := sim.HoldGuestLock(372)
	killedAtCreateLock(t, sim, repo, dir, 372)
	testwait.For(t, "the create task to fail and remove its guest", 30*time.Second, func() bool {
		_, ok := sim.Guest(372)
		return !ok
	})
	release()

	e2 := newEnv(t, sim, repo, dir).start()
	e2.nudge("convergence", synced("VirtualMachine/a"))
	wantHistory(t, "VirtualMachine/a", e2.history("VirtualMachine/a"),
		[2]string{"failed", "create interrupted"},
		[2]string{"created", "create done"})
	if n := sim.RequestCountFor("POST", "/nodes/{node}/qemu"); n != 2 {
		t.Errorf("%d creates, want the interrupted one and one more", n)
	}
}

// A delete (prune) a kill interrupts finishes in the cluster: the history
// of the resource ends with "deleted", not with the interruption.
func TestKilledDeleteFinishedInTheClusterReadsDeleted(t *testing.T) {
	sim, repo := simWithRepo(t, 0.5, "vms", map[string]string{"vms/a.yaml": vmManifest("a", 373, 1), "vms/b.yaml": vmManifest("b", 374, 1)})
	dir := t.TempDir()
	prune := func(o *Options) { o.Config.Reconcile.Prune = true }
	e1 := newEnv(t, sim, repo, dir, prune).start()
	e1.waitStatus("VirtualMachine/a", vocab.StatusSynced)
	e1.waitStatus("VirtualMachine/b", vocab.StatusSynced)
	repo.Commit("drop a", map[string]string{"vms/a.yaml": ""})
	sim.ResetRequests()
	e1.killWhenSent("the delete task", "DELETE", "/nodes/{node}/qemu/{vmid}")
	testwait.For(t, "the delete to finish in the cluster", 30*time.Second, func() bool {
		_, ok := sim.Guest(373)
		return !ok
	})

	e2 := newEnv(t, sim, repo, dir, prune).start()
	e2.nudge("the deleted VM gone from the list", func(l api.ResourceList) bool {
		return l.LastPass != nil && find(l, "VirtualMachine/a") == nil
	})
	wantHistory(t, "VirtualMachine/a", e2.historyTail("VirtualMachine/a", 2),
		[2]string{"failed", "delete interrupted"},
		[2]string{"deleted", "the delete interrupted by the daemon's stop went on in the cluster and finished"})
	if n := sim.RequestCountFor("DELETE", "/nodes/{node}/qemu/{vmid}"); n != 1 {
		t.Errorf("%d deletes: the interrupted delete was repeated", n)
	}
}

// An update a kill interrupts while its reboot runs took effect in the
// cluster: "synced" after the interruption is true, and its reason says
// the update was not repeated, which the request counts confirm.
func TestKilledUpdateFinishedInTheClusterReadsSynced(t *testing.T) {
	sim, repo := simWithRepo(t, 0.5, "vm", map[string]string{"vms/a.yaml": vmManifest("a", 376, 1)})
	dir := t.TempDir()
	e1 := newEnv(t, sim, repo, dir).start()
	e1.waitStatus("VirtualMachine/a", vocab.StatusSynced)
	repo.Commit("more cores", map[string]string{"vms/a.yaml": vmManifest("a", 376, 2)})
	sim.ResetRequests()
	e1.killWhenSent("the reboot", "POST", "/nodes/{node}/qemu/{vmid}/status/reboot")
	testwait.For(t, "the reboot to apply the pending cores", 30*time.Second, func() bool {
		g, _ := sim.Guest(376)
		return g.Running && g.Config["cores"] == "2" && len(g.Pending) == 0
	})
	sim.ResetRequests()

	e2 := newEnv(t, sim, repo, dir).start()
	e2.nudge("convergence", synced("VirtualMachine/a"))
	wantHistory(t, "VirtualMachine/a", e2.historyTail("VirtualMachine/a", 2),
		[2]string{"failed", "interrupted"},
		[2]string{"synced", "interrupted by the daemon's stop is not repeated: the cluster already matches"})
	if w := writes(sim); w != 0 {
		t.Errorf("%d writes after the restart: the interrupted update was repeated", w)
	}
}

// A kill may cut finish between its writes: the outcome noted in the
// in-flight entry, the history entry, the records, the entry dropped. The
// next start writes what did not land, once, and calls nothing
// interrupted: the VM's history reads "created" once, never "synced".
func TestKillBetweenTheWritesOfAFinishedCreate(t *testing.T) {
	sim := startSim(t, 0)
	repo := gittest.New(t)
	commit := repo.Commit("vm", map[string]string{"vms/a.yaml": vmManifest("a", 377, 2)}).String()
	// The VM exists as the finished create left it.
	e0 := newEnv(t, sim, repo, "").start()
	e0.waitStatus("VirtualMachine/a", vocab.StatusSynced)
	e0.stop()

	created := api.HistoryEntry{Event: api.EventCreated, Commit: commit, Message: "create done in 1.2s: cores: 2",
		Time: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)}
	for _, cut := range []string{"after the outcome was noted", "after the history entry", "after the records"} {
		t.Run(cut, func(t *testing.T) {
			dir := t.TempDir()
			st := openStore(t, dir)
			ctx := context.Background()
			in := map[string]inflightAction{"VirtualMachine/a": {Action: vocab.ActionCreate, Commit: commit, Started: created.Time,
				Done: true, Outcome: &created, Record: &record{Status: vocab.StatusSynced, Event: api.EventCreated}}}
			b, _ := json.Marshal(in)
			if err := st.PutState(ctx, stateInflight, b); err != nil {
				t.Fatal(err)
			}
			if cut != "after the outcome was noted" {
				if _, err := st.AddHistory(ctx, "VirtualMachine", "a", created); err != nil {
					t.Fatal(err)
				}
			}
			if cut == "after the records" {
				b, _ := json.Marshal(map[string]record{"VirtualMachine/a": *in["VirtualMachine/a"].Record})
				if err := st.PutState(ctx, stateRecords, b); err != nil {
					t.Fatal(err)
				}
			}
			st.Close()
			sim.ResetRequests()

			e := newEnv(t, sim, repo, dir).start()
			e.waitStatus("VirtualMachine/a", vocab.StatusSynced)
			e.waitFor("a pass", func(l api.ResourceList) bool { return l.LastPass != nil })
			e.stop()
			e = newEnv(t, sim, repo, dir) // the history as the next start reads it
			wantHistory(t, "VirtualMachine/a", e.history("VirtualMachine/a"), [2]string{"created", "create done in 1.2s"})
			if w := writes(sim); w != 0 {
				t.Errorf("%d writes: the finished create was acted on again", w)
			}
			if b, ok, err := e.st.State(ctx, stateInflight); err != nil || ok && string(b) != "{}" {
				t.Errorf("in-flight state after the start: %s %v", b, err)
			}
			e.st.Close()
		})
	}
}

// A create whose Proxmox worker died without its error path (a node crash,
// a SIGKILL of the worker) leaves a config holding only "lock: create"
// (create_and_lock_config in qemu-server API2/Qemu.pm create_vm wrote it
// before the worker forked). After the daemon's own kill, the next start
// says the guest waits for that lock, and the history records no creation
// nor a "synced": the create is still only interrupted.
func TestKilledCreateLeftLockedIsNotCreated(t *testing.T) {
	sim, repo := simWithRepo(t, 0.5, "vm", map[string]string{"vms/a.yaml": vmManifest("a", 378, 2)})
	dir := t.TempDir()
	killedAtCreateLock(t, sim, repo, dir, 378)
	testwait.For(t, "the create task to end", 30*time.Second, func() bool {
		g, _ := sim.Guest(378)
		return g.Config["lock"] == ""
	})
	// What a worker killed before its final write_config leaves.
	if err := sim.MutateGuest(378, func(conf map[string]string) {
		clear(conf)
		conf["lock"] = "create"
	}); err != nil {
		t.Fatal(err)
	}
	sim.ResetRequests()

	e2 := newEnv(t, sim, repo, dir).start()
	e2.nudge("the guest reported as waiting for its lock", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/a")
		return r != nil && r.Status == vocab.StatusProgressing && strings.Contains(r.Reason, "locked (create) by an unfinished task")
	})
	e2.c.SyncAll(context.Background())
	e2.waitFor("a pass", func(l api.ResourceList) bool { return l.LastPass != nil })
	wantHistory(t, "VirtualMachine/a", e2.history("VirtualMachine/a"), [2]string{"failed", "create interrupted"})
	if w := writes(sim); w != 0 {
		t.Errorf("%d writes to a guest locked by an unfinished create", w)
	}
}

// A pass reads the cluster, then an action it does not wait for ends
// before the pass applies its plan: that plan's view of the guest (missing,
// locked, stopped) is older than the recorded end. The pass leaves the
// outcome as it is; the re-scan the end asked for confirms it. The history
// reads "created" alone, with no "drifted" from the older view nor the
// "synced" that would follow it.
func TestAPassThatReadTheClusterBeforeAnActionEndedRecordsNoDrift(t *testing.T) {
	sim, repo := simWithRepo(t, 0.5, "vm", map[string]string{"vms/a.yaml": vmManifest("a", 379, 2)})
	const key = "VirtualMachine/a"
	e := newEnv(t, sim, repo, "")
	var held, ended atomic.Bool
	e.c.planned = func() {
		e.c.mu.Lock()
		in, ok := e.c.inflight[key]
		e.c.mu.Unlock()
		if !ok || in.Queued || in.Done || held.Swap(true) {
			return
		}
		// This plan read the cluster while the create ran: hold it until
		// the create's end is recorded.
		ended.Store(testwait.Until(30*time.Second, func() bool {
			e.c.mu.Lock()
			defer e.c.mu.Unlock()
			return e.c.records[key].Event == api.EventCreated
		}))
	}
	e.start()
	e.waitFor("create running", func(l api.ResourceList) bool {
		r := find(l, key)
		return r != nil && r.Progress != nil && r.Progress.Task != ""
	})
	e.c.SyncAll(context.Background())
	testwait.For(t, "a plan held until the create ended", 30*time.Second, held.Load)
	e.nudge("convergence", synced(key))
	// One whole pass after the held one.
	p := e.c.passes.Load()
	e.c.SyncAll(context.Background())
	testwait.For(t, "a pass after the held one", 30*time.Second, func() bool { return e.c.passes.Load() >= p+2+p%2 })
	if !ended.Load() {
		t.Fatal("the create did not end while the plan was held")
	}
	h := e.history(key)
	if len(h) == 0 || h[0].Event != api.EventCreated {
		t.Fatalf("history:%s", historyLine(h))
	}
	for _, x := range h[1:] {
		if x.Event != api.EventApplied || !strings.Contains(x.Message, "stopped -> running") {
			t.Fatalf("after created, only the start may follow:%s", historyLine(h))
		}
	}
	if n := sim.RequestCountFor("POST", "/nodes/{node}/qemu"); n != 1 {
		t.Errorf("%d creates: the older view made the create run again", n)
	}
}

// killedAtCreateLock starts a controller over repo and dir and kills it
// once the create's guest exists holding only its lock.
func killedAtCreateLock(t *testing.T, sim *pvesim.Server, repo *gittest.Repo, dir string, vmid int) {
	t.Helper()
	e1 := newEnv(t, sim, repo, dir).start()
	testwait.For(t, "the create's guest holding only its lock", 30*time.Second, func() bool {
		g, ok := sim.Guest(vmid)
		return ok && g.Config["lock"] == "create"
	})
	e1.kill()
}
