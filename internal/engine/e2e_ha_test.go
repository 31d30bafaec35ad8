package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// haVM is the guest put under HA, in state STATE.
var haVM = testvm.VM{Name: "ha-app", Node: "pve1", VMID: 150, Cores: 1}.YAML() + "  state: STATE\n"

// haAdd puts a guest under HA and waits until the HA stack has taken it over.
func (e *env) haAdd(sid, state string) {
	e.t.Helper()
	ctx := context.Background()
	if err := e.client.Post(ctx, "cluster/ha/resources", pve.NewParams().Set("sid", sid).Set("state", state), nil); err != nil {
		e.t.Fatalf("adding %s to HA: %v", sid, err)
	}
	e.waitHA(sid, func(st string) bool { return st == state })
}

// waitHA waits until the CRM's state of a service satisfies cond ("" once it is gone).
func (e *env) waitHA(sid string, cond func(string) bool) {
	e.t.Helper()
	for i := 0; i < 2000; i++ {
		var list []map[string]any
		if err := e.client.Get(context.Background(), "cluster/ha/status/current", nil, &list); err != nil {
			e.t.Fatal(err)
		}
		st := ""
		for _, en := range list {
			if en["id"] == "service:"+sid {
				st, _ = en["crm_state"].(string)
			}
		}
		if cond(st) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.t.Fatalf("HA service %s never reached the state", sid)
}

// haRequested is the requested state of an HA resource ("" when it is gone).
func (e *env) haRequested(sid string) string {
	e.t.Helper()
	var list []map[string]any
	if err := e.client.Get(context.Background(), "cluster/ha/resources", nil, &list); err != nil {
		e.t.Fatal(err)
	}
	for _, r := range list {
		if r["sid"] == sid {
			s, _ := r["state"].(string)
			return s
		}
	}
	return ""
}

// taskTypes lists the task types of a guest on a node, oldest first, as
// "type user" (a token's tasks list its user, the token id apart).
func (e *env) taskTypes(node, vmid string) []string {
	e.t.Helper()
	var list []map[string]any
	if err := e.client.Get(context.Background(), "nodes/"+node+"/tasks", pve.NewParams().Set("vmid", vmid).Set("limit", "0"), &list); err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for i := len(list) - 1; i >= 0; i-- {
		out = append(out, list[i]["type"].(string)+" "+list[i]["user"].(string))
	}
	return out
}

// TestHAManagedVMPowerGoesThroughTheHAStack declares a stopped and then a
// running state for a VM under HA: proxmops asks the HA stack (a hastop
// with the shutdown timeout, a hastart) and waits for the VM, never sends
// status/stop (a hard stop through HA), and says in the plan that the VM is
// HA-managed. The HA stack acts a round (100 ms at this task speed) after
// the request, so an engine that trusts the hastart/hastop task alone sees
// a VM that has not changed yet.
func TestHAManagedVMPowerGoesThroughTheHAStack(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{Prune: true}, "vm.yaml", strings.Replace(haVM, "STATE", "running", 1))
	e.haAdd("vm:150", "started")

	e.write("vm.yaml", strings.Replace(haVM, "STATE", "stopped", 1))
	p := e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "ha-app")
	if a == nil || a.HA != "vm:150" || !strings.Contains(a.Reason, "HA-managed as vm:150") || !strings.Contains(planText(p), "HA-managed as vm:150") {
		t.Fatalf("the plan does not say the VM is HA-managed:\n%s", planText(p))
	}
	assertOnePlanDocument(t, p, "ha-app", func(pa api.PlanAction) bool { return pa.HA == "vm:150" })
	e.converge(eng)
	if e.guest(150).Running {
		t.Fatal("the VM still runs after the apply")
	}
	if n := e.sim.RequestCountFor("POST", "/nodes/{node}/qemu/{vmid}/status/stop"); n != 0 {
		t.Fatalf("proxmops sent %d status/stop for an HA-managed VM (a hard stop through HA)", n)
	}
	if st := e.haRequested("vm:150"); st != "stopped" {
		t.Fatalf("requested HA state %q, want stopped", st)
	}
	e.assertInSync(eng)

	e.write("vm.yaml", strings.Replace(haVM, "STATE", "running", 1))
	e.converge(eng)
	if !e.guest(150).Running {
		t.Fatal("the apply ended before the HA stack had started the VM")
	}
	if st := e.haRequested("vm:150"); st != "started" {
		t.Fatalf("requested HA state %q, want started", st)
	}
	e.assertInSync(eng)
	tasks := strings.Join(e.taskTypes("pve1", "150"), ",")
	for _, want := range []string{"hastop root@pam,qmshutdown root@pam", "hastart root@pam,qmstart root@pam"} {
		if !strings.Contains(tasks, want) {
			t.Errorf("tasks %s lack %s", tasks, want)
		}
	}
	if strings.Contains(tasks, "qmstop") {
		t.Errorf("the VM was stopped hard: %s", tasks)
	}
}

// TestHAManagedVMDeleteLeavesHAFirst prunes a running VM under HA: it is
// removed from the HA resources first (the HA stack would otherwise keep
// it running, and Proxmox refuses to destroy an HA resource without purge),
// then stopped and destroyed, without a stop request to the HA stack.
func TestHAManagedVMDeleteLeavesHAFirst(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{Prune: true}, "vm.yaml", strings.Replace(haVM, "STATE", "running", 1))
	e.haAdd("vm:150", "started")

	e.remove("vm.yaml")
	p := e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "ha-app")
	if a == nil || a.Action != vocab.ActionDelete || !strings.Contains(a.Reason, "removed from the HA resources first") {
		t.Fatalf("delete plan:\n%s", planText(p))
	}
	e.converge(eng)
	if _, ok := e.sim.Guest(150); ok {
		t.Fatal("the VM still exists")
	}
	if n := e.sim.RequestCountFor("DELETE", "/cluster/ha/resources/{sid}"); n != 1 {
		t.Fatalf("%d HA resource deletes, want 1", n)
	}
	if st := e.haRequested("vm:150"); st != "" {
		t.Fatalf("vm:150 is still an HA resource (%s)", st)
	}
	if tasks := strings.Join(e.taskTypes("pve1", "150"), ","); strings.Contains(tasks, "hastop") {
		t.Fatalf("the HA stack was asked to stop the VM before its delete: %s", tasks)
	}
}

// TestHAManagedContainerStopAndDelete does the same for a container:
// stopped through the HA stack with a shutdown, never status/stop, then
// pruned after leaving HA.
func TestHAManagedContainerStopAndDelete(t *testing.T) {
	e := newEnv(t)
	e.write("tpl.yaml", applianceTemplate)
	ct := testvm.Example(t, "containers/dns-01.yaml")
	e.write("ct.yaml", ct)
	eng := e.engine(engine.Options{Prune: true})
	e.converge(eng)
	e.haAdd("ct:201", "started")

	e.write("ct.yaml", strings.Replace(ct, "state: running", "state: stopped", 1))
	if a := e.plan(eng).Find(engine.KindContainer, "dns-01"); a == nil || a.HA != "ct:201" {
		t.Fatalf("the plan does not say the container is HA-managed: %+v", a)
	}
	e.converge(eng)
	if e.guest(201).Running {
		t.Fatal("the container still runs after the apply")
	}
	if n := e.sim.RequestCountFor("POST", "/nodes/{node}/lxc/{vmid}/status/stop"); n != 0 {
		t.Fatalf("proxmops sent %d status/stop for an HA-managed container", n)
	}
	e.assertInSync(eng)

	e.write("ct.yaml", ct)
	e.converge(eng)
	if !e.guest(201).Running {
		t.Fatal("the apply ended before the HA stack had started the container")
	}
	e.remove("ct.yaml")
	e.converge(eng)
	if _, ok := e.sim.Guest(201); ok {
		t.Fatal("the container still exists")
	}
	if st := e.haRequested("ct:201"); st != "" {
		t.Fatalf("ct:201 is still an HA resource (%s)", st)
	}
}

// TestHAManagedVMInErrorStateIsReported starts a VM under HA whose start
// fails on its node (its bridge is gone): the HA stack puts the service in
// its error state, and proxmops reports that, saying how to get out of it,
// instead of waiting in vain or hammering the HA stack with requests it
// refuses.
func TestHAManagedVMInErrorStateIsReported(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{}, "vm.yaml", strings.Replace(haVM, "STATE", "stopped", 1))
	ctx := context.Background()
	if err := e.client.Post(ctx, "cluster/ha/resources", pve.NewParams().Set("sid", "vm:150").Set("state", "stopped").Set("max_restart", "0"), nil); err != nil {
		t.Fatal(err)
	}
	e.waitHA("vm:150", func(st string) bool { return st == "stopped" })
	// The node loses vmbr0: the VM's start fails in QEMU's tap script.
	if err := e.client.Delete(ctx, "nodes/pve1/network/vmbr0", nil, nil); err != nil {
		t.Fatal(err)
	}
	var upid string
	if err := e.client.Put(ctx, "nodes/pve1/network", nil, &upid); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.WaitTask(ctx, upid, nil); err != nil {
		t.Fatal(err)
	}

	e.write("vm.yaml", strings.Replace(haVM, "STATE", "running", 1))
	_, rep := e.apply(eng)
	if len(rep.Results) != 1 || rep.Results[0].Status != vocab.StatusFailed || !strings.Contains(rep.Results[0].Error, "vm:150 in its error state") {
		t.Fatalf("first apply: %+v", rep.Results)
	}
	e.waitHA("vm:150", func(st string) bool { return st == "error" })
	starts := e.sim.RequestCountFor("POST", "/nodes/{node}/qemu/{vmid}/status/start")
	_, rep = e.apply(eng)
	if len(rep.Results) != 1 || !strings.Contains(rep.Results[0].Error, "set its HA state to disabled") {
		t.Fatalf("second apply: %+v", rep.Results)
	}
	if n := e.sim.RequestCountFor("POST", "/nodes/{node}/qemu/{vmid}/status/start"); n != starts {
		t.Fatalf("proxmops asked the HA stack to start a service in error state (%d starts)", n-starts)
	}
}

// TestHAManagedDeleteNeedsSysConsole works on an owned VM under HA with a
// token that lacks Sys.Console: stopping and starting it through the HA
// stack needs only VM.PowerMgmt and converges; removing it from the HA
// resources needs Sys.Console, so the plan of its prune names it and apply
// neither touches the HA configuration nor the VM.
func TestHAManagedDeleteNeedsSysConsole(t *testing.T) {
	e := newEnvWith(t, func(o *pvesim.Options) { o.TokenPrivileges = allPrivilegesBut("Sys.Console") })
	e.write("vm.yaml", strings.Replace(haVM, "STATE", "running", 1))
	eng := e.engine(engine.Options{Prune: true})
	e.converge(eng)
	if err := e.sim.AddHAResource("vm:150", "started"); err != nil {
		t.Fatal(err)
	}
	e.waitHA("vm:150", func(st string) bool { return st == "started" })
	e.write("vm.yaml", strings.Replace(strings.Replace(haVM, "STATE", "stopped", 1), "memory: 1024", "memory: 2048", 1))
	e.converge(eng)
	if e.guest(150).Running {
		t.Fatal("the VM still runs")
	}
	e.write("vm.yaml", strings.Replace(haVM, "STATE", "running", 1))
	e.converge(eng)
	e.remove("vm.yaml")
	p := e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "ha-app")
	want := "the API token lacks Sys.Console on /, needed to remove the guest from HA (vm:150)"
	if a == nil || a.Status != vocab.StatusFailed || !strings.Contains(a.Reason, want) {
		t.Fatalf("planned %+v, want %q", a, want)
	}
	e.applySendingNone(eng, p, [][2]string{{"DELETE", "/cluster/ha/resources/{sid}"}, {"DELETE", "/nodes/{node}/qemu/{vmid}"}, {"POST", "/nodes/{node}/qemu/{vmid}/status/stop"}})
	if !e.guest(150).Running {
		t.Error("the VM was stopped")
	}
}

// assertOnePlanDocument checks that the CLI's JSON (Plan.JSON) is exactly the
// document the HTTP API answers (Plan.Document, an api.Plan): every field it
// prints is one api.Plan declares, and the action named satisfies ok.
func assertOnePlanDocument(t *testing.T, p *engine.Plan, name string, ok func(api.PlanAction) bool) {
	t.Helper()
	b, err := p.JSON()
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var doc api.Plan
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("plan JSON is not the API's plan document: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(doc, p.Document()) {
		t.Fatalf("plan JSON and the API's plan document differ:\n%s\n%+v", b, p.Document())
	}
	for _, pa := range doc.Actions {
		if pa.Name == name && ok(pa) {
			return
		}
	}
	t.Fatalf("plan document lacks the expected entry for %s:\n%s", name, b)
}
