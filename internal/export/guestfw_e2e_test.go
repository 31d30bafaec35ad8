package export_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/export"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// An exported guest's manifest declares the firewall options and rules it
// has (spec.firewall), none for a guest whose firewall has neither; the
// first sync only adopts the guests, and the plan after it is in sync,
// so the firewall is proxmops' from then on: a change by hand is put back.
func TestExportWritesTheGuestFirewallAndAdoptsIt(t *testing.T) {
	c := newCluster(t)
	c.call("POST", "/nodes/pve1/qemu", "vmid", "100", "name", "web", "cores", "1", "memory", "512", "net0", "virtio,bridge=vmbr0,firewall=1")
	c.call("PUT", "/nodes/pve1/qemu/100/firewall/options", "enable", "1", "policy_in", "DROP", "macfilter", "0", "log_level_in", "info")
	c.call("POST", "/cluster/firewall/groups", "group", "webserver")
	c.call("POST", "/nodes/pve1/qemu/100/firewall/rules", "type", "in", "action", "ACCEPT", "proto", "tcp", "dport", "8080", "enable", "0", "comment", "later")
	c.call("POST", "/nodes/pve1/qemu/100/firewall/rules", "type", "group", "action", "webserver", "enable", "1")
	c.call("POST", "/nodes/pve1/qemu", "vmid", "101", "name", "plain", "cores", "1", "memory", "512")
	if err := c.sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: ctTemplate, Size: 120 << 20}); err != nil {
		t.Fatal(err)
	}
	c.call("POST", "/nodes/pve1/lxc", "vmid", "200", "hostname", "db", "ostemplate", ctTemplate, "rootfs", "local-lvm:2")
	c.call("PUT", "/nodes/pve1/lxc/200/firewall/options", "ipfilter", "1", "ndp", "0")
	res := export1(t, c, export.Options{All: true})
	fileWith(t, res, "vms/web.yaml", []string{"firewall:\n    enabled: true\n    policyIn: DROP\n    macfilter: false\n    logLevelIn: info\n",
		"    rules:\n      - type: group\n        action: webserver\n      - type: in\n        action: ACCEPT\n        proto: tcp\n        dport: \"8080\"\n        enable: false\n        comment: later\n"}...)
	if y := file(t, res, "vms/plain.yaml"); strings.Contains(y, "  firewall:") {
		t.Errorf("vms/plain.yaml declares a firewall it does not have:\n%s", y)
	}
	if y := file(t, res, "containers/db.yaml"); !strings.Contains(y, "firewall:\n    ipfilter: true\n    ndp: false\n") {
		t.Errorf("containers/db.yaml lacks its firewall:\n%s", y)
	}

	ad := adopt(t, c, res)
	ctx := context.Background()
	p := ad.plan()
	for _, a := range p.Actions {
		if len(a.Changes) != 1 || a.Changes[0].Field != "tags" {
			t.Errorf("%s plans more than its adoption: %+v", a.Key(), a.Changes)
		}
	}
	ad.applyInSync(p)
	c.call("PUT", "/nodes/pve1/qemu/100/firewall/options", "policy_in", "ACCEPT")
	if err := c.client.Delete(ctx, "nodes/pve1/qemu/100/firewall/rules/1", nil, nil); err != nil {
		t.Fatal(err)
	}
	a := ad.plan().Find(engine.KindVirtualMachine, "web")
	if a.Action != vocab.ActionUpdate || len(a.Changes) != 2 || a.Changes[0].Path != "spec.firewall.rules[1]" || a.Changes[1].Path != "spec.firewall.policyIn" || a.Changes[1].From != "ACCEPT" {
		t.Fatalf("hand change after the adoption: %s %+v", a.Action, a.Changes)
	}
}
