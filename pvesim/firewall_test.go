package pvesim

import (
	"strings"
	"testing"
)

// A guest's firewall options read back as pve-firewall's get_options
// answers them (booleans as integers, a digest), a clone copies them, a
// destroy removes them, and set_options refuses an unknown deletion, a
// stale digest and a token without VM.Config.Network.
func TestFirewallOptionsReadBackCloneAndDestroy(t *testing.T) {
	_, c := newSim(t, Options{})
	createVM(t, c, "140")
	base := "/nodes/pve1/qemu/140/firewall/options"
	empty := c.mustOK("GET", base, nil).obj(t)
	if len(empty) != 1 || empty["digest"] == "" {
		t.Fatalf("options of a guest without a firewall file: %v", empty)
	}
	c.mustOK("PUT", base, vals("enable", "1", "policy_in", "DROP", "log_level_in", "nolog", "macfilter", "0"))
	got := c.mustOK("GET", base, nil).obj(t)
	for k, want := range map[string]any{"enable": 1.0, "policy_in": "DROP", "log_level_in": "nolog", "macfilter": 0.0} {
		if got[k] != want {
			t.Errorf("%s reads back %v (%T), want %v", k, got[k], got[k], want)
		}
	}
	if got["digest"] == empty["digest"] {
		t.Error("the digest did not change")
	}
	if r := c.do("PUT", base, vals("delete", "bogus")); r.Status != 400 || !strings.Contains(string(r.Body), "no such option 'bogus'") {
		t.Errorf("unknown deletion: %d %s", r.Status, r.Body)
	}
	if r := c.do("PUT", base, vals("enable", "0", "digest", empty["digest"].(string))); r.Status != 500 || !strings.Contains(r.Reason, "detected modified configuration") {
		t.Errorf("stale digest: %d %s", r.Status, r.Reason)
	}
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/140/clone", vals("newid", "141", "full", "1"))
	if cl := c.mustOK("GET", "/nodes/pve1/qemu/141/firewall/options", nil).obj(t); cl["digest"] != got["digest"] {
		t.Errorf("the clone's options %v, want the source's %v", cl, got)
	}
	mustTaskOK(t, c, "DELETE", "/nodes/pve1/qemu/140", nil)
	if after := c.mustOK("GET", base, nil).obj(t); len(after) != 1 {
		t.Errorf("options after the destroy: %v", after)
	}

	limited := startSim(t, Options{TokenPrivileges: []string{"VM.Audit", "VM.Allocate", "VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "Datastore.AllocateSpace", "SDN.Use"}})
	lc := newClient(t, limited)
	if r := lc.do("PUT", base, vals("enable", "1")); r.Status != 403 {
		t.Errorf("without VM.Config.Network: %d %s", r.Status, r.Body)
	}
}
