package pvesim

import (
	"net/url"
	"slices"
	"testing"
)

// srvreloadOf returns the UPID of a node's newest srvreload task.
func srvreloadOf(t *testing.T, c *client, node string) string {
	t.Helper()
	l := c.mustOK("GET", "/nodes/"+node+"/tasks", vals("typefilter", "srvreload", "source", "all")).list(t)
	if len(l) == 0 {
		t.Fatalf("%s has no srvreload task", node)
	}
	return l[0]["upid"].(string)
}

// A vnet becomes a bridge on a node when that node's srvreload task ends,
// not when PUT /cluster/sdn or its reloadnetworkall task ends: a guest
// started there before fails as QEMU's bridge script does.
func TestSDNVnetIsABridgeOnlyAfterItsNodeReloaded(t *testing.T) {
	srv, c := newSim(t, Options{Nodes: 2, TaskSpeed: 0.01})
	c.mustOK("POST", "/cluster/sdn/zones", vals("zone", "flat", "type", "simple"))
	c.mustOK("POST", "/cluster/sdn/vnets", vals("vnet", "vnet10", "zone", "flat"))
	for _, n := range []string{"pve1", "pve2"} {
		vmid := map[string]string{"pve1": "101", "pve2": "102"}[n]
		mustTaskOK(t, c, "POST", "/nodes/"+n+"/qemu", vals("vmid", vmid, "net0", "virtio,bridge=vnet10"))
	}
	release := srv.HoldNetworkReload("pve2")
	defer release()
	apply := c.mustOK("PUT", "/cluster/sdn", nil).str(t)
	if st := c.waitTask(apply); st != "OK" {
		t.Fatalf("apply: %s", st)
	}
	log := taskLog(c, apply)
	if !slices.Contains(log, "pve1: reloading network config") || !slices.Contains(log, "pve2: reloading network config") {
		t.Errorf("apply log %q", log)
	}
	r1, r2 := srvreloadOf(t, c, "pve1"), srvreloadOf(t, c, "pve2")
	if info, _ := ParseUPID(r2); info.User != "root@pam" || info.ID != "networking" {
		t.Errorf("srvreload %s: want networking, started by pvesh as root@pam", r2)
	}
	if st := c.waitTask(r1); st != "OK" {
		t.Fatalf("pve1 reload: %s", st)
	}
	if st := c.task("POST", "/nodes/pve1/qemu/101/status/start", nil); st != "OK" {
		t.Errorf("start on pve1 after its reload: %s", st)
	}
	upid := c.mustOK("POST", "/nodes/pve2/qemu/102/status/start", nil).str(t)
	if st := c.waitTask(upid); st != "start failed: QEMU exited with code 1" || !slices.Contains(taskLog(c, upid), "bridge 'vnet10' does not exist") {
		t.Errorf("start on pve2 before its reload: %s %q", st, taskLog(c, upid))
	}
	release()
	if st := c.waitTask(r2); st != "OK" {
		t.Fatalf("pve2 reload: %s", st)
	}
	if st := c.task("POST", "/nodes/pve2/qemu/102/status/start", nil); st != "OK" {
		t.Errorf("start on pve2 after its reload: %s", st)
	}
}

// A node whose ifreload fails keeps the bridges it had: its srvreload
// task fails, the other nodes have the vnet.
func TestSDNFailedNodeReloadLeavesTheVnetAbsentThere(t *testing.T) {
	srv, c := newSim(t, Options{Nodes: 2})
	c.mustOK("POST", "/cluster/sdn/zones", vals("zone", "flat", "type", "simple"))
	c.mustOK("POST", "/cluster/sdn/vnets", vals("vnet", "vnet10", "zone", "flat"))
	srv.FailNetworkReload("pve2", "error: vnet10: bridge port missing")
	mustTaskOK(t, c, "PUT", "/cluster/sdn", nil)
	r2 := srvreloadOf(t, c, "pve2")
	if st := c.waitTask(r2); st != "command 'ifreload -a' failed: exit code 1" || !slices.Contains(taskLog(c, r2), "error: vnet10: bridge port missing") {
		t.Errorf("pve2 reload: %s %q", st, taskLog(c, r2))
	}
	for node, want := range map[string]string{"pve1": "OK", "pve2": "start failed: QEMU exited with code 1"} {
		vmid := map[string]string{"pve1": "101", "pve2": "102"}[node]
		c.task("POST", "/nodes/"+node+"/qemu", vals("vmid", vmid, "net0", "virtio,bridge=vnet10"))
		if st := c.task("POST", "/nodes/"+node+"/qemu/"+vmid+"/status/start", nil); st != want {
			t.Errorf("start on %s: %q, want %q", node, st, want)
		}
	}
	// The next reload of the node (here its own network apply) brings it up.
	c.task("PUT", "/nodes/pve2/network", nil)
	if st := c.task("POST", "/nodes/pve2/qemu/102/status/start", nil); st != "OK" {
		t.Errorf("start on pve2 after a good reload: %s", st)
	}
}

// The SDN configuration lock (pve-network lock_sdn_config and the lock,
// release_lock, reload and rollback methods of API2/Network/SDN.pm).
func TestSDNConfigurationLock(t *testing.T) {
	srv, c := newSim(t, Options{})
	const at = " at /usr/share/perl5/PVE/Network/SDN.pm line 291."
	c.mustOK("POST", "/cluster/sdn/zones", vals("zone", "flat", "type", "simple"))
	if r := c.do("POST", "/cluster/sdn/lock", nil); r.Status != 500 ||
		r.Reason != "could not acquire lock for SDN config: configuration has pending changes at /usr/share/perl5/PVE/API2/Network/SDN.pm line 149." {
		t.Errorf("lock with pending changes: %d %q", r.Status, r.Reason)
	}
	token := c.mustOK("POST", "/cluster/sdn/lock", vals("allow-pending", "1")).str(t)
	if len(token) != 36 || token[14] != '7' || srv.SDNLockToken() != token {
		t.Fatalf("token %q", token)
	}
	refusals := []struct {
		name, method, path string
		params             url.Values
		reason             string
	}{
		{"second lock", "POST", "/cluster/sdn/lock", vals("allow-pending", "1"), "could not acquire lock for SDN config: invalid lock token provided!" + at},
		{"zone create", "POST", "/cluster/sdn/zones", vals("zone", "z2", "type", "simple"), "create sdn zone object failed: invalid lock token provided!" + at},
		{"zone update, wrong token", "PUT", "/cluster/sdn/zones/flat", vals("mtu", "1400", "lock-token", "nope"), "update sdn zone object failed: invalid lock token provided!" + at},
		{"zone delete", "DELETE", "/cluster/sdn/zones/flat", nil, "delete sdn zone object failed: invalid lock token provided!" + at},
		{"vnet create", "POST", "/cluster/sdn/vnets", vals("vnet", "v1", "zone", "flat"), "create sdn vnet object failed: invalid lock token provided!" + at},
		{"apply", "PUT", "/cluster/sdn", nil, "could not commit SDN config: invalid lock token provided!" + at},
		{"rollback", "POST", "/cluster/sdn/rollback", nil, "could not rollback SDN configuration: invalid lock token provided!" + at},
		{"release", "DELETE", "/cluster/sdn/lock", vals("lock-token", "nope"), "could not release lock: invalid lock token provided!" + at},
	}
	for _, tt := range refusals {
		if r := c.do(tt.method, tt.path, tt.params); r.Status != 500 || r.Reason != tt.reason {
			t.Errorf("%s: %d %q, want 500 %q", tt.name, r.Status, r.Reason, tt.reason)
		}
	}
	// The holder writes with its token; apply releases the lock by default.
	c.mustOK("POST", "/cluster/sdn/vnets", vals("vnet", "v1", "zone", "flat", "lock-token", token))
	c.mustOK("POST", "/cluster/sdn/vnets/v1/subnets", vals("subnet", "10.0.9.0/24", "type", "subnet", "lock-token", token))
	if st := c.task("PUT", "/cluster/sdn", vals("lock-token", token, "release-lock", "0")); st != "OK" || srv.SDNLockToken() != token {
		t.Fatalf("apply keeping the lock: %s, lock %q", st, srv.SDNLockToken())
	}
	c.mustOK("PUT", "/cluster/sdn/vnets/v1", vals("alias", "x", "lock-token", token))
	c.mustOK("POST", "/cluster/sdn/rollback", vals("lock-token", token, "release-lock", "0"))
	if v := c.mustOK("GET", "/cluster/sdn/vnets/v1", nil).obj(t); v["alias"] != nil || srv.SDNLockToken() != token {
		t.Errorf("after rollback: %v, lock %q", v, srv.SDNLockToken())
	}
	if st := c.task("PUT", "/cluster/sdn", vals("lock-token", token)); st != "OK" || srv.SDNLockToken() != "" {
		t.Fatalf("apply releasing the lock: %s, lock %q", st, srv.SDNLockToken())
	}
	// Unlocked: any token passes (lock_sdn_config checks only an existing lock).
	c.mustOK("PUT", "/cluster/sdn/zones/flat", vals("mtu", "1400", "lock-token", "stale"))
	c.task("PUT", "/cluster/sdn", nil)
	token = c.mustOK("POST", "/cluster/sdn/lock", nil).str(t)
	c.mustOK("DELETE", "/cluster/sdn/lock", vals("lock-token", token))
	c.mustOK("POST", "/cluster/sdn/lock", nil)
	c.mustOK("DELETE", "/cluster/sdn/lock", vals("force", "1"))
	if srv.SDNLockToken() != "" {
		t.Errorf("lock %q after a forced release", srv.SDNLockToken())
	}
	if z := c.mustOK("GET", "/cluster/sdn/zones/flat", vals("running", "1")).obj(t); z["mtu"] != float64(1400) {
		t.Errorf("zone written with a stale token while unlocked: %v", z)
	}
}
