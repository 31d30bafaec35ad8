package manifest

import (
	"reflect"
	"strings"
	"testing"
)

func TestDependsOnValidation(t *testing.T) {
	vm := func(name string, vmid int, deps string) string {
		return "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata:\n  name: " + name + "\n  node: pve1\n  dependsOn: " + deps + "\nspec:\n  vmid: " + itoa(vmid) + "\n  cores: 1\n---\n"
	}
	tests := []struct {
		name  string
		files map[string]string
		want  []string // "file:line:col: path: message" prefixes; none: valid
	}{
		{"declared target", map[string]string{"a.yaml": vm("db", 100, "[]") + vm("web", 101, "[VirtualMachine/db]")}, nil},
		{"missing target", map[string]string{"a.yaml": vm("web", 101, "[VirtualMachine/db]")},
			[]string{"a.yaml:6:15: metadata.dependsOn[0]: VirtualMachine/db is not declared in the manifests"}},
		{"itself", map[string]string{"a.yaml": vm("web", 101, "[VirtualMachine/web]")},
			[]string{"a.yaml:6:15: metadata.dependsOn[0]: VirtualMachine/web cannot depend on itself"}},
		{"cycle", map[string]string{"a.yaml": vm("db", 100, "[VirtualMachine/web]") + vm("web", 101, "[VirtualMachine/db]")},
			[]string{
				"a.yaml:6:15: metadata.dependsOn[0]: dependency cycle: VirtualMachine/db -> VirtualMachine/web -> VirtualMachine/db",
				"a.yaml:16:15: metadata.dependsOn[0]: dependency cycle: VirtualMachine/web -> VirtualMachine/db -> VirtualMachine/web",
			}},
		{"cycle through a spec reference", map[string]string{"a.yaml": "apiVersion: proxmops.dev/v1\nkind: Template\nmetadata:\n  name: tpl\n  node: pve1\n  dependsOn: [VirtualMachine/web]\nspec:\n  vmid: 9000\n  image: {source: \"local:import/d.qcow2\"}\n---\n" +
			"apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: web, node: pve1}\nspec:\n  vmid: 101\n  fromTemplate: {name: tpl}\n"},
			[]string{"a.yaml:6:15: metadata.dependsOn[0]: dependency cycle: Template/tpl -> VirtualMachine/web -> Template/tpl"}},
		{"unknown kind", map[string]string{"a.yaml": vm("web", 101, "[VirtualMachin/db]")},
			[]string{"a.yaml:6:15: metadata.dependsOn[0]: unknown kind \"VirtualMachin\", did you mean `VirtualMachine`?"}},
		{"not a key", map[string]string{"a.yaml": vm("web", 101, "[db]")},
			[]string{"a.yaml:6:15: metadata.dependsOn[0]: \"db\" is not Kind/name (e.g. VirtualMachine/db)"}},
		{"duplicate", map[string]string{"a.yaml": vm("db", 100, "[]") + vm("web", 101, "[VirtualMachine/db, VirtualMachine/db]")},
			[]string{"a.yaml:16:34: metadata.dependsOn[1]: duplicate dependency \"VirtualMachine/db\""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := loadErrors(t, tt.files)
			if len(errs) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(tt.want), errs)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want prefix %q", i, errs[i].Error(), w)
				}
			}
		})
	}
}

func TestDependenciesListSpecReferencesAndDependsOn(t *testing.T) {
	set := loadSet(t, map[string]string{"a.yaml": "apiVersion: proxmops.dev/v1\nkind: Template\nmetadata: {name: tpl, node: pve1}\nspec:\n  vmid: 9000\n  image: {source: \"local:import/d.qcow2\"}\n---\n" +
		"apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: db, node: pve1}\nspec:\n  vmid: 100\n---\n" +
		"apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: web, node: pve1, dependsOn: [VirtualMachine/db]}\nspec:\n  vmid: 101\n  fromTemplate: {name: tpl}\n  net: [{bridge: vmbr0}]\n"})
	got := Dependencies(set.Get(KindVirtualMachine, "web"))
	want := []Edge{
		{Kind: KindTemplate, Name: "tpl", Relation: RelationClones, Path: "spec.fromTemplate"},
		{Kind: KindVirtualMachine, Name: "db", Relation: RelationDependsOn, Path: "metadata.dependsOn[0]"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Dependencies = %+v, want %+v (vmbr0 is only on the cluster: no edge)", got, want)
	}
}

func loadSet(t *testing.T, files map[string]string) *Set {
	t.Helper()
	set, err := LoadDir(writeTree(t, files))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// A firewall rule of type group is protected by its security group; the IP
// sets and aliases a rule names keep their kind's relation (uses).
func TestFirewallRuleReferencesSayHowTheyAreNeeded(t *testing.T) {
	vm := &VirtualMachine{Object: Object{Metadata: Metadata{Name: "web"}}}
	addFirewallRuleRefs(vm, "spec.firewall.rules[0]", &FirewallRule{Type: "group", Action: "webserver"})
	addFirewallRuleRefs(vm, "spec.firewall.rules[1]", &FirewallRule{Type: "in", Action: "ACCEPT", Source: "+admins", Dest: "lan"})
	var got []string
	for _, e := range Dependencies(vm) {
		got = append(got, string(e.Relation)+":"+e.Key())
	}
	if want := "uses:FirewallAlias/lan uses:FirewallIPSet/admins protectedBy:FirewallGroup/webserver"; strings.Join(got, " ") != want {
		t.Fatalf("dependencies %v, want %s", got, want)
	}
}

// A nested pool (pve-poolid "parent/child") needs its parent, so the
// parent is created first; a top-level pool needs nothing.
func TestANestedPoolDependsOnItsParent(t *testing.T) {
	for name, want := range map[string][]Edge{
		"prod/web": {{Kind: KindPool, Name: "prod", Relation: RelationUses, Path: "metadata.name"}},
		"prod":     nil,
	} {
		p := &Pool{Object: Object{Metadata: Metadata{Name: name}}}
		p.check(nil)
		if got := Dependencies(p); !reflect.DeepEqual(got, want) {
			t.Errorf("%s needs %+v, want %+v", name, got, want)
		}
	}
}
