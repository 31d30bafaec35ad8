package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// haGuestVM is a VM with a spec.ha line (HA: "" for none).
func haGuestVM(name, vmid, ha string) string {
	out := "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata:\n  name: " + name + "\n  node: pve1\nspec:\n  vmid: " + vmid +
		"\n  cores: 1\n  memory: 512\n"
	if ha != "" {
		out += "  ha: " + ha + "\n"
	}
	return out
}

func haRuleYAML(name, spec string) string {
	return "apiVersion: proxmops.dev/v1\nkind: HARule\nmetadata:\n  name: " + name + "\nspec: " + spec + "\n"
}

// haResource reads one HA resource as listed ("nil" when absent).
func haResource(t *testing.T, c *pve.Client, sid string) map[string]any {
	t.Helper()
	return listItem(t, c, "cluster/ha/resources", "sid", sid)
}

func haRule(t *testing.T, c *pve.Client, id string) map[string]any {
	t.Helper()
	return listItem(t, c, "cluster/ha/rules", "rule", id)
}

func changeAt(a *engine.Action, path string) *vocab.Change {
	for i, c := range a.Changes {
		if c.Path == path {
			return &a.Changes[i]
		}
	}
	return nil
}

// A guest's spec.ha makes it an HA resource after it is created, in sync
// on the next plan; fields changed by hand (a value, a default made
// explicit by hand) are found by field and put back; state absent takes
// it out of HA. A guest without spec.ha that someone put under HA stays
// there.
func TestGuestHACreatedInSyncDriftFixedAndRemoved(t *testing.T) {
	e, eng := withManifests(t, engine.Options{Prune: true},
		"vms/web.yaml", haGuestVM("web", "150", "{ state: started, maxRestart: 2, comment: front }"),
		"vms/db.yaml", haGuestVM("db", "151", ""),
		"vms/api.yaml", haGuestVM("api", "152", "{}"),
	)
	ctx := context.Background()
	web := e.plan(eng).Find(engine.KindVirtualMachine, "web")
	if c := changeAt(web, "spec.ha.maxRestart"); web.Action != vocab.ActionCreate || c == nil || c.To != "2" {
		t.Fatalf("create: %s %+v", web.Action, web.Changes)
	}
	e.converge(eng)
	r := haResource(t, e.client, "vm:150")
	if r == nil || r["max_restart"] != float64(2) || r["comment"] != "front" || r["state"] != nil && r["state"] != "started" {
		t.Fatalf("HA resource after create: %v", r)
	}
	if !e.guest(150).Running {
		t.Fatal("web is not running")
	}
	e.assertInSync(eng)

	// By hand: db goes under HA (left alone), web's fields change.
	e.haAdd("vm:151", "started")
	if err := e.client.Put(ctx, "cluster/ha/resources/vm:150", pve.NewParams().Set("max_restart", "5").Set("failback", "0").Set("max_relocate", "1"), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Put(ctx, "cluster/ha/resources/vm:152", pve.NewParams().Set("comment", "by hand"), nil); err != nil {
		t.Fatal(err)
	}
	p := e.plan(eng)
	web = p.Find(engine.KindVirtualMachine, "web")
	if web.Action != vocab.ActionUpdate || len(web.Changes) != 2 {
		t.Fatalf("drift: %s %+v", web.Action, web.Changes)
	}
	if c := changeAt(web, "spec.ha.maxRestart"); c == nil || c.From != "5" || c.To != "2" || c.Field != "ha.max_restart" {
		t.Fatalf("max_restart drift: %+v", web.Changes)
	}
	if c := changeAt(web, "spec.ha.failback"); c == nil || c.From != "0" || c.To != "1" {
		t.Fatalf("failback drift: %+v", web.Changes)
	}
	if db := p.Find(engine.KindVirtualMachine, "db"); db.Action != vocab.ActionNone {
		t.Fatalf("db without spec.ha under HA by hand: %s %+v", db.Action, db.Changes)
	}
	if api := p.Find(engine.KindVirtualMachine, "api"); changeAt(api, "spec.ha.comment") == nil {
		t.Fatalf("api's comment drift: %+v", api.Changes)
	}
	e.converge(eng)
	if r := haResource(t, e.client, "vm:150"); r["max_restart"] != float64(2) || r["failback"] != float64(1) {
		t.Fatalf("after the fix: %v", r)
	}
	if r := haResource(t, e.client, "vm:152"); r["comment"] != nil {
		t.Fatalf("api after the fix: %v", r)
	}
	e.assertInSync(eng)

	// Out of HA.
	e.write("vms/web.yaml", haGuestVM("web", "150", "{ state: absent }"))
	web = e.plan(eng).Find(engine.KindVirtualMachine, "web")
	if c := changeAt(web, "spec.ha.state"); web.Action != vocab.ActionUpdate || c == nil || c.To != "absent" {
		t.Fatalf("absent: %s %+v", web.Action, web.Changes)
	}
	e.converge(eng)
	if haResource(t, e.client, "vm:150") != nil || haResource(t, e.client, "vm:151") == nil {
		t.Fatal("state absent removed the wrong HA resources")
	}
	if !e.guest(150).Running {
		t.Fatal("web stopped when it left HA")
	}
	e.assertInSync(eng)
}

// A stopped guest declared with HA state stopped joins HA stopped, and a
// started one is started by the HA stack: power and HA agree.
func TestGuestHAStoppedAndStartedAgreeWithPower(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{}, "vms/web.yaml", haGuestVM("web", "150", "{ state: stopped }")+"  state: stopped\n")
	if e.guest(150).Running || e.haRequested("vm:150") != "stopped" {
		t.Fatalf("running %v, HA %q", e.guest(150).Running, e.haRequested("vm:150"))
	}
	e.assertInSync(eng)
	e.write("vms/web.yaml", haGuestVM("web", "150", "{ state: started }"))
	e.converge(eng)
	if !e.guest(150).Running || e.haRequested("vm:150") != "started" {
		t.Fatalf("running %v, HA %q", e.guest(150).Running, e.haRequested("vm:150"))
	}
	e.assertInSync(eng)
}

// An HA rule is created after its guests joined HA, with their HA
// resource ids, its nodes in Proxmox's read-back form and the ownership
// mark; in sync on the next plan; a change by hand is found and fixed; a
// change of its type replaces it.
func TestHARuleCreatedInSyncDriftFixedReplaced(t *testing.T) {
	e, eng := withManifests(t, engine.Options{},
		"vms/web.yaml", haGuestVM("web", "150", "{}"),
		"vms/db.yaml", haGuestVM("db", "151", "{}"),
		"ha/rule.yaml", haRuleYAML("web-db", "{ type: node-affinity, guests: [web, db], nodes: [{ node: pve2 }, { node: pve1, priority: 2 }], comment: prefer pve1 }"),
	)
	ctx := context.Background()
	p := e.plan(eng)
	rule := p.Find(engine.KindHARule, "web-db")
	if rule.Action != vocab.ActionCreate || strings.Join(rule.DependsOn, ",") != "VirtualMachine/web,VirtualMachine/db" {
		t.Fatalf("rule: %s depends on %v (%s)", rule.Action, rule.DependsOn, rule.Reason)
	}
	e.converge(eng)
	r := haRule(t, e.client, "web-db")
	if r == nil || r["resources"] != "vm:150,vm:151" || r["nodes"] != "pve1:2,pve2" || r["comment"] != "prefer pve1 (managed-by-proxmops)" || r["type"] != "node-affinity" {
		t.Fatalf("rule after create: %v", r)
	}
	e.assertInSync(eng)

	if err := e.client.Put(ctx, "cluster/ha/rules/web-db", pve.NewParams().Set("type", "node-affinity").Set("nodes", "pve3").Set("strict", "1").Set("disable", "1"), nil); err != nil {
		t.Fatal(err)
	}
	rule = e.plan(eng).Find(engine.KindHARule, "web-db")
	for _, path := range []string{"spec.nodes", "spec.strict", "spec.enabled"} {
		if c := changeAt(rule, path); rule.Action != vocab.ActionUpdate || c == nil {
			t.Fatalf("drift of %s not found: %s %+v", path, rule.Action, rule.Changes)
		}
	}
	e.converge(eng)
	if r := haRule(t, e.client, "web-db"); r["nodes"] != "pve1:2,pve2" || r["strict"] != nil && r["strict"] != float64(0) || r["disable"] != nil {
		t.Fatalf("rule after the fix: %v", r)
	}
	e.assertInSync(eng)

	e.write("ha/rule.yaml", haRuleYAML("web-db", "{ type: resource-affinity, guests: [web, db], affinity: positive, enabled: false }"))
	rule = e.plan(eng).Find(engine.KindHARule, "web-db")
	if rule.Action != vocab.ActionUpdate || !strings.Contains(rule.Reason, "deleted and created again") {
		t.Fatalf("type change: %s %s", rule.Action, rule.Reason)
	}
	e.converge(eng)
	if r := haRule(t, e.client, "web-db"); r["type"] != "resource-affinity" || r["affinity"] != "positive" || r["disable"] != float64(1) || r["nodes"] != nil {
		t.Fatalf("rule after the replacement: %v", r)
	}
	e.assertInSync(eng)
}

// A rule made by hand is never changed or deleted, even with prune on; a
// declared name held by one is a Conflict until adopted; an owned rule no
// longer declared is kept with prune off and deleted with it on; a rule
// naming a guest outside HA is refused before anything is sent.
func TestHARuleHandMadeLeftAloneConflictPruneAdoptRefused(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.write("vms/web.yaml", haGuestVM("web", "150", "{}"))
	e.write("vms/db.yaml", haGuestVM("db", "151", "{}"))
	e.write("vms/plain.yaml", haGuestVM("plain", "152", ""))
	e.write("vms/app.yaml", haGuestVM("app", "153", "{}"))
	pruning := e.engine(engine.Options{Prune: true})
	e.converge(pruning)
	for id, sid := range map[string]string{"theirs": "vm:150", "taken": "vm:151"} {
		if err := e.client.Post(ctx, "cluster/ha/rules", pve.NewParams().Set("rule", id).Set("type", "node-affinity").Set("resources", sid).Set("nodes", "pve1").Set("comment", "by hand"), nil); err != nil {
			t.Fatal(err)
		}
	}
	e.write("ha/mine.yaml", haRuleYAML("mine", "{ type: node-affinity, guests: [app], nodes: [{ node: pve3 }] }"))
	e.write("ha/taken.yaml", haRuleYAML("taken", "{ type: node-affinity, guests: [db], nodes: [{ node: pve2 }] }"))
	e.write("ha/plain.yaml", haRuleYAML("plain", "{ type: node-affinity, guests: [plain], nodes: [{ node: pve2 }] }"))
	e.write("ha/far.yaml", haRuleYAML("far", "{ type: node-affinity, guests: [web], nodes: [{ node: pve9 }] }"))
	p := e.plan(pruning)
	if a := p.Find(engine.KindHARule, "far"); a.Status != vocab.StatusFailed || a.Runnable() || !strings.Contains(a.Reason, "node pve9 is not in the cluster") {
		t.Fatalf("a rule naming an unknown node: %s %s", a.Status, a.Reason)
	}
	if a := p.Find(engine.KindHARule, "taken"); a.Status != vocab.StatusConflict || !a.Conflicted() {
		t.Fatalf("a declared name held by hand: %s %s", a.Status, a.Reason)
	}
	if a := p.Find(engine.KindHARule, "theirs"); a != nil {
		t.Fatalf("a hand-made rule is in the plan: %s %s", a.Action, a.Reason)
	}
	if a := p.Find(engine.KindHARule, "plain"); a.Status != vocab.StatusFailed || a.Runnable() || !strings.Contains(a.Reason, "VirtualMachine/plain (vm:152) is not an HA resource") {
		t.Fatalf("a rule naming a guest outside HA: %s %s", a.Status, a.Reason)
	}
	e.sim.ResetRequests()
	e.converge(pruning)
	if n := e.sim.RequestCountFor("POST", "/cluster/ha/rules"); n != 1 {
		t.Fatalf("POST /cluster/ha/rules sent %d times, want 1 (mine only)", n)
	}
	for id, sid := range map[string]string{"theirs": "vm:150", "taken": "vm:151"} {
		if r := haRule(t, e.client, id); r == nil || r["comment"] != "by hand" || r["resources"] != sid {
			t.Fatalf("hand-made rule %s changed: %v", id, r)
		}
	}

	e.remove("ha/mine.yaml")
	e.remove("ha/plain.yaml")
	e.remove("ha/far.yaml")
	assertPlanned(t, e.plan(e.engine(engine.Options{})), engine.KindHARule, "mine", vocab.ActionNone, "prune is off")
	if a := e.plan(pruning).Find(engine.KindHARule, "mine"); a.Action != vocab.ActionDelete {
		t.Fatalf("mine with prune on: %s %s", a.Action, a.Reason)
	}
	e.write("ha/taken.yaml", strings.Replace(haRuleYAML("taken", "{ type: node-affinity, guests: [db], nodes: [{ node: pve2 }] }"),
		"  name: taken\n", "  name: taken\n  annotations: {proxmops.dev/adopt: \"true\"}\n", 1))
	assertPlanned(t, e.plan(pruning), engine.KindHARule, "taken", vocab.ActionUpdate, "adopting HA rule taken")
	e.converge(pruning)
	if haRule(t, e.client, "mine") != nil || haRule(t, e.client, "theirs") == nil {
		t.Fatal("prune removed the wrong rules")
	}
	if r := haRule(t, e.client, "taken"); r["resources"] != "vm:151" || r["nodes"] != "pve2" || r["comment"] != "managed-by-proxmops" {
		t.Fatalf("adopted rule: %v", r)
	}
	e.assertInSync(pruning)
}

// A token without Sys.Console on /: plan names it on the rule and on the
// guest's HA change, and apply sends no HA request.
func TestHAPlanNamesMissingSysConsole(t *testing.T) {
	e := newEnv(t)
	e.write("vms/web.yaml", haGuestVM("web", "150", ""))
	e.converge(e.engine(engine.Options{}))
	e.sim.SetTokenPrivileges(allPrivilegesBut("Sys.Console"))
	e.write("vms/web.yaml", haGuestVM("web", "150", "{ maxRelocate: 3 }"))
	e.write("ha/rule.yaml", haRuleYAML("web-pve1", "{ type: node-affinity, guests: [web], nodes: [{ node: pve1 }] }"))
	eng := e.engine(engine.Options{})
	p := e.plan(eng)
	for _, k := range [][2]string{{engine.KindVirtualMachine, "web"}, {engine.KindHARule, "web-pve1"}} {
		a := p.Find(k[0], k[1])
		if a == nil || a.Status != vocab.StatusFailed || a.Runnable() || !strings.Contains(a.Reason, "Sys.Console on /") {
			t.Fatalf("%s/%s planned %+v", k[0], k[1], a)
		}
	}
	e.applySendingNone(eng, p, [][2]string{{"POST", "/cluster/ha/resources"}, {"POST", "/cluster/ha/rules"}})
}

// A rule whose guest does not join HA this pass (its creation waits for
// what its metadata.dependsOn names) waits with it instead of failing in
// Proxmox ("cannot use unmanaged resource(s)"), and is created once the
// guest has joined.
func TestHARuleWaitsForItsGuestToJoinHA(t *testing.T) {
	e, eng := withManifests(t, engine.Options{},
		"vms/db.yaml", haGuestVM("db", "151", ""),
		"vms/web.yaml", strings.Replace(haGuestVM("web", "150", "{}"), "  node: pve1\n", "  node: pve1\n  dependsOn: [VirtualMachine/db]\n", 1),
		"ha/rule.yaml", haRuleYAML("web-pve2", "{ type: node-affinity, guests: [web], nodes: [{ node: pve2 }] }"),
	)
	p, rep := e.apply(eng)
	if web := p.Find(engine.KindVirtualMachine, "web"); !web.Waits() {
		t.Fatalf("web does not wait for db: %s %s", web.Action, web.Reason)
	}
	if rule := p.Find(engine.KindHARule, "web-pve2"); rule.Runnable() {
		t.Fatalf("the rule runs before web joined HA: %s %s", rule.Status, rule.Reason)
	}
	if rep.Failed > 0 {
		t.Fatalf("the first pass failed: %+v", rep)
	}
	e.converge(eng)
	if r := haRule(t, e.client, "web-pve2"); r == nil || r["resources"] != "vm:150" {
		t.Fatalf("rule after convergence: %v", r)
	}
	e.assertInSync(eng)
}

// A container's spec.ha makes it the HA resource ct:VMID, and a rule
// names it by its manifest name; a container of proxmops' that someone
// put under HA keeps it when the manifest has no spec.ha, even with
// prune on.
func TestContainerHAAndRule(t *testing.T) {
	e := newEnv(t)
	e.addCTTemplate()
	ct := strings.ReplaceAll(movedCT, "CORES", "1")
	e.write("cts/cache-01.yaml", ct+"  ha: { maxRelocate: 2 }\n")
	e.write("ha/rule.yaml", haRuleYAML("cache-pve1", "{ type: node-affinity, guests: [cache-01], nodes: [{ node: pve1, priority: 1 }], strict: true }"))
	eng := e.engine(engine.Options{Prune: true})
	e.converge(eng)
	if r := haResource(t, e.client, "ct:230"); r == nil || r["max_relocate"] != float64(2) {
		t.Fatalf("ct:230: %v", r)
	}
	if r := haRule(t, e.client, "cache-pve1"); r == nil || r["resources"] != "ct:230" || r["nodes"] != "pve1:1" || r["strict"] != float64(1) {
		t.Fatalf("rule: %v", r)
	}
	e.assertInSync(eng)

	e.remove("ha/rule.yaml")
	e.write("cts/cache-01.yaml", ct)
	e.converge(eng)
	if haResource(t, e.client, "ct:230") == nil {
		t.Fatal("the container left HA when its manifest dropped spec.ha")
	}
	if haRule(t, e.client, "cache-pve1") != nil {
		t.Fatal("the owned rule no longer declared was not pruned")
	}
	e.assertInSync(eng)
}
