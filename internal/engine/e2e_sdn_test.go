package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/vocab"
)

func sdnEntry(t *testing.T, e *env, kind, id string) pve.SDNEntry {
	t.Helper()
	list, err := e.client.SDNPending(context.Background(), kind)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range list {
		if x.ID == id {
			return x
		}
	}
	return pve.SDNEntry{}
}

func applySDN(t *testing.T, e *env) {
	t.Helper()
	upid, err := e.client.SDNApply(context.Background())
	if err == nil {
		_, err = e.client.WaitTask(context.Background(), upid, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// The repository's SDN examples: zones before vnets before subnets, one
// apply for the whole pass, in sync on the next plan, drift corrected,
// unowned objects and other people's pending changes left alone, prune
// removing only owned vnets and the zones left holding only them.
func TestSdnExamples(t *testing.T) {
	e := newEnv(t)
	e.write("sdn/zones.yaml", testvm.Example(t, "sdn/zones.yaml"))
	e.write("sdn/vnets.yaml", testvm.Example(t, "sdn/vnets.yaml"))
	// A container on the lab vnet waits for the SDN apply.
	if err := e.sim.AddVolume(pvesimVolume("local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst")); err != nil {
		t.Fatal(err)
	}
	e.write("ct.yaml", strings.Replace(testvm.Example(t, "containers/dns-01.yaml"), "bridge: vmbr0\n      ip: 10.0.0.53/24\n      gw: 10.0.0.1", "bridge: labnet\n      ip: 10.10.0.53/24\n      gw: 10.10.0.1", 1))
	eng := e.engine(engine.Options{})
	sdnExamplesAreCreatedWithOneApply(t, e, eng)
	sdnDriftIsCorrectedWithOneApply(t, e, eng)
	pruning := sdnObjectsOfOthersAreLeftAlone(t, e)
	sdnPruneRemovesOnlyOwnedObjects(t, e, pruning)
}

// The steps of TestSdnExamples, in order on one cluster holding
// examples/sdn and a container on the lab vnet.

func sdnExamplesAreCreatedWithOneApply(t *testing.T, e *env, eng *engine.Engine) {
	p := e.plan(eng)
	if p.Summary.Create != 7 {
		t.Fatalf("want 3 zones, 3 vnets and a container created:\n%s", planText(p))
	}
	ct := p.Find(engine.KindContainer, "dns-01")
	if !contains(ct.DependsOn, "SdnVnet/labnet") {
		t.Fatalf("the container depends on %v", ct.DependsOn)
	}
	e.sim.ResetRequests()
	e.mustApply(eng)
	if n := e.sim.RequestCountFor("PUT", "/cluster/sdn"); n != 1 {
		t.Fatalf("SDN applied %d times in one pass, want once", n)
	}
	e.requireInSync(eng)

	lab := sdnEntry(t, e, "zones", "lab")
	if lab.State != "" || lab.Config["type"] != "simple" || lab.Config["dhcp"] != "dnsmasq" || lab.Config["ipam"] != "pve" {
		t.Fatalf("zone lab = %+v", lab)
	}
	labnet := sdnEntry(t, e, "vnets", "labnet")
	if labnet.Config["alias"] != "Lab network (managed-by-proxmops)" || labnet.Config["zone"] != "lab" {
		t.Fatalf("vnet labnet = %+v", labnet)
	}
	sub := sdnEntry(t, e, "vnets/labnet/subnets", "lab-10.10.0.0-24")
	if sub.Config["gateway"] != "10.10.0.1" || sub.Config["snat"] != "1" || !strings.Contains(sub.Config["dhcp-range"], "10.10.0.100") {
		t.Fatalf("subnet = %+v", sub)
	}
	if k8s := sdnEntry(t, e, "vnets", "k8s"); k8s.Config["tag"] != "100000" {
		t.Fatalf("vnet k8s = %+v", k8s)
	}
}

// sdnDriftIsCorrectedWithOneApply: hand-made drift, applied by a person: a
// zone's MTU, a vnet's tag and a subnet's gateway.
func sdnDriftIsCorrectedWithOneApply(t *testing.T, e *env, eng *engine.Engine) {
	ctx := context.Background()
	must(t, e.client.SDNSet(ctx, "zones", "overlay", pve.NewParams().Set("mtu", "1400"), nil))
	must(t, e.client.SDNSet(ctx, "vnets", "iot", pve.NewParams().Set("tag", "31"), nil))
	must(t, e.client.SDNSet(ctx, "vnets/labnet/subnets", "lab-10.10.0.0-24", pve.NewParams().Set("gateway", "10.10.0.254"), []string{"snat"}))
	applySDN(t, e)
	p := e.plan(eng)
	text := planText(p)
	for _, want := range []string{"mtu: 1400 -> 1450", "tag: 31 -> 30", "subnet 10.10.0.0/24.gateway: 10.10.0.254 -> 10.10.0.1", "subnet 10.10.0.0/24.snat: 1"} {
		if !strings.Contains(text, want) {
			t.Errorf("plan lacks %q:\n%s", want, text)
		}
	}
	// A reason names what differs once per option or subnet, however
	// many of a subnet's keys differ.
	for name, want := range map[string]string{"iot": "tag differ from the manifest", "labnet": "subnet 10.10.0.0/24 differ from the manifest"} {
		if a := p.Find(engine.KindSdnVnet, name); a == nil {
			t.Errorf("vnet %s not planned", name)
		} else if r, _, _ := strings.Cut(a.Reason, ";"); r != want {
			t.Errorf("vnet %s: reason %q, want it to begin %q", name, a.Reason, want)
		}
	}
	e.sim.ResetRequests()
	e.mustApply(eng)
	if n := e.sim.RequestCountFor("PUT", "/cluster/sdn"); n != 1 {
		t.Fatalf("SDN applied %d times, want once", n)
	}
	e.requireInSync(eng)
}

// sdnObjectsOfOthersAreLeftAlone: objects proxmops does not own: a declared
// vnet of someone else is a Conflict; their zone that differs too; their
// pending change blocks the apply and is neither applied nor reverted. It
// returns the pruning engine it planned with.
func sdnObjectsOfOthersAreLeftAlone(t *testing.T, e *env) *engine.Engine {
	ctx := context.Background()
	must(t, e.client.SDNCreate(ctx, "zones", pve.NewParams().Set("zone", "theirs").Set("type", "simple")))
	must(t, e.client.SDNCreate(ctx, "vnets", pve.NewParams().Set("vnet", "guests").Set("zone", "theirs").Set("alias", "their vnet")))
	applySDN(t, e)
	e.write("sdn/theirs.yaml", `apiVersion: proxmops.dev/v1
kind: SdnZone
metadata:
  name: theirs
spec:
  type: simple
  mtu: 1400
---
apiVersion: proxmops.dev/v1
kind: SdnVnet
metadata:
  name: guests
spec:
  zone: theirs
`)
	pruning := e.engine(engine.Options{Prune: true})
	p := e.plan(pruning)
	if a := p.Find(engine.KindSdnZone, "theirs"); !a.Conflicted() || !strings.Contains(a.Reason, "Proxmox zones have no comment field") {
		t.Fatalf("want a conflict for zone theirs:\n%s", planText(p))
	}
	if a := p.Find(engine.KindSdnVnet, "guests"); !a.Conflicted() {
		t.Fatalf("want a conflict for vnet guests:\n%s", planText(p))
	}
	e.remove("sdn/theirs.yaml")
	must(t, e.client.SDNSet(ctx, "vnets", "guests", pve.NewParams().Set("alias", "renamed by hand"), nil))
	e.write("sdn/vnets.yaml", strings.Replace(testvm.Example(t, "sdn/vnets.yaml"), "alias: IoT VLAN", "alias: IoT devices", 1))
	p = e.plan(pruning)
	a := p.Find(engine.KindSdnVnet, "iot")
	if a.Status != vocab.StatusFailed || !strings.Contains(a.Reason, "vnet guests (changed)") {
		t.Fatalf("want the apply refused while someone else's change is pending:\n%s", planText(p))
	}
	if _, err := pruning.Apply(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	if g := sdnEntry(t, e, "vnets", "guests"); g.State != "changed" || g.Config["alias"] != "renamed by hand" {
		t.Fatalf("their pending change was applied or reverted: %+v", g)
	}
	applySDN(t, e)
	e.mustApply(pruning)
	if iot := sdnEntry(t, e, "vnets", "iot"); iot.Config["alias"] != "IoT devices (managed-by-proxmops)" || iot.State != "" {
		t.Fatalf("iot = %+v", iot)
	}
	e.requireInSync(pruning)
	return pruning
}

// sdnPruneRemovesOnlyOwnedObjects: the owned vnets and the zones holding
// only them go; the zone and vnet of someone else stay.
func sdnPruneRemovesOnlyOwnedObjects(t *testing.T, e *env, pruning *engine.Engine) {
	e.pruneRemoved(pruning, 7, "3 vnets, 3 zones and the container", "sdn/vnets.yaml", "sdn/zones.yaml", "ct.yaml")
	for _, id := range []string{"lab", "vlans", "overlay"} {
		if z := sdnEntry(t, e, "zones", id); z.ID != "" {
			t.Errorf("zone %s left: %+v", id, z)
		}
	}
	if z := sdnEntry(t, e, "zones", "theirs"); z.ID == "" || z.State != "" {
		t.Errorf("zone theirs: %+v", z)
	}
	if v := sdnEntry(t, e, "vnets", "guests"); v.ID == "" || v.State != "" {
		t.Errorf("vnet guests: %+v", v)
	}
	e.requireInSync(pruning)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
