package controller

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/vocab"
)

// depsFixture declares one resource of each kind a dependency can point at,
// and guests that use them, some through names the set does not declare.
var depsFixture = map[string]string{
	"tpl.yaml": `apiVersion: proxmops.dev/v1
kind: Template
metadata: {name: debian-12-tpl, node: pve1}
spec:
  vmid: 9000
  image: {source: "http://127.0.0.1/debian.qcow2"}
  net: [{bridge: vmbr1}]
`,
	"iso.yaml": `apiVersion: proxmops.dev/v1
kind: Iso
metadata: {name: netinst, node: pve1}
spec: {source: "http://127.0.0.1/netinst.iso", storage: local}
`,
	"ct-tpl.yaml": `apiVersion: proxmops.dev/v1
kind: ContainerTemplate
metadata: {name: debian-ct, node: pve1}
spec: {appliance: debian-12-standard_12.7-1_amd64.tar.zst, storage: local}
`,
	"net.yaml": `apiVersion: proxmops.dev/v1
kind: Network
metadata: {name: pve1-bond0, node: pve1}
spec: {type: bond, iface: bond0, ports: [eno1, eno2], bondMode: active-backup}
---
apiVersion: proxmops.dev/v1
kind: Network
metadata: {name: pve1-vmbr1, node: pve1}
spec: {type: bridge, iface: vmbr1, ports: [bond0]}
`,
	"sdn.yaml": `apiVersion: proxmops.dev/v1
kind: SdnZone
metadata: {name: lab}
spec: {type: simple}
---
apiVersion: proxmops.dev/v1
kind: SdnVnet
metadata: {name: prod}
spec: {zone: lab}
---
apiVersion: proxmops.dev/v1
kind: SdnVnet
metadata: {name: other}
spec: {zone: byhand}
`,
	"vms.yaml": `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata: {name: app-02, node: pve1}
spec:
  vmid: 130
  fromTemplate: debian-12-tpl
  net: [{bridge: prod}, {bridge: prod}, {bridge: vmbr0}]
---
apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata: {name: linked, node: pve1}
spec:
  vmid: 131
  fromTemplate: {name: debian-12-tpl, linked: true}
---
apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata: {name: outside-clone, node: pve1}
spec:
  vmid: 132
  fromTemplate: tpl-made-by-hand
---
apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata: {name: installer, node: pve1}
spec:
  vmid: 133
  iso: netinst
  disks: [{storage: local-lvm, size: 8G}]
  net: [{bridge: vmbr1}]
---
apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata: {name: by-volume, node: pve1}
spec:
  vmid: 134
  iso: local:iso/netinst.iso
  disks: [{storage: local-lvm, size: 8G}]
---
apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata: {name: other-volume, node: pve1}
spec:
  vmid: 135
  iso: local:iso/not-declared.iso
  disks: [{storage: local-lvm, size: 8G}]
`,
	"cts.yaml": `apiVersion: proxmops.dev/v1
kind: Container
metadata: {name: web-1, node: pve1}
spec:
  vmid: 201
  template: debian-ct
  rootfs: {storage: local-lvm, size: 8G}
  net: [{bridge: prod}]
---
apiVersion: proxmops.dev/v1
kind: Container
metadata: {name: by-appliance, node: pve1}
spec:
  vmid: 202
  template: alpine-3.20-default_20240908_amd64.tar.xz
  rootfs: {storage: local-lvm, size: 8G}
`,
}

func TestDependenciesAreTheDeclaredTargetsOfEachManifest(t *testing.T) {
	fsys := fstest.MapFS{}
	for name, text := range depsFixture {
		fsys[name] = &fstest.MapFile{Data: []byte(text)}
	}
	set, err := manifest.LoadFS(fsys, ".")
	if err != nil {
		t.Fatal(err)
	}
	dep := func(kind, name string, rel api.Relation) api.Dependency {
		return api.Dependency{Kind: kind, Name: name, Relation: rel}
	}
	for _, tc := range []struct {
		name string
		kind manifest.Kind
		want []api.Dependency
	}{
		{"app-02", manifest.KindVirtualMachine, []api.Dependency{
			dep("Template", "debian-12-tpl", api.RelationClones),
			dep("SdnVnet", "prod", api.RelationUses), // two NICs on prod: one edge; vmbr0 is not declared
		}},
		{"linked", manifest.KindVirtualMachine, []api.Dependency{dep("Template", "debian-12-tpl", api.RelationClones)}},
		{"outside-clone", manifest.KindVirtualMachine, nil},
		{"installer", manifest.KindVirtualMachine, []api.Dependency{
			dep("Iso", "netinst", api.RelationMounts),
			dep("Network", "pve1-vmbr1", api.RelationUses), // the bridge by its manifest name, not vmbr1
		}},
		{"by-volume", manifest.KindVirtualMachine, []api.Dependency{dep("Iso", "netinst", api.RelationMounts)}},
		{"other-volume", manifest.KindVirtualMachine, nil},
		{"web-1", manifest.KindContainer, []api.Dependency{
			dep("ContainerTemplate", "debian-ct", api.RelationBuilt),
			dep("SdnVnet", "prod", api.RelationUses),
		}},
		{"by-appliance", manifest.KindContainer, nil},
		{"debian-12-tpl", manifest.KindTemplate, []api.Dependency{dep("Network", "pve1-vmbr1", api.RelationUses)}},
		{"prod", manifest.KindSdnVnet, []api.Dependency{dep("SdnZone", "lab", api.RelationZone)}},
		{"other", manifest.KindSdnVnet, nil},
		{"pve1-vmbr1", manifest.KindNetwork, []api.Dependency{dep("Network", "pve1-bond0", api.RelationUses)}},
		{"pve1-bond0", manifest.KindNetwork, nil},
		{"lab", manifest.KindSdnZone, nil},
		{"netinst", manifest.KindIso, nil},
	} {
		t.Run(string(tc.kind)+"/"+tc.name, func(t *testing.T) {
			r := set.Get(tc.kind, tc.name)
			if r == nil {
				t.Fatalf("%s/%s not loaded", tc.kind, tc.name)
			}
			if got := dependenciesOf(r); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if got := dependenciesOf(nil); got != nil {
		t.Errorf("a resource only on the cluster: got %+v, want none", got)
	}
}

// The resources API carries the edges from the first pass on: the SDN
// example and a VM on one of its vnets, through the controller's list.
func TestResourceListCarriesDependsOn(t *testing.T) {
	sim := startSim(t, 0)
	repo := sdnRepo(t)
	e := newEnv(t, sim, repo, "").start()
	l := e.waitFor("the VM and its vnet listed", func(l api.ResourceList) bool {
		return find(l, "VirtualMachine/runner") != nil && find(l, "SdnVnet/labnet") != nil && find(l, "SdnZone/lab") != nil
	})
	want := map[string][]api.Dependency{
		"VirtualMachine/runner": {{Kind: "SdnVnet", Name: "labnet", Relation: api.RelationUses}},
		"SdnVnet/labnet":        {{Kind: "SdnZone", Name: "lab", Relation: api.RelationZone}},
		"SdnZone/lab":           nil,
	}
	for key, deps := range want {
		if got := find(l, key).DependsOn; !reflect.DeepEqual(got, deps) {
			t.Errorf("%s: dependsOn %+v, want %+v", key, got, deps)
		}
	}
	// Synced or not, the edges stay: they come from the manifests.
	r := e.waitStatus("VirtualMachine/runner", vocab.StatusSynced)
	if len(r.DependsOn) != 1 || r.DependsOn[0].Name != "labnet" {
		t.Errorf("synced runner: dependsOn %+v", r.DependsOn)
	}
}

// A backup job is listed with what it backs up and leaves out, and with its
// card's line, from the first pass on.
func TestResourceListCarriesABackupJobsGuestsAndSummary(t *testing.T) {
	sim := startSim(t, 0)
	repo := gittest.New(t)
	repo.Commit("backup", map[string]string{
		"vms/web.yaml": strings.Replace(vmManifest("web", 321, 1), "tags: [lab]", "tags: [lab, prod]", 1),
		"vms/db.yaml":  strings.Replace(vmManifest("db", 322, 1), "tags: [lab]", "tags: [lab, prod]", 1),
		"backup/nightly.yaml": "apiVersion: proxmops.dev/v1\nkind: BackupJob\nmetadata: {name: nightly}\n" +
			"spec: {schedule: \"02:30\", storage: local, selector: {tags: [prod]}, exclude: [db]}\n",
	})
	e := newEnv(t, sim, repo, "").start()
	l := e.waitFor("the job listed", func(l api.ResourceList) bool { return find(l, "BackupJob/nightly") != nil })
	job := find(l, "BackupJob/nightly")
	want := []api.Dependency{
		{Kind: "VirtualMachine", Name: "web", Relation: api.RelationBacksUp},
		{Kind: "VirtualMachine", Name: "db", Relation: api.RelationExcludes},
	}
	if !reflect.DeepEqual(job.DependsOn, want) {
		t.Errorf("dependsOn %+v, want %+v", job.DependsOn, want)
	}
	if job.Summary != "02:30 · tagged prod less 1 · to local" {
		t.Errorf("summary %q", job.Summary)
	}
}

// An HA rule is listed with the guest it places and, as dependencies of
// kind Node, the nodes it prefers, the preferred first with its priority:
// the graph grouped by node draws them; the apply order never waits for
// them (manifest.Dependencies has no node).
func TestResourceListCarriesAnHARulesGuestsAndNodes(t *testing.T) {
	sim := startSim(t, 0)
	repo := gittest.New(t)
	rule := func(name, extra string) string {
		return "apiVersion: proxmops.dev/v1\nkind: HARule\nmetadata: {name: " + name + "}\n" +
			"spec: {type: node-affinity, guests: [web], nodes: [{node: pve3}, {node: pve2, priority: 2}]" + extra + "}\n"
	}
	repo.Commit("ha", map[string]string{
		"vms/web.yaml":    vmManifest("web", 321, 1),
		"ha/prefers.yaml": rule("web-prefers-pve2", ""),
		"ha/strict.yaml":  rule("web-only-pve2-pve3", ", strict: true"),
		"ha/apart.yaml":   "apiVersion: proxmops.dev/v1\nkind: HARule\nmetadata: {name: apart}\nspec: {type: resource-affinity, guests: [web, db], affinity: negative}\n",
		"vms/db.yaml":     vmManifest("db", 322, 1),
	})
	e := newEnv(t, sim, repo, "").start()
	l := e.waitFor("the rules listed", func(l api.ResourceList) bool {
		return find(l, "HARule/web-prefers-pve2") != nil && find(l, "HARule/web-only-pve2-pve3") != nil && find(l, "HARule/apart") != nil
	})
	web := api.Dependency{Kind: "VirtualMachine", Name: "web", Relation: api.RelationPlaces}
	want := map[string][]api.Dependency{
		"HARule/web-prefers-pve2": {web,
			{Kind: api.DependencyNode, Name: "pve2", Relation: api.RelationPrefers, Priority: 2},
			{Kind: api.DependencyNode, Name: "pve3", Relation: api.RelationPrefers}},
		"HARule/web-only-pve2-pve3": {web,
			{Kind: api.DependencyNode, Name: "pve2", Relation: api.RelationOnlyOn, Priority: 2},
			{Kind: api.DependencyNode, Name: "pve3", Relation: api.RelationOnlyOn}},
		// Resource affinity names no node.
		"HARule/apart": {{Kind: "VirtualMachine", Name: "db", Relation: api.RelationPlaces}, web},
	}
	for key, deps := range want {
		if got := find(l, key).DependsOn; !reflect.DeepEqual(got, deps) {
			t.Errorf("%s: dependsOn %+v, want %+v", key, got, deps)
		}
	}
}
