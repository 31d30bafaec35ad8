package pvesim

import (
	"net/url"
	"reflect"
	"strconv"
	"testing"
)

// haRuleSim has VMs 100 to 104 on pve1, 100 to 103 HA resources (stopped).
func haRuleSim(t *testing.T, opts Options) (*Server, *client) {
	t.Helper()
	srv := startSim(t, opts)
	for id := 100; id <= 104; id++ {
		mustAddGuest(t, srv, GuestSpec{VMID: id, Node: "pve1", Config: map[string]string{"name": "g"}})
		if id < 104 {
			if err := srv.AddHAResource("vm:"+strconv.Itoa(id), "stopped"); err != nil {
				t.Fatal(err)
			}
		}
	}
	return srv, newClient(t, srv)
}

func TestHARulesAreCreatedReadChangedAndDeletedAsProxmoxDoes(t *testing.T) {
	srv, c := haRuleSim(t, Options{})
	c.mustOK("POST", "/cluster/ha/rules", vals("rule", "web-prefers-pve1", "type", "node-affinity", "resources", "vm:101,vm:100",
		"nodes", "pve2,pve1:2", "comment", "hand", "disable", "0"))
	if r := c.do("POST", "/cluster/ha/rules", vals("rule", "db-apart", "type", "resource-affinity", "resources", "vm:102,vm:103",
		"affinity", "negative", "strict", "1")); r.Status != 500 || r.Reason != "unexpected property 'strict'" {
		t.Errorf("strict on a resource affinity rule: %d %q", r.Status, r.Reason)
	}
	got := c.mustOK("GET", "/cluster/ha/rules/web-prefers-pve1", nil).obj(t)
	digest, _ := got["digest"].(string)
	delete(got, "digest")
	want := map[string]any{"rule": "web-prefers-pve1", "type": "node-affinity", "resources": "vm:100,vm:101", "nodes": "pve1:2,pve2",
		"comment": "hand", "order": float64(1)}
	if !reflect.DeepEqual(got, want) || len(digest) != 40 {
		t.Fatalf("GET rule = %v (digest %q), want %v", got, digest, want)
	}
	c.mustOK("POST", "/cluster/ha/rules", vals("rule", "db-apart", "type", "resource-affinity", "resources", "vm:102,vm:103", "affinity", "negative"))
	c.mustOK("POST", "/cluster/ha/rules", vals("rule", "third", "type", "node-affinity", "resources", "vm:102", "nodes", "pve3"))
	// get_next_ordinal takes the lowest order plus one: a third rule ties
	// with the second and is written after it.
	var order []string
	for _, e := range c.mustOK("GET", "/cluster/ha/rules", nil).list(t) {
		order = append(order, e["rule"].(string))
	}
	if !reflect.DeepEqual(order, []string{"web-prefers-pve1", "db-apart", "third"}) {
		t.Errorf("rules in order %v", order)
	}
	if got := c.mustOK("GET", "/cluster/ha/rules", vals("resource", "vm:103")).list(t); len(got) != 1 || got[0]["rule"] != "db-apart" {
		t.Errorf("rules of vm:103 = %v", got)
	}
	c.mustOK("PUT", "/cluster/ha/rules/web-prefers-pve1", vals("type", "node-affinity", "strict", "1", "disable", "1", "delete", "comment"))
	got = c.mustOK("GET", "/cluster/ha/rules/web-prefers-pve1", nil).obj(t)
	if got["strict"] != float64(1) || got["disable"] != float64(1) || got["comment"] != nil {
		t.Errorf("after PUT strict=1 disable=1 delete=comment: %v", got)
	}
	if r := c.do("PUT", "/cluster/ha/rules/web-prefers-pve1", vals("type", "node-affinity", "nodes", "pve3", "digest", digest)); r.Status != 500 ||
		r.Reason != "update HA rules failed: detected modified configuration - file changed by other user? Try again." {
		t.Errorf("PUT with a stale digest: %d %q", r.Status, r.Reason)
	}
	srv2 := reloaded(t, srv)
	if got := newClient(t, srv2).mustOK("GET", "/cluster/ha/rules", nil).list(t); len(got) != 3 {
		t.Errorf("rules after LoadState: %v", got)
	}
	// A resource deleted with purge leaves its rules; a rule left empty goes.
	c.mustOK("DELETE", "/cluster/ha/resources/vm:102", nil)
	if got := c.mustOK("GET", "/cluster/ha/rules/db-apart", nil).obj(t); got["resources"] != "vm:103" ||
		!reflect.DeepEqual(got["errors"], map[string]any{"resources": []any{"rule is ineffective as there are less than two resources"}}) {
		t.Errorf("db-apart after vm:102 left HA: %v", got)
	}
	c.mustOK("DELETE", "/cluster/ha/resources/vm:103", vals("purge", "0"))
	c.mustOK("DELETE", "/cluster/ha/resources/vm:100", nil)
	c.mustOK("DELETE", "/cluster/ha/resources/vm:101", nil)
	var left []string
	for _, e := range c.mustOK("GET", "/cluster/ha/rules", nil).list(t) {
		left = append(left, e["rule"].(string)+" "+e["resources"].(string))
	}
	if !reflect.DeepEqual(left, []string{"db-apart vm:103"}) { // third held vm:102 only
		t.Errorf("rules after the resources left: %v", left)
	}
	c.mustOK("DELETE", "/cluster/ha/rules/db-apart", nil)
	c.mustOK("DELETE", "/cluster/ha/rules/never-was", nil)
}

func TestHARuleRequestsAreRefusedAsProxmoxRefusesThem(t *testing.T) {
	_, c := haRuleSim(t, Options{})
	c.mustOK("POST", "/cluster/ha/rules", vals("rule", "pin", "type", "node-affinity", "resources", "vm:100", "nodes", "pve1"))
	c.mustOK("POST", "/cluster/ha/rules", vals("rule", "apart", "type", "resource-affinity", "resources", "vm:102,vm:103", "affinity", "negative"))
	tests := []struct {
		name, method, path string
		params             url.Values
		status             int
		reason, message    string
	}{
		{"nodes on a resource affinity rule", "POST", "/cluster/ha/rules", vals("rule", "x1", "type", "resource-affinity", "resources", "vm:100,vm:101",
			"affinity", "positive", "nodes", "pve1"), 500, "unexpected property 'nodes'", ""},
		{"node affinity without nodes", "POST", "/cluster/ha/rules", vals("rule", "x1", "type", "node-affinity", "resources", "vm:100"), 500,
			"missing value for required option 'nodes'", ""},
		{"resource affinity without affinity", "POST", "/cluster/ha/rules", vals("rule", "x1", "type", "resource-affinity", "resources", "vm:100,vm:101"), 500,
			"missing value for required option 'affinity'", ""},
		{"existing rule", "POST", "/cluster/ha/rules", vals("rule", "pin", "type", "node-affinity", "resources", "vm:101", "nodes", "pve1"), 500,
			"create ha rule failed: HA rule 'pin' already defined", ""},
		{"unmanaged resources", "POST", "/cluster/ha/rules", vals("rule", "x1", "type", "node-affinity", "resources", "vm:104,ct:999,vm:101", "nodes", "pve1"), 500,
			"create ha rule failed: cannot use unmanaged resource(s) ct:999, vm:104.", ""},
		{"unknown nodes", "POST", "/cluster/ha/rules", vals("rule", "x1", "type", "node-affinity", "resources", "vm:101", "nodes", "pve9:1,pve1,nope"), 500,
			"create ha rule failed: cannot use non-existent node(s) nope, pve9.", ""},
		{"bad node entry", "POST", "/cluster/ha/rules", vals("rule", "x1", "type", "node-affinity", "resources", "vm:101", "nodes", "pve1:x"), 400,
			"Parameter verification failed.", ""},
		{"a resource in two node affinity rules", "POST", "/cluster/ha/rules", vals("rule", "pin2", "type", "node-affinity", "resources", "vm:100,vm:101", "nodes", "pve2"), 500,
			"create ha rule failed: 400 Rule 'pin2' is invalid.", "resources: resource 'vm:100' is already used in another node affinity rule\n"},
		{"one resource together", "POST", "/cluster/ha/rules", vals("rule", "x1", "type", "resource-affinity", "resources", "vm:101", "affinity", "positive"), 500,
			"create ha rule failed: 400 Rule 'x1' is invalid.", "resources: rule is ineffective as there are less than two resources\n"},
		{"together and apart", "POST", "/cluster/ha/rules", vals("rule", "x1", "type", "resource-affinity", "resources", "vm:102,vm:103", "affinity", "positive"), 500,
			"create ha rule failed: 400 Rule 'x1' is invalid.", "resources: rule shares two or more resources with a negative resource affinity rule\n"},
		{"more apart than nodes", "POST", "/cluster/ha/rules", vals("rule", "x1", "type", "resource-affinity", "resources", "vm:100,vm:101,vm:102,vm:103", "affinity", "negative"), 500,
			"create ha rule failed: 400 Rule 'x1' is invalid.", "resources: rule defines more resources than available nodes\n"},
		{"changing the type", "PUT", "/cluster/ha/rules/pin", vals("type", "resource-affinity"), 500,
			"update HA rules failed: unexpected property 'type'", ""},
		{"deleting a required option", "PUT", "/cluster/ha/rules/pin", vals("type", "node-affinity", "delete", "nodes"), 500,
			"update HA rules failed: unable to delete required option 'nodes'", ""},
		{"emptying the resources", "PUT", "/cluster/ha/rules/pin", vals("type", "node-affinity", "resources", ""), 500,
			"update HA rules failed: no resources were specified", ""},
		{"updating an unknown rule", "PUT", "/cluster/ha/rules/nope", vals("type", "node-affinity", "strict", "1"), 500,
			"update HA rules failed: HA rule 'nope' does not exist", ""},
		{"reading an unknown rule", "GET", "/cluster/ha/rules/nope", nil, 500, "no such ha rule 'nope'", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.do(tt.method, tt.path, tt.params)
			if r.Status != tt.status || r.Reason != tt.reason || tt.message != "" && r.Message != tt.reason+"\n"+tt.message {
				t.Fatalf("%d %q %q, want %d %q %q", r.Status, r.Reason, r.Message, tt.status, tt.reason, tt.message)
			}
		})
	}
}

func TestHARulesNeedSysConsole(t *testing.T) {
	_, c := haRuleSim(t, Options{TokenPrivileges: allBut("Sys.Console")})
	r := c.do("POST", "/cluster/ha/rules", vals("rule", "pin", "type", "node-affinity", "resources", "vm:100", "nodes", "pve1"))
	if r.Status != 403 || r.Reason != "Permission check failed (/, Sys.Console)" {
		t.Fatalf("%d %q", r.Status, r.Reason)
	}
	c.mustOK("GET", "/cluster/ha/rules", nil)
}

func TestHAGroupsAreMigratedToRules(t *testing.T) {
	_, c := haRuleSim(t, Options{})
	for _, tt := range []struct {
		method, path string
		params       url.Values
		want         string
	}{
		{"GET", "/cluster/ha/groups", nil, "cannot index groups: ha groups have been migrated to rules"},
		{"POST", "/cluster/ha/groups", vals("group", "g1", "nodes", "pve1"), "cannot create group: ha groups have been migrated to rules"},
		{"GET", "/cluster/ha/groups/g1", nil, "cannot read group: ha groups have been migrated to rules"},
		{"PUT", "/cluster/ha/groups/g1", vals("comment", "x"), "cannot update group: ha groups have been migrated to rules"},
		{"DELETE", "/cluster/ha/groups/g1", nil, "cannot delete group: ha groups have been migrated to rules"},
	} {
		if r := c.do(tt.method, tt.path, tt.params); r.Status != 500 || r.Reason != tt.want {
			t.Errorf("%s %s: %d %q, want %q", tt.method, tt.path, r.Status, r.Reason, tt.want)
		}
	}
}
