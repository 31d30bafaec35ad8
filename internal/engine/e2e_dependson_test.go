package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
)

// depVM is a blank-disk VM on pve1 in state, waiting for deps
// (metadata.dependsOn).
func depVM(name string, vmid int, state string, deps ...string) string {
	dependsOn := ""
	if len(deps) > 0 {
		dependsOn = "  dependsOn: [" + strings.Join(deps, ", ") + "]\n"
	}
	return fmt.Sprintf(`apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: %s
  node: pve1
%sspec:
  vmid: %d
  cores: 1
  memory: 512
  disks: [{storage: local-lvm, size: 1G}]
  state: %s
`, name, dependsOn, vmid, state)
}

// order records the actions an apply starts and finishes, in order.
type order struct {
	mu     sync.Mutex
	events []string
}

func (o *order) progress() engine.Progress {
	add := func(s string) { o.mu.Lock(); o.events = append(o.events, s); o.mu.Unlock() }
	return engine.ProgressFuncs{
		Started:  func(a *engine.Action) { add("start " + a.Key()) },
		Finished: func(a *engine.Action, r engine.Result) { add("end " + a.Key() + " " + r.Status.String()) },
	}
}

func (o *order) index(ev string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Index(o.events, ev)
}

// assertSyncedInOrder fails unless every result is synced and the action
// then started only after first finished (what says the wrong order).
func (o *order) assertSyncedInOrder(t *testing.T, rep *engine.Report, first, then, what string) {
	t.Helper()
	for _, r := range rep.Results {
		if r.Status != vocab.StatusSynced {
			t.Fatalf("%s/%s: %s %s", r.Kind, r.Name, r.Status, r.Error)
		}
	}
	if firstDone, thenStart := o.index("end "+first+" Synced"), o.index("start "+then); firstDone < 0 || thenStart < firstDone {
		t.Fatalf("%s: %q", what, o.events)
	}
}

// A web VM depending on db is planned as a create that waits, the wait
// carried as data in the plan document and said in the text; apply creates
// db, and the next pass, db running and in sync, creates web.
func TestAPlanSaysWhatACreateWaitsFor(t *testing.T) {
	e, eng := withManifests(t, engine.Options{},
		"db.yaml", depVM("db", 170, "running"),
		"web.yaml", depVM("web", 171, "running", "VirtualMachine/db"),
	)
	p := e.plan(eng)

	web := p.Find("VirtualMachine", "web")
	if web.Action != vocab.ActionCreate || !web.Waits() || web.Runnable() {
		t.Fatalf("web: action %s, waiting %+v, runnable %v", web.Action, web.Waiting, web.Runnable())
	}
	if text := planText(p); !strings.Contains(text, "VirtualMachine/web (pve1, vmid 171): create, waiting for VirtualMachine/db to be in sync and healthy (OutOfSync)") {
		t.Fatalf("plan text:\n%s", text)
	}
	var doc api.Plan
	decodePlanJSON(t, p, &doc)
	i := slices.IndexFunc(doc.Actions, func(a api.PlanAction) bool { return a.Name == "web" })
	if w := doc.Actions[i].Waiting; w == nil || *w != (api.Wait{Resource: "VirtualMachine/db", Status: vocab.StatusOutOfSync, Health: vocab.HealthMissing}) {
		t.Fatalf("web's wait in the JSON plan: %+v", doc.Actions[i].Waiting)
	}

	var o order
	rep, err := eng.Converge(context.Background(), e.desired(), p, o.progress(), engine.ConvergeOptions{Wait: 10 * time.Millisecond, MaxWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	o.assertSyncedInOrder(t, rep, "VirtualMachine/db", "VirtualMachine/web", "web created before db was done")

	// db in sync and running: nothing waits any more.
	p = e.plan(eng)
	if web := p.Find("VirtualMachine", "web"); web.Waits() || web.Action != vocab.ActionNone {
		t.Fatalf("after apply, web: %s waiting %+v", web.Action, web.Waiting)
	}
}

// Stopping both, the dependent goes first: db's stop waits for web's.
func TestADependencyStopsAfterWhatDependsOnIt(t *testing.T) {
	e, eng := withManifests(t, engine.Options{},
		"db.yaml", depVM("db", 172, "running"),
		"web.yaml", depVM("web", 173, "running", "VirtualMachine/db"),
	)
	if _, err := eng.Converge(context.Background(), e.desired(), e.plan(eng), nil, engine.ConvergeOptions{Wait: 10 * time.Millisecond, MaxWait: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	e.write("db.yaml", depVM("db", 172, "stopped"))
	e.write("web.yaml", depVM("web", 173, "stopped", "VirtualMachine/db"))
	p := e.plan(eng)
	if db := p.Find("VirtualMachine", "db"); !slices.Contains(db.DependsOn, "VirtualMachine/web") {
		t.Fatalf("db's stop depends on %v, want web's", db.DependsOn)
	}
	var o order
	rep, err := eng.Apply(context.Background(), p, o.progress())
	if err != nil {
		t.Fatal(err)
	}
	o.assertSyncedInOrder(t, rep, "VirtualMachine/web", "VirtualMachine/db", "db stopped before web")
}

// Pruning both, the dependent is deleted first: the dependencies of the
// revision that declared them (WithFormer) order the deletions.
func TestAPrunedDependencyIsDeletedAfterWhatDependedOnIt(t *testing.T) {
	e, eng := withManifests(t, engine.Options{Prune: true},
		"db.yaml", depVM("db", 174, "running"),
		"web.yaml", depVM("web", 175, "running", "VirtualMachine/db"),
		"keep.yaml", depVM("keep", 176, "stopped"),
	)
	before := e.desired()
	if _, err := eng.Converge(context.Background(), before, e.plan(eng), nil, engine.ConvergeOptions{Wait: 10 * time.Millisecond, MaxWait: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	e.remove("db.yaml")
	e.remove("web.yaml")
	now := e.desired()
	if p, err := eng.Plan(context.Background(), now, "test"); err != nil || slices.Contains(p.Find("VirtualMachine", "db").DependsOn, "VirtualMachine/web") {
		t.Fatalf("without the former revision the order is unknown: %v %v", err, p.Find("VirtualMachine", "db").DependsOn)
	}
	now.WithFormer(before)
	p, err := eng.Plan(context.Background(), now, "test")
	if err != nil {
		t.Fatal(err)
	}
	if db := p.Find("VirtualMachine", "db"); db.Action != vocab.ActionDelete || !slices.Contains(db.DependsOn, "VirtualMachine/web") {
		t.Fatalf("db: %s after %v, want a delete after web's", db.Action, db.DependsOn)
	}
	var o order
	rep, err := eng.Apply(context.Background(), p, o.progress())
	if err != nil {
		t.Fatal(err)
	}
	o.assertSyncedInOrder(t, rep, "VirtualMachine/web", "VirtualMachine/db", "db deleted before web")
	if _, ok := e.sim.Guest(174); ok {
		t.Fatal("db is still on the cluster")
	}
}

// A clone whose template is held for a manual sync waits for it, the
// template named, instead of failing as blocked when the apply reaches it;
// once the template is synced by hand the clone is made.
func TestAnActionWaitsBehindADependencyThatDoesNotRunThisPass(t *testing.T) {
	e, eng := withManifests(t, engine.Options{},
		"templates/debian-12-tpl.yaml", strings.Replace(seedTemplate, "  node: pve1\n", "  node: pve1\n  annotations:\n    proxmops.dev/sync: manual\n", 1),
		"vms/app-02.yaml", seedClone,
	)
	p, rep := e.apply(eng)
	clone := p.Find(engine.KindVirtualMachine, "app-02")
	if clone == nil || clone.Waiting == nil || clone.Waiting.Key != "Template/debian-12-tpl" || clone.Waiting.Sync != vocab.SyncManual {
		t.Fatalf("clone planned %+v, want it waiting for Template/debian-12-tpl, whose sync is manual", clone)
	}
	// Only a user ends this wait, and the words say so.
	if want := "waiting for Template/debian-12-tpl to be in sync and healthy (OutOfSync; its sync is manual: sync it to go on)"; clone.Waiting.Text() != want {
		t.Fatalf("the wait says %q, want %q", clone.Waiting.Text(), want)
	}
	for _, r := range rep.Results {
		if r.Kind == engine.KindVirtualMachine && (r.Status != vocab.StatusOutOfSync || r.Blocked != "") {
			t.Fatalf("clone applied %+v, want it left out of sync, waiting (not failed as blocked)", r)
		}
	}
	if rep.Failed != 0 {
		t.Fatalf("apply failed %d actions: %+v", rep.Failed, rep.Results)
	}
}

// A create depending on a resource whose sync is disabled (or manual)
// waits, and its wait says that only a user can end it.
func TestAWaitOnAResourceNobodySyncsSaysSo(t *testing.T) {
	for _, policy := range []vocab.SyncPolicy{vocab.SyncManual, vocab.SyncDisabled} {
		t.Run(policy.String(), func(t *testing.T) {
			e := newEnv(t)
			e.write("db.yaml", strings.Replace(depVM("db", 172, "running"), "  node: pve1\n", "  node: pve1\n  annotations:\n    proxmops.dev/sync: "+policy.String()+"\n", 1))
			e.write("web.yaml", depVM("web", 173, "running", "VirtualMachine/db"))
			p := e.plan(e.engine(engine.Options{}))
			web := p.Find("VirtualMachine", "web")
			if web.Waiting == nil || web.Waiting.Key != "VirtualMachine/db" || web.Waiting.Sync != policy {
				t.Fatalf("web: %s waiting %+v, want a wait on db naming its %s sync", web.Action, web.Waiting, policy)
			}
			if txt := web.Waiting.Text(); !strings.Contains(txt, "its sync is "+policy.String()) {
				t.Fatalf("the wait says %q", txt)
			}
			if doc := web.Waiting.Document(); doc.Sync != policy {
				t.Fatalf("the API's wait: %+v", doc)
			}
		})
	}
}
