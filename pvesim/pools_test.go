package pvesim

import (
	"reflect"
	"testing"
	"time"
)

// poolMembers reads a pool's members through GET /pools?poolid= as
// "type id" strings, in the order Proxmox lists them.
func poolMembers(t *testing.T, c *client, pool string, extra ...string) []string {
	t.Helper()
	list := c.mustOK("GET", "/pools", vals(append([]string{"poolid", pool}, extra...)...)).list(t)
	if len(list) != 1 || list[0]["poolid"] != pool {
		t.Fatalf("GET /pools?poolid=%s: %v", pool, list)
	}
	out := []string{}
	for _, m := range list[0]["members"].([]any) {
		e := m.(map[string]any)
		out = append(out, e["type"].(string)+" "+e["id"].(string))
	}
	return out
}

func TestPoolsStartEmptyAndAreCreatedThroughTheAPI(t *testing.T) {
	srv, c := newSim(t, Options{})
	if got := c.mustOK("GET", "/pools", nil).list(t); len(got) != 0 {
		t.Fatalf("a new cluster has pools: %v", got)
	}
	c.mustOK("POST", "/pools", vals("poolid", "prod", "comment", "production guests"))
	c.mustOK("POST", "/pools", vals("poolid", "dev"))
	c.mustOK("POST", "/pools", vals("poolid", "dev/team-a"))
	got := c.mustOK("GET", "/pools", nil).list(t)
	want := []map[string]any{{"poolid": "dev"}, {"poolid": "dev/team-a"}, {"poolid": "prod", "comment": "production guests"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GET /pools = %v, want %v", got, want)
	}
	// The deprecated per-pool path answers the index's one entry.
	one := c.mustOK("GET", "/pools/prod", nil).obj(t)
	if one["poolid"] != "prod" || one["comment"] != "production guests" || len(one["members"].([]any)) != 0 {
		t.Fatalf("GET /pools/prod = %v", one)
	}
	c.mustOK("PUT", "/pools", vals("poolid", "prod", "comment", "changed"))
	c.mustOK("PUT", "/pools/dev", vals("comment", "by path"))
	if got := c.mustOK("GET", "/pools", vals("poolid", "prod")).list(t)[0]["comment"]; got != "changed" {
		t.Errorf("comment after PUT /pools: %v", got)
	}
	if got := c.mustOK("GET", "/pools/dev", nil).obj(t)["comment"]; got != "by path" {
		t.Errorf("comment after PUT /pools/dev: %v", got)
	}
	// bpg's client deletes with the poolid in the query.
	c.mustOK("DELETE", "/pools", vals("poolid", "dev/team-a"))
	c.mustOK("DELETE", "/pools/dev", nil)
	if got := c.mustOK("GET", "/pools", nil).list(t); len(got) != 1 {
		t.Fatalf("after deletes: %v", got)
	}
	// Pools are part of the saved state.
	srv2 := reloaded(t, srv)
	if got := newClient(t, srv2).mustOK("GET", "/pools", nil).list(t); len(got) != 1 || got[0]["comment"] != "changed" {
		t.Fatalf("pools after LoadState: %v", got)
	}
}

func TestPoolRequestsAreRefusedAsProxmoxRefusesThem(t *testing.T) {
	srv, c := newSim(t, Options{})
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu", vals("vmid", "100", "scsi0", "local-lvm:1"))
	c.mustOK("POST", "/pools", vals("poolid", "prod"))
	c.mustOK("POST", "/pools", vals("poolid", "dev"))
	c.mustOK("POST", "/pools", vals("poolid", "dev/a"))
	c.mustOK("POST", "/pools", vals("poolid", "store"))
	c.mustOK("PUT", "/pools", vals("poolid", "prod", "vms", "100"))
	c.mustOK("PUT", "/pools", vals("poolid", "store", "storage", "local"))
	tests := []requestCase{
		{"type without poolid", "GET", "/pools", vals("type", "qemu"), 400, "Parameter verification failed.",
			map[string]string{"poolid": "missing property required by 'type'"}},
		{"unknown pool read", "GET", "/pools", vals("poolid", "nope"), 500, "pool 'nope' does not exist", nil},
		{"unknown pool read by path", "GET", "/pools/nope", nil, 500, "pool 'nope' does not exist", nil},
		{"invalid characters", "POST", "/pools", vals("poolid", "a b"), 400, "Parameter verification failed.",
			map[string]string{"poolid": "invalid format - pool name 'a b' contains invalid characters\n"}},
		{"nested too deeply", "POST", "/pools", vals("poolid", "a/b/c/d"), 400, "Parameter verification failed.",
			map[string]string{"poolid": "invalid format - pool name 'a/b/c/d' nested too deeply (max levels = 3)\n"}},
		{"existing pool", "POST", "/pools", vals("poolid", "prod"), 500, "create pool failed: pool 'prod' already exists", nil},
		{"missing parent", "POST", "/pools", vals("poolid", "x/y"), 500, "create pool failed: parent 'x' of pool 'x/y' does not exist", nil},
		{"name not starting with a letter", "POST", "/pools", vals("poolid", "1st"), 500, "create pool failed: pool name must start with a letter", nil},
		{"child not starting with a letter", "POST", "/pools", vals("poolid", "dev/_b"), 500, "create pool failed: pool name must start with a letter", nil},
		{"update of an unknown pool", "PUT", "/pools", vals("poolid", "nope", "vms", "100"), 500, "update pools failed: pool 'nope' does not exist", nil},
		{"guest already a member", "PUT", "/pools", vals("poolid", "prod", "vms", "100"), 500, "update pools failed: VM 100 is already a pool member", nil},
		{"guest in another pool", "PUT", "/pools", vals("poolid", "dev", "vms", "100"), 500,
			"update pools failed: VM 100 belongs already to pool 'prod' and 'allow-move' is not set", nil},
		{"removing a non-member", "PUT", "/pools", vals("poolid", "dev", "vms", "100", "delete", "1"), 500, "update pools failed: VM 100 is not a pool member", nil},
		{"storage already a member", "PUT", "/pools/store", vals("storage", "local"), 500, "update pools failed: Storage 'local' is already a pool member", nil},
		{"removing a storage non-member", "PUT", "/pools", vals("poolid", "dev", "storage", "local", "delete", "1"), 500,
			"update pools failed: Storage 'local' is not a pool member", nil},
		{"bad vmid list", "PUT", "/pools", vals("poolid", "dev", "vms", "100,abc"), 400, "Parameter verification failed.",
			map[string]string{"vms": "invalid format - value does not look like a valid VM ID\n"}},
		{"deleting a pool with a guest", "DELETE", "/pools", vals("poolid", "prod"), 500, "delete pool failed: pool 'prod' is not empty (contains VM 100)", nil},
		{"deleting a pool with a child", "DELETE", "/pools", vals("poolid", "dev"), 500, "delete pool failed: pool 'dev' is not empty (contains pool 'dev/a')", nil},
		{"deleting a pool with a storage", "DELETE", "/pools/store", nil, 500, "delete pool failed: pool 'store' is not empty (contains storage 'local')", nil},
		{"deleting an unknown pool", "DELETE", "/pools", vals("poolid", "nope"), 500, "delete pool failed: pool 'nope' does not exist", nil},
		{"create into an unknown pool", "POST", "/nodes/pve1/qemu", vals("vmid", "101", "pool", "nope"), 403,
			"Permission check failed (pool 'nope' does not exist)", nil},
		{"clone into an unknown pool", "POST", "/nodes/pve1/qemu/100/clone", vals("newid", "101", "pool", "nope"), 403,
			"Permission check failed (pool 'nope' does not exist)", nil},
		{"container clone into an unknown pool", "POST", "/nodes/pve1/lxc/200/clone", vals("newid", "201", "pool", "nope"), 403,
			"Permission check failed (pool 'nope' does not exist)", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.do(tt.method, tt.path, tt.params).want(t, tt.status, tt.reason, tt.errors)
		})
	}
	// A refused update changes nothing, not even the members listed before
	// the one that failed.
	c.mustOK("POST", "/pools", vals("poolid", "more"))
	c.do("PUT", "/pools", vals("poolid", "more", "comment", "x", "vms", "101,100"))
	if got := c.mustOK("GET", "/pools/more", nil).obj(t); got["comment"] != nil || len(got["members"].([]any)) != 0 {
		t.Errorf("a refused update changed the pool: %v", got)
	}
	if _, ok := srv.Guest(101); ok {
		t.Errorf("a refused create or clone left VM 101")
	}
}

func TestGuestsJoinPoolsOnCreateAndCloneAndLeaveOnDestroy(t *testing.T) {
	clock := NewFakeClock(time.Unix(1_750_000_000, 0))
	srv, c := lxcSim(t, Options{Clock: clock})
	c.mustOK("POST", "/pools", vals("poolid", "prod"))
	c.mustOK("POST", "/pools", vals("poolid", "other"))
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu", vals("vmid", "100", "scsi0", "local-lvm:1", "pool", "prod"))
	c.mustOK("POST", "/nodes/pve1/qemu/100/template", nil)
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/100/clone", vals("newid", "1000", "name", "web", "pool", "prod"))
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/100/clone", vals("newid", "101"))
	createCT(t, c, "200", "pool", "prod")
	mustTaskOK(t, c, "POST", "/nodes/pve1/lxc/200/clone", vals("newid", "201", "pool", "other"))
	// Guests that do not exist can be added and are not listed.
	c.mustOK("PUT", "/pools", vals("poolid", "prod", "vms", "9999", "storage", "local-lvm,gone"))

	// Members: guests by VMID as strings sort, then storages on the answering node.
	want := []string{"qemu qemu/100", "qemu qemu/1000", "lxc lxc/200", "storage storage/pve1/local-lvm"}
	if got := poolMembers(t, c, "prod"); !reflect.DeepEqual(got, want) {
		t.Fatalf("members of prod = %v, want %v", got, want)
	}
	for typ, want := range map[string][]string{
		"qemu":    {"qemu qemu/100", "qemu qemu/1000"},
		"lxc":     {"lxc lxc/200"},
		"storage": {"storage storage/pve1/local-lvm"},
	} {
		if got := poolMembers(t, c, "prod", "type", typ); !reflect.DeepEqual(got, want) {
			t.Errorf("members of prod of type %s = %v, want %v", typ, got, want)
		}
	}
	if got := poolMembers(t, c, "other"); !reflect.DeepEqual(got, []string{"lxc lxc/201"}) {
		t.Errorf("members of other = %v", got)
	}
	// A guest's figures come from pvestatd's report (extract_vm_stats), as
	// in /cluster/resources: before it, only the vmlist's part.
	m := c.mustOK("GET", "/pools/prod", nil).obj(t)["members"].([]any)[1].(map[string]any)
	want1000 := map[string]any{"id": "qemu/1000", "vmid": float64(1000), "node": "pve1", "type": "qemu", "status": "unknown"}
	if !reflect.DeepEqual(m, want1000) {
		t.Errorf("guest member before pvestatd's report = %v, want %v", m, want1000)
	}
	srv.MutateGuest(1000, func(conf map[string]string) { conf["tags"], conf["lock"] = "t1", "backup" })
	clock.Advance(DefaultStatusInterval)
	m = c.mustOK("GET", "/pools/prod", nil).obj(t)["members"].([]any)[1].(map[string]any)
	if m["name"] != "web" || m["status"] != "stopped" || m["template"] != float64(0) || m["maxdisk"] != float64(1<<30) {
		t.Errorf("guest member after the report = %v", m)
	}
	for _, k := range []string{"lock", "tags", "hastate"} {
		if _, ok := m[k]; ok {
			t.Errorf("guest member has %s (Cluster.pm adds it to /cluster/resources only): %v", k, m)
		}
	}
	srv.MutateGuest(1000, func(conf map[string]string) { delete(conf, "lock") })

	// /cluster/resources: the pools first, then "pool" on their guests.
	res := c.mustOK("GET", "/cluster/resources", nil).list(t)
	if res[0]["id"] != "/pool/other" || res[0]["type"] != "pool" || res[1]["id"] != "/pool/prod" || res[1]["pool"] != "prod" {
		t.Fatalf("resources start with %v %v", res[0], res[1])
	}
	pools := map[string]any{}
	for _, r := range res {
		if r["vmid"] != nil {
			pools[r["id"].(string)] = r["pool"]
		}
	}
	wantPools := map[string]any{"qemu/100": "prod", "qemu/1000": "prod", "qemu/101": nil, "lxc/200": "prod", "lxc/201": "other"}
	if !reflect.DeepEqual(pools, wantPools) {
		t.Errorf("pool of each guest = %v, want %v", pools, wantPools)
	}
	for _, typ := range []string{"vm", "node", "storage", "sdn"} {
		for _, r := range c.mustOK("GET", "/cluster/resources", vals("type", typ)).list(t) {
			if r["type"] == "pool" {
				t.Errorf("type=%s lists a pool: %v", typ, r)
			}
		}
	}

	// allow-move takes a guest from its pool.
	c.mustOK("PUT", "/pools", vals("poolid", "other", "vms", "1000", "allow-move", "1"))
	if got := poolMembers(t, c, "other", "type", "qemu"); !reflect.DeepEqual(got, []string{"qemu qemu/1000"}) {
		t.Errorf("other after the move = %v", got)
	}
	if got := poolMembers(t, c, "prod", "type", "qemu"); !reflect.DeepEqual(got, []string{"qemu qemu/100"}) {
		t.Errorf("prod after the move = %v", got)
	}

	// Destroying a guest takes it out of its pool: the pool empties and can go.
	for _, p := range []string{"/nodes/pve1/qemu/1000", "/nodes/pve1/lxc/201"} {
		if st := c.task("DELETE", p, nil); st != "OK" {
			t.Fatal(p, st)
		}
	}
	c.mustOK("DELETE", "/pools", vals("poolid", "other"))
	// A later guest with a destroyed member's VMID is not in any pool.
	mustTaskOK(t, c, "POST", "/nodes/pve1/lxc/200/clone", vals("newid", "1000"))
	c.mustOK("POST", "/pools", vals("poolid", "other"))
	if got := poolMembers(t, c, "other"); len(got) != 0 {
		t.Errorf("a recreated pool has members %v", got)
	}
	// Removing members, then deleting: guests and storages that no longer
	// exist (9999, "gone") do not keep the pool.
	c.mustOK("PUT", "/pools", vals("poolid", "prod", "vms", "100;200", "storage", "local-lvm", "delete", "1"))
	c.mustOK("DELETE", "/pools", vals("poolid", "prod"))
}

func TestPoolStatsSumRunningMembersInClusterResources(t *testing.T) {
	clock := NewFakeClock(time.Unix(1_750_000_000, 0))
	srv, c := newSim(t, Options{Clock: clock})
	c.mustOK("POST", "/pools", vals("poolid", "p"))
	for _, g := range []GuestSpec{
		{VMID: 100, Node: "pve1", Running: true, Config: map[string]string{"memory": "2048", "cores": "2"}},
		{VMID: 101, Node: "pve2", Running: true, Config: map[string]string{"memory": "1024", "cores": "6"}},
		{VMID: 102, Node: "pve2", Config: map[string]string{"memory": "8192", "cores": "8"}},
	} {
		mustAddGuest(t, srv, g)
	}
	c.mustOK("PUT", "/pools", vals("poolid", "p", "vms", "100,101,102"))
	if err := srv.SetGuestRunning(100, false); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if err := srv.SetGuestRunning(100, true); err != nil {
		t.Fatal(err)
	}
	clock.Advance(DefaultStatusInterval) // pvestatd reports VM 100 running
	res := c.mustOK("GET", "/cluster/resources", nil).list(t)
	byID := map[string]map[string]any{}
	for _, r := range res {
		byID[r["id"].(string)] = r
	}
	pe, g1, g2 := byID["/pool/p"], byID["qemu/100"], byID["qemu/101"]
	if pe == nil {
		t.Fatalf("no pool entry in %v", res)
	}
	if pe["maxcpu"] != float64(8) || pe["maxmem"] != float64(3<<30) || pe["mem"] != g1["mem"].(float64)+g2["mem"].(float64) ||
		pe["uptime"] != max(g1["uptime"].(float64), g2["uptime"].(float64)) || pe["cpu"] != 0.01 {
		t.Errorf("pool entry %v from %v and %v", pe, g1, g2)
	}
	// A pool without running guests has no figures.
	c.mustOK("POST", "/pools", vals("poolid", "idle"))
	for _, r := range c.mustOK("GET", "/cluster/resources", nil).list(t) {
		if r["id"] == "/pool/idle" && len(r) != 3 {
			t.Errorf("idle pool entry %v", r)
		}
	}
}

// Cluster.pm resources lists a pool, and names it on its guests, only for
// a caller with Pool.Audit on it; the pool's sums still count every guest.
func TestClusterResourcesShowPoolsOnlyWithPoolAudit(t *testing.T) {
	clock := NewFakeClock(time.Unix(1_750_000_000, 0))
	srv := startSim(t, Options{Clock: clock, RootPassword: "hunter2", TokenPrivileges: []string{"VM.Audit"}})
	root := rootClient(t, srv)
	c := newClient(t, srv)
	for _, g := range []GuestSpec{
		{VMID: 100, Node: "pve1", Running: true, Config: map[string]string{"cores": "2"}},
		{VMID: 101, Node: "pve1", Running: true, Config: map[string]string{"cores": "3"}},
	} {
		mustAddGuest(t, srv, g)
	}
	root.mustOK("POST", "/pools", vals("poolid", "seen"))
	root.mustOK("POST", "/pools", vals("poolid", "hidden"))
	root.mustOK("PUT", "/pools", vals("poolid", "seen", "vms", "100"))
	root.mustOK("PUT", "/pools", vals("poolid", "hidden", "vms", "101"))
	root.mustOK("PUT", "/access/acl", vals("path", "/pool/seen", "tokens", testTokenID, "roles", "PVEPoolUser"))
	clock.Advance(2 * DefaultStatusInterval)
	got := map[string]map[string]any{}
	for _, e := range c.mustOK("GET", "/cluster/resources", nil).list(t) {
		got[e["id"].(string)] = e
	}
	if got["/pool/hidden"] != nil {
		t.Errorf("a pool without Pool.Audit is listed: %v", got["/pool/hidden"])
	}
	if e := got["/pool/seen"]; e == nil || e["maxcpu"] != float64(2) {
		t.Errorf("pool with Pool.Audit: %v", e)
	}
	if got["qemu/100"]["pool"] != "seen" {
		t.Errorf("guest in an audited pool: %v", got["qemu/100"])
	}
	if e := got["qemu/101"]; e == nil || e["pool"] != nil {
		t.Errorf("guest in a pool without Pool.Audit: %v", e)
	}
	if n := len(c.mustOK("GET", "/pools", nil).list(t)); n != 1 {
		t.Errorf("GET /pools lists %d pools, want the audited one", n)
	}
}

func TestPoolStorageMembersAreReportedFromANodeTheyAreOn(t *testing.T) {
	_, c := newSim(t, Options{})
	c.mustOK("POST", "/storage", vals("storage", "far", "type", "dir", "path", "/srv/far", "nodes", "pve3,pve2"))
	c.mustOK("POST", "/pools", vals("poolid", "prod"))
	c.mustOK("POST", "/pools", vals("poolid", "prod/web"))
	c.mustOK("PUT", "/pools", vals("poolid", "prod/web", "storage", "far,local"))
	got := poolMembers(t, c, "prod/web")
	want := []string{"storage storage/pve2/far", "storage storage/pve1/local"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("members of prod/web = %v, want %v", got, want)
	}
	// A comment of "0" is false to Perl: user.cfg does not keep it.
	c.mustOK("PUT", "/pools", vals("poolid", "prod/web", "comment", "0"))
	if e := c.mustOK("GET", "/pools", vals("poolid", "prod/web")).list(t)[0]; e["comment"] != nil {
		t.Errorf("comment after PUT comment=0: %v", e["comment"])
	}
}

func TestDeletingAPoolOrAStorageDropsItsACLs(t *testing.T) {
	_, c := newSim(t, Options{})
	c.mustOK("POST", "/pools", vals("poolid", "prod"))
	c.mustOK("POST", "/pools", vals("poolid", "dev"))
	c.mustOK("POST", "/pools", vals("poolid", "dev/a"))
	c.mustOK("POST", "/storage", vals("storage", "data", "type", "dir", "path", "/srv/data"))
	for _, p := range []string{"/pool/prod", "/pool/dev/a", "/storage/data", "/storage/local"} {
		c.mustOK("PUT", "/access/acl", vals("path", p, "users", "root@pam", "roles", "PVEAuditor"))
	}
	c.mustOK("DELETE", "/pools", vals("poolid", "prod"))
	c.mustOK("DELETE", "/pools", vals("poolid", "dev/a"))
	c.mustOK("DELETE", "/storage/data", nil)
	var paths []string
	for _, e := range c.mustOK("GET", "/access/acl", nil).list(t) {
		if e["path"] != "/" {
			paths = append(paths, e["path"].(string))
		}
	}
	// delete_pool_acl does not find a nested pool's node.
	if want := []string{"/pool/dev/a", "/storage/local"}; !reflect.DeepEqual(paths, want) {
		t.Errorf("ACL paths left = %v, want %v", paths, want)
	}
}
