package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// The repository's Network examples: created and applied, in sync on the
// next plan, drift corrected, unowned interfaces and other people's staged
// changes left alone, prune removing only owned interfaces.
func TestNetworkExamples(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, f := range []string{"vmbr1.yaml", "pve3-bond0.yaml", "pve1-storage-vlan.yaml"} {
		e.write("net/"+f, testvm.Example(t, "network/"+f))
	}
	eng := e.engine(engine.Options{})
	p := e.plan(eng)
	if p.Summary.Create != 5 {
		t.Fatalf("want 5 interfaces created:\n%s", planText(p))
	}
	// The bridge over the bond waits for the bond; the VLAN for its bridge.
	if a := p.Find(engine.KindNetwork, "pve3-vmbr1"); len(a.DependsOn) != 1 || a.DependsOn[0] != "Network/pve3-bond0" {
		t.Fatalf("pve3-vmbr1 depends on %v", a.DependsOn)
	}
	if a := p.Find(engine.KindNetwork, "pve1-storage"); len(a.DependsOn) != 1 || a.DependsOn[0] != "Network/pve1-vmbr1" {
		t.Fatalf("pve1-storage depends on %v", a.DependsOn)
	}
	e.mustApply(eng)
	e.requireInSync(eng)

	st, err := e.client.NetworkConfig(ctx, "pve1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Changes != "" {
		t.Fatalf("changes left staged on pve1:\n%s", st.Changes)
	}
	br := st.Interface("vmbr1")
	if br == nil || br["bridge_ports"] != "eno2" || br["bridge_vlan_aware"] != "1" || br["mtu"] != "1500" ||
		br["comments"] != "guest VLAN trunk (managed-by-proxmops)" || br["active"] != "1" {
		t.Fatalf("vmbr1 = %v", br)
	}
	if v := st.Interface("vmbr1.40"); v == nil || v["cidr"] != "10.40.0.11/24" {
		t.Fatalf("vmbr1.40 = %v", v)
	}
	st3, _ := e.client.NetworkConfig(ctx, "pve3")
	if b := st3.Interface("bond0"); b == nil || b["bond_mode"] != "802.3ad" || b["slaves"] != "eno3 eno4" || b["bond_xmit_hash_policy"] != "layer3+4" {
		t.Fatalf("bond0 = %v", b)
	}

	// Hand-made drift: a changed MTU and a comment, applied by a person.
	if err := e.client.NetworkSet(ctx, "pve1", "vmbr1", pve.NewParams().Set("type", "bridge").Set("bridge_vids", "2-100").Set("bridge_vlan_aware", "1").Set("bridge_ports", "eno2").Set("mtu", "1500").
		Set("comments", "guest VLAN trunk (managed-by-proxmops) edited"), nil); err != nil {
		t.Fatal(err)
	}
	applyNet(t, e, "pve1")
	p = e.plan(eng)
	a := p.Find(engine.KindNetwork, "pve1-vmbr1")
	if a.Action != vocab.ActionUpdate || !strings.Contains(planText(p), "bridge_vids: 2-100 -> 2-4094") || !strings.Contains(planText(p), "comments: guest VLAN trunk edited -> guest VLAN trunk") {
		t.Fatalf("want the drift corrected:\n%s", planText(p))
	}
	e.mustApply(eng)
	e.requireInSync(eng)

	// An interface proxmops does not own, declared: a Conflict, untouched.
	e.write("net/vmbr0.yaml", `apiVersion: proxmops.dev/v1
kind: Network
metadata:
  name: pve2-vmbr0
  node: pve2
spec:
  type: bridge
  iface: vmbr0
  ports: [eno1]
  mtu: 9000
`)
	pruning := e.engine(engine.Options{Prune: true})
	p = e.plan(pruning)
	if a := p.Find(engine.KindNetwork, "pve2-vmbr0"); !a.Conflicted() || !strings.Contains(a.Reason, "proxmops does not own it") {
		t.Fatalf("want a conflict for vmbr0:\n%s", planText(p))
	}
	e.remove("net/vmbr0.yaml")

	// Someone else's staged change: the node is left alone, nothing applied
	// or reverted.
	if err := e.client.NetworkCreate(ctx, "pve2", pve.NewParams().Set("iface", "vmbr9").Set("type", "bridge")); err != nil {
		t.Fatal(err)
	}
	e.write("net/vmbr1.yaml", strings.Replace(testvm.Example(t, "network/vmbr1.yaml"), "comments: guest VLAN trunk\n---", "comments: trunk\n---", 2))
	p = e.plan(eng)
	a = p.Find(engine.KindNetwork, "pve2-vmbr1")
	if a.Status != vocab.StatusFailed || !strings.Contains(a.Reason, "node pve2 has network changes staged but not applied") {
		t.Fatalf("want pve2 left alone:\n%s", planText(p))
	}
	if _, err := eng.Apply(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	st2, _ := e.client.NetworkConfig(ctx, "pve2")
	if st2.Changes == "" || st2.Interface("vmbr9") == nil {
		t.Fatal("the staged change of someone else was applied or reverted")
	}
	if err := e.client.NetworkRevert(ctx, "pve2"); err != nil {
		t.Fatal(err)
	}
	e.mustApply(eng)
	e.requireInSync(eng)

	// Prune: only owned interfaces go, in an order Proxmox accepts.
	e.remove("net/pve1-storage-vlan.yaml")
	p = e.plan(eng)
	if a := p.Find(engine.KindNetwork, "pve1-vmbr1-40"); a == nil || a.Status != vocab.StatusOutOfSync || a.Action != vocab.ActionNone {
		t.Fatalf("prune off: want vmbr1.40 reported and kept:\n%s", planText(p))
	}
	e.mustApply(pruning)
	st, _ = e.client.NetworkConfig(ctx, "pve1")
	if st.Interface("vmbr1.40") != nil || st.Interface("vmbr1") == nil || st.Interface("vmbr0") == nil {
		t.Fatalf("after prune: %v", st.Interfaces)
	}
	e.requireInSync(pruning)
}

// applyNet applies a node's staged network changes as a person would.
func applyNet(t *testing.T, e *env, node string) {
	t.Helper()
	upid, err := e.client.NetworkApply(context.Background(), node)
	if err == nil {
		_, err = e.client.WaitTask(context.Background(), upid, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
}

const pve1Bridge = `apiVersion: proxmops.dev/v1
kind: Network
metadata:
  name: pve1-BR
  node: pve1
spec:
  type: bridge
  iface: BR
  ports: [eno2]
  vlanAware: true
  comments: guest VLAN trunk
`

// TestFailedNetworkReloadIsAppliedNextPass fails the reload after proxmops
// staged a new bridge: GET /nodes/{node}/network then lists the bridge as
// declared (the staged interfaces.new) but not active. The next pass must
// apply proxmops' own staged change, not call the bridge in sync; a
// proxmops that did not stage it never calls it in sync either.
func TestFailedNetworkReloadIsAppliedNextPass(t *testing.T) {
	e, eng := withManifests(t, engine.Options{}, "net/br.yaml", strings.ReplaceAll(pve1Bridge, "BR", "vmbr1"))
	ctx := context.Background()
	e.sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultError, Method: "PUT", Path: "/nodes/pve1/network"})
	if _, rep := e.apply(eng); rep.Failed != 1 {
		t.Fatalf("want the reload to fail: %+v", rep.Results)
	}
	st, err := e.client.NetworkConfig(ctx, "pve1")
	if err != nil {
		t.Fatal(err)
	}
	if br := st.Interface("vmbr1"); br == nil || br["active"] == "1" || st.Changes == "" {
		t.Fatalf("want vmbr1 staged, not active: %v (changes %q)", br, st.Changes)
	}
	if a := e.plan(e.engine(engine.Options{})).Find(engine.KindNetwork, "pve1-vmbr1"); a.Status == vocab.StatusSynced {
		t.Errorf("a fresh proxmops calls the staged, inactive vmbr1 in sync: %s", a.Reason)
	}
	p := e.plan(eng)
	assertPlanned(t, p, engine.KindNetwork, "pve1-vmbr1", vocab.ActionUpdate, "not applied")
	e.mustApply(eng)
	e.requireInSync(eng)
	st, _ = e.client.NetworkConfig(ctx, "pve1")
	if br := st.Interface("vmbr1"); br == nil || br["active"] != "1" || st.Changes != "" {
		t.Fatalf("vmbr1 not applied: %v (changes %q)", br, st.Changes)
	}
}
