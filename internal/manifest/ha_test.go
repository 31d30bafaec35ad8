package manifest

import (
	"fmt"
	"strings"
	"testing"
)

// spec.ha follows pve-ha-manager's resource options and must agree with
// the guest's power state; an HARule follows the rule plugins' options
// (NodeAffinity.pm, ResourceAffinity.pm) and names declared guests.
func TestHAValidation(t *testing.T) {
	vm := func(name, extra string) string {
		return "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: " + name + ", node: pve1}\nspec:\n  vmid: " +
			map[string]string{"web": "100", "db": "101"}[name] + "\n  cores: 1\n" + extra
	}
	rule := func(meta, spec string) string { return flowDoc(KindHARule, meta, spec) }
	ct := "apiVersion: proxmops.dev/v1\nkind: Container\nmetadata: {name: web, node: pve1}\nspec: {vmid: 200, template: local:vztmpl/a.tar.zst, rootfs: {storage: local-lvm, size: 8G}}\n"
	tests := []struct {
		name string
		docs []string
		want string // "" is valid
	}{
		{"guest under HA", []string{vm("web", "  ha: {state: started, maxRestart: 2, maxRelocate: 0, failback: false, comment: x}\n")}, ""},
		{"HA default state with the default power", []string{vm("web", "  ha: {}\n")}, ""},
		{"HA started but the guest stopped", []string{vm("web", "  state: stopped\n  ha: {state: started}\n")}, "spec.ha.state"},
		{"HA stopped but the guest running", []string{vm("web", "  ha: {state: stopped}\n")}, "set spec.state: stopped"},
		{"HA disabled and the guest stopped", []string{vm("web", "  state: stopped\n  ha: {state: disabled}\n")}, ""},
		{"HA ignored leaves power to proxmops", []string{vm("web", "  state: stopped\n  ha: {state: ignored}\n")}, ""},
		{"absent takes no other field", []string{vm("web", "  ha: {state: absent, maxRestart: 1}\n")}, "takes no other field"},
		{"unknown HA state", []string{vm("web", "  ha: {state: enabled}\n")}, "spec.ha.state"},
		{"negative restarts", []string{vm("web", "  ha: {maxRestart: -1}\n")}, "spec.ha.maxRestart"},
		{"node affinity", []string{vm("web", "  ha: {}\n"), rule("name: web-pve1", "type: node-affinity, guests: [web], nodes: [{node: pve1, priority: 2}, {node: pve2}], strict: true")}, ""},
		{"node affinity names a container", []string{ct, rule("name: web-pve1", "type: node-affinity, guests: [web], nodes: [{node: pve1}]")}, ""},
		{"node affinity without nodes", []string{vm("web", ""), rule("name: r1", "type: node-affinity, guests: [web]")}, "at least one node"},
		{"repeated node", []string{vm("web", ""), rule("name: r1", "type: node-affinity, guests: [web], nodes: [{node: pve1}, {node: pve1, priority: 1}]")}, "duplicate node"},
		{"bad node name", []string{vm("web", ""), rule("name: r1", "type: node-affinity, guests: [web], nodes: [{node: 'pve 1'}]")}, "spec.nodes[0].node"},
		{"resource affinity", []string{vm("web", ""), vm("db", ""), rule("name: apart", "type: resource-affinity, guests: [web, db], affinity: negative")}, ""},
		{"resource affinity without affinity", []string{vm("web", ""), vm("db", ""), rule("name: apart", "type: resource-affinity, guests: [web, db]")}, "needs affinity"},
		{"resource affinity of one guest", []string{vm("web", ""), rule("name: apart", "type: resource-affinity, guests: [web], affinity: positive")}, "at least two guests"},
		{"resource affinity with nodes", []string{vm("web", ""), vm("db", ""), rule("name: apart", "type: resource-affinity, guests: [web, db], affinity: positive, nodes: [{node: pve1}]")}, "nodes belong"},
		{"undeclared guest", []string{rule("name: r1", "type: node-affinity, guests: [ghost], nodes: [{node: pve1}]")}, `no VirtualMachine or Container "ghost"`},
		{"a VM and a container of one name", []string{vm("web", ""), ct, rule("name: r1", "type: node-affinity, guests: [web], nodes: [{node: pve1}]")}, "both a VirtualMachine and a Container"},
		{"repeated guest", []string{vm("web", ""), rule("name: r1", "type: node-affinity, guests: [web, web], nodes: [{node: pve1}]")}, "duplicate guest"},
		{"rule ID starting with a digit", []string{vm("web", ""), rule("name: 1r", "type: node-affinity, guests: [web], nodes: [{node: pve1}]")}, "not an HA rule ID"},
		{"rule with a node", []string{vm("web", ""), rule("name: r1, node: pve1", "type: node-affinity, guests: [web], nodes: [{node: pve1}]")}, "cluster-wide"},
		{"unknown rule type", []string{vm("web", ""), rule("name: r1", "type: group, guests: [web]")}, "spec.type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{}
			for i, d := range tt.docs {
				files[string(rune('a'+i))+".yaml"] = d
			}
			wantErrors(t, loadErrors(t, files), tt.want)
		})
	}
}

func TestHARuleNodesReadBackForm(t *testing.T) {
	got := HARuleNodes([]HARuleNode{{Node: "pve2"}, {Node: "pve1", Priority: 2}})
	if got != "pve1:2,pve2" {
		t.Fatalf("HARuleNodes = %q, want pve1:2,pve2 (sorted, priority 0 left out)", got)
	}
}

// An HA rule's guests are edges of the graph and of the apply order, to
// the VirtualMachine or Container of that name.
func TestHARuleDependsOnItsGuests(t *testing.T) {
	set, err := LoadDir(writeTree(t, map[string]string{
		"vm.yaml": "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: web, node: pve1}\nspec: {vmid: 100, cores: 1}\n",
		"ct.yaml": "apiVersion: proxmops.dev/v1\nkind: Container\nmetadata: {name: dns, node: pve1}\nspec: {vmid: 200, template: local:vztmpl/a.tar.zst, rootfs: {storage: local-lvm, size: 8G}}\n",
		"r.yaml":  "apiVersion: proxmops.dev/v1\nkind: HARule\nmetadata: {name: apart}\nspec: {type: resource-affinity, guests: [web, dns], affinity: negative}\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range Dependencies(set.Get(KindHARule, "apart")) {
		got = append(got, e.Key()+" "+string(e.Relation)+" "+e.Path)
	}
	if want := "Container/dns places spec.guests[1],VirtualMachine/web places spec.guests[0]"; strings.Join(got, ",") != want {
		t.Fatalf("dependencies %v, want %s", got, want)
	}
}

// A node-affinity rule's nodes are node edges for the graph (the preferred
// first; strict: only on them), never dependencies: the apply order must
// not wait for a node, which is no declared resource.
func TestHARuleNodesAreNodeEdgesNotDependencies(t *testing.T) {
	rule := func(name, extra string) string {
		return flowDoc(KindHARule, "name: "+name, "type: node-affinity, guests: [web], nodes: [{node: pve3}, {node: pve2, priority: 1}, {node: pve1, priority: 1}]"+extra)
	}
	set, err := LoadDir(writeTree(t, map[string]string{
		"vm.yaml":     "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: web, node: pve1}\nspec: {vmid: 100, cores: 1}\n",
		"prefer.yaml": rule("prefer", ""),
		"strict.yaml": rule("strict", ", strict: true"),
		"apart.yaml":  "apiVersion: proxmops.dev/v1\nkind: HARule\nmetadata: {name: apart}\nspec: {type: resource-affinity, guests: [web, web2], affinity: negative}\n",
		"vm2.yaml":    "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: web2, node: pve1}\nspec: {vmid: 101, cores: 1}\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, want string }{
		{"prefer", "pve1:1 prefers,pve2:1 prefers,pve3:0 prefers"},
		{"strict", "pve1:1 onlyOn,pve2:1 onlyOn,pve3:0 onlyOn"},
		{"apart", ""},
	} {
		r := set.Get(KindHARule, tc.name)
		var got []string
		for _, n := range NodeEdges(r) {
			got = append(got, fmt.Sprintf("%s:%d %s", n.Node, n.Priority, n.Relation))
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("%s: node edges %v, want %s", tc.name, got, tc.want)
		}
		for _, e := range Dependencies(r) {
			if e.Relation != RelationPlaces {
				t.Errorf("%s: dependency %s %s: only its guests are dependencies", tc.name, e.Key(), e.Relation)
			}
		}
	}
	if got := NodeEdges(set.Get(KindVirtualMachine, "web")); got != nil {
		t.Errorf("a VM places nothing on nodes: %+v", got)
	}
}
