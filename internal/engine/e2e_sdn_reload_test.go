package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

const labZone = `apiVersion: proxmops.dev/v1
kind: SdnZone
metadata:
  name: lab
spec:
  type: simple
`

const labVnet = `apiVersion: proxmops.dev/v1
kind: SdnVnet
metadata:
  name: labnet
spec:
  zone: lab
`

// labGuest is a running VM on pve2 with its NIC on the vnet labnet.
var labGuest = vmManifest("app", "pve2", "120", "  state: running\n  net:\n    - bridge: labnet\n")

// The vnet is a bridge on pve2 only when pve2's srvreload task ends, not
// when PUT /cluster/sdn's reloadnetworkall does: the guest on the vnet is
// created and started only after every node's reload.
func TestSdnGuestOnANewVnetWaitsForTheNodesReloads(t *testing.T) {
	e, eng := withManifests(t, engine.Options{},
		"sdn/zone.yaml", labZone,
		"sdn/vnet.yaml", labVnet,
		"vms/app.yaml", labGuest,
	)
	p := e.plan(eng)
	release := e.sim.HoldNetworkReload("pve2")
	defer release()
	e.sim.ResetRequests()
	done := make(chan *engine.Report, 1)
	go func() {
		rep, err := eng.Apply(context.Background(), p, nil)
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	var rep *engine.Report
	// pve2's reload is held until proxmops looks for the nodes' reload
	// tasks; an engine that does not look goes on with pve2 still reloading.
	testwait.For(t, "the apply to end or to look for the reload tasks", 5*time.Second, func() bool {
		select {
		case rep = <-done:
			return true
		default:
			return e.sim.RequestCountFor("GET", "/nodes/{node}/tasks") > 0
		}
	})
	release()
	if rep == nil {
		rep = <-done
	}
	for _, r := range rep.Results {
		if r.Status != vocab.StatusSynced {
			t.Errorf("%s/%s %s: %s %s", r.Kind, r.Name, r.Action, r.Status, r.Error)
		}
	}
	if g, ok := e.sim.Guest(120); !ok || !g.Running {
		t.Errorf("VM 120 on the vnet: %+v", g)
	}
}

// A node whose network reload fails is named in the applying action's
// reason, and the guest that needs the vnet waits instead of failing on a
// missing bridge.
func TestSdnNodeWhoseReloadFailedIsReported(t *testing.T) {
	e := newEnv(t)
	e.write("sdn/zone.yaml", labZone)
	e.write("sdn/vnet.yaml", labVnet)
	e.write("vms/app.yaml", labGuest)
	e.sim.FailNetworkReload("pve3", "error: labnet: netlink: operation not permitted")
	eng := e.engine(engine.Options{})
	_, rep := e.apply(eng)
	vnet := resultOf(t, rep, engine.KindSdnVnet, "labnet")
	if vnet.Status != vocab.StatusFailed ||
		!strings.Contains(vnet.Error, "the SDN configuration is applied, but its vnets are not bridges on every node: pve3: the network reload failed") ||
		!strings.Contains(vnet.Error, "command 'ifreload -a' failed: exit code 1") {
		t.Errorf("labnet: %s %q", vnet.Status, vnet.Error)
	}
	if strings.Contains(vnet.Error, "pve1") || strings.Contains(vnet.Error, "pve2:") {
		t.Errorf("only pve3 failed: %q", vnet.Error)
	}
	if vm := resultOf(t, rep, engine.KindVirtualMachine, "app"); vm.Status != vocab.StatusFailed || vm.Blocked != engine.KindSdnVnet+"/labnet" {
		t.Errorf("the VM should wait for the vnet: %s blocked by %q: %s", vm.Status, vm.Blocked, vm.Error)
	}
	// The configuration was committed, so nothing is pending; but pve3
	// has no labnet bridge until the configuration is applied again: the
	// next plan does that, and says why.
	vp := e.plan(eng).Find(engine.KindSdnVnet, "labnet")
	if vp.Action != vocab.ActionUpdate || !strings.Contains(vp.Reason, "the network reload after the last SDN apply failed on pve3") {
		t.Fatalf("after a failed reload on pve3: labnet %s %q; want an update that applies the configuration again", vp.Action, vp.Reason)
	}
	e.sim.FailNetworkReload("pve3", "") // the admin fixed pve3's network
	e.converge(eng)
	e.requireInSync(eng)
}

// A node the apply cannot reach gets no reload: named with what the
// apply logged for it.
func TestSdnApplyNamesAnUnreachableNode(t *testing.T) {
	e, eng := withManifests(t, engine.Options{},
		"sdn/zone.yaml", labZone,
		"sdn/vnet.yaml", labVnet,
	)
	p := e.plan(eng)
	e.sim.SetNodeOnline("pve3", false)
	rep, err := eng.Apply(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	vnet := resultOf(t, rep, engine.KindSdnVnet, "labnet")
	if vnet.Status != vocab.StatusFailed || !strings.Contains(vnet.Error, "not bridges on every node: pve3: ") ||
		!strings.Contains(vnet.Error, "(the apply logged: command 'pvesh set /nodes/pve3/network --regenerate-frr 0' failed: exit code 255)") {
		t.Errorf("labnet: %s %q", vnet.Status, vnet.Error)
	}
}

func resultOf(t *testing.T, rep *engine.Report, kind, name string) engine.Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Kind == kind && r.Name == name {
			return r
		}
	}
	t.Fatalf("no result for %s/%s in %+v", kind, name, rep.Results)
	return engine.Result{}
}

// While another user holds the SDN configuration lock, proxmops' SDN
// changes are refused by Proxmox: the action says so, is marked for a
// retry, and a pass after the lock's release converges.
func TestSdnLockedByAnotherUserIsReportedAndRetried(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.write("sdn/zone.yaml", labZone)
	e.write("sdn/vnet.yaml", labVnet)
	var token string
	must(t, e.client.Post(ctx, "cluster/sdn/lock", nil, &token))
	eng := e.engine(engine.Options{})
	_, rep := e.apply(eng)
	zone := resultOf(t, rep, engine.KindSdnZone, "lab")
	if zone.Status != vocab.StatusFailed || !zone.Retry ||
		!strings.HasPrefix(zone.Error, "the SDN configuration is locked by another user (POST /cluster/sdn/lock)") {
		t.Errorf("zone lab: %s retry=%v %q", zone.Status, zone.Retry, zone.Error)
	}
	if z := sdnEntry(t, e, "zones", "lab"); z.ID != "" {
		t.Errorf("zone written under the lock: %+v", z)
	}
	must(t, e.client.Delete(ctx, "cluster/sdn/lock", pve.NewParams().Set("lock-token", token), nil))
	e.converge(eng)
	e.requireInSync(eng)
}

// An apply whose answer was lost commits the configuration and starts the
// nodes' reloads all the same, but none is watched: when one of them
// failed, nothing is pending and the next plan must still apply it again,
// or a guest on the vnet fails to start on that node on every try.
func TestSdnApplyWithALostAnswerIsAppliedAgain(t *testing.T) {
	e := newEnv(t)
	e.write("sdn/zone.yaml", labZone)
	e.write("sdn/vnet.yaml", labVnet)
	e.sim.FailNetworkReload("pve3", "error: labnet: netlink: operation not permitted")
	e.sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultDrop, Method: "PUT", Path: "/cluster/sdn"})
	eng := e.engine(engine.Options{})
	_, rep := e.apply(eng)
	if vnet := resultOf(t, rep, engine.KindSdnVnet, "labnet"); vnet.Status != vocab.StatusFailed || !strings.Contains(vnet.Error, "outcome unknown") {
		t.Fatalf("labnet after the lost answer: %s %q", vnet.Status, vnet.Error)
	}
	vp := e.plan(eng).Find(engine.KindSdnVnet, "labnet")
	if vp.Action != vocab.ActionUpdate || !strings.Contains(vp.Reason, "the last SDN apply ended before its nodes' network reloads were seen") {
		t.Fatalf("after a lost apply answer: labnet %s %q; want an update that applies the configuration again", vp.Action, vp.Reason)
	}
	e.sim.FailNetworkReload("pve3", "")
	e.converge(eng)
	e.requireInSync(eng)
}
