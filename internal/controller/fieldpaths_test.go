package controller

import (
	"context"
	"testing"

	"github.com/proxmops/proxmops/internal/vocab"
)

// The detail of a Network carries the map from its Proxmox keys to its
// manifest fields, so the drawer puts bridge_ports on the spec.ports row;
// a guest's detail has none (its keys are its manifest's).
func TestNetworkDetailCarriesFieldPaths(t *testing.T) {
	sim, repo := simWithRepo(t, 0.1, "vmbr1", map[string]string{"net/vmbr1.yaml": `apiVersion: proxmops.dev/v1
kind: Network
metadata: {name: pve1-vmbr1, node: pve1}
spec: {type: bridge, iface: vmbr1, ports: [eno2], vlanAware: true, vlanIds: "2-4094", mtu: 1500, comments: guest VLAN trunk}
`, "vms/app.yaml": vmManifest("app", 410, 2)})
	e := newEnv(t, sim, repo, "").start()
	e.waitStatus("Network/pve1-vmbr1", vocab.StatusSynced)
	e.waitPasses(1) // the pass after the create reads the interface
	d, err := e.c.Resource(context.Background(), "Network", "pve1-vmbr1")
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"bridge_ports": "spec.ports", "bridge_vlan_aware": "spec.vlanAware", "bridge_vids": "spec.vlanIds", "mtu": "spec.mtu"} {
		if d.FieldPaths[k] != want {
			t.Errorf("fieldPaths[%s] = %q, want %q (all: %v)", k, d.FieldPaths[k], want, d.FieldPaths)
		}
	}
	// Every key it names is one the observed interface has.
	obs, _ := d.Observed.(map[string]any)
	iface, _ := obs["interface"].(map[string]string)
	for _, k := range []string{"bridge_ports", "bridge_vids", "bridge_vlan_aware", "mtu"} {
		if iface[k] == "" {
			t.Errorf("observed interface has no %s: %v", k, iface)
		}
	}
	e.waitStatus("VirtualMachine/app", vocab.StatusSynced)
	if g, _ := e.c.Resource(context.Background(), "VirtualMachine", "app"); g.FieldPaths != nil {
		t.Errorf("a guest's detail has fieldPaths %v", g.FieldPaths)
	}
}
