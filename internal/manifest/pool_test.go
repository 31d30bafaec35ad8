package manifest

import (
	"testing"
)

// Pool names and guests' spec.pool follow pve-access-control's pve-poolid
// (AccessControl.pm verify_poolname) and pve-manager's create_pool (a
// pool name starts with a letter); a Pool is cluster-wide and untagged.
func TestPoolValidation(t *testing.T) {
	pool := func(meta string) string { return flowDoc(KindPool, meta, "comment: Production") }
	vm := func(p string) string { return vmHead + "  vmid: 100\n  pool: " + p + "\n" }
	tests := []validationCase{
		{"pool", pool("name: prod"), ""},
		{"pool without spec fields", "apiVersion: proxmops.dev/v1\nkind: Pool\nmetadata: {name: dev}\nspec: {}\n", ""},
		{"pool starting with a digit", pool("name: 1prod"), "pool name must start with a letter"},
		{"pool with a node", pool("name: prod, node: pve1"), "Pool is cluster-wide; remove metadata.node"},
		{"pool with tags", pool("name: prod, tags: [a]"), "Pool has no Proxmox tags"},
		{"pool with an unknown field", "apiVersion: proxmops.dev/v1\nkind: Pool\nmetadata: {name: prod}\nspec: {comments: x}\n", "comments"},
		{"guest in a pool", vm("prod"), ""},
		{"guest in a nested pool made by hand", vm("Team_A/web.1"), ""},
		{"guest in a pool nested too deeply", vm("a/b/c/d"), "pool name"},
		{"guest in a pool with a space", vm(`"a b"`), "pool name"},
		{"guest in an empty-level pool", vm("a//b"), "pool name"},
	}
	checkValidation(t, tests, nil)
}
