package engine_test

import (
	"context"
	"slices"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/vocab"
)

// everyRelation is a repository in which each relation between declared
// resources occurs at least once: a nested pool, guests in pools, clones,
// an ISO on a declared storage, containers built from templates, bridges
// that are Networks and SDN vnets, interfaces on bonds and VLANs, firewall
// references to groups, IP sets and aliases, a backup job and an HA rule.
var everyRelation = []string{
	"firewall.yaml", `apiVersion: proxmops.dev/v1
kind: FirewallAlias
metadata: {name: lan}
spec: {cidr: 192.168.1.0/24}
---
apiVersion: proxmops.dev/v1
kind: FirewallIPSet
metadata: {name: admins}
spec:
  entries:
    - cidr: 192.168.1.10
    - cidr: lan
---
apiVersion: proxmops.dev/v1
kind: FirewallGroup
metadata: {name: webserver}
spec:
  rules:
    - { type: in, action: ACCEPT, macro: SSH, source: +admins, dest: lan }
---
apiVersion: proxmops.dev/v1
kind: ClusterFirewall
metadata: {name: cluster}
spec:
  rules:
    - { type: in, action: ACCEPT, proto: tcp, dport: "22", source: +admins, dest: lan }
`,
	"storage.yaml", `apiVersion: proxmops.dev/v1
kind: Storage
metadata: {name: nas-iso}
spec: {type: nfs, server: 192.168.1.5, export: /export/iso, content: [iso], nodes: [pve1]}
`,
	"images.yaml", `apiVersion: proxmops.dev/v1
kind: Iso
metadata: {name: debian-12}
spec: {source: FILES/debian.iso, node: pve1, storage: nas-iso, checksum: {algo: sha256, value: ISOSUM}}
---
apiVersion: proxmops.dev/v1
kind: ContainerTemplate
metadata: {name: debian-12-standard}
spec: {node: pve1, appliance: debian-12-standard_12.7-1_amd64.tar.zst, storage: local}
---
apiVersion: proxmops.dev/v1
kind: Template
metadata: {name: tpl, node: pve1}
spec:
  vmid: 9000
  image: {source: FILES/images/debian.qcow2}
  disks: [{storage: local-lvm, size: 10G}]
  net: [{bridge: vmbr0}]
`,
	"network.yaml", `apiVersion: proxmops.dev/v1
kind: Network
metadata: {name: pve1-bond0, node: pve1}
spec: {type: bond, iface: bond0, ports: [eno3, eno4], bondMode: active-backup}
---
apiVersion: proxmops.dev/v1
kind: Network
metadata: {name: pve1-vmbr1, node: pve1}
spec: {type: bridge, iface: vmbr1, ports: [bond0]}
---
apiVersion: proxmops.dev/v1
kind: Network
metadata: {name: pve1-vlan40, node: pve1}
spec: {type: vlan, iface: vmbr1.40}
---
apiVersion: proxmops.dev/v1
kind: SdnZone
metadata: {name: lab}
spec: {type: simple}
---
apiVersion: proxmops.dev/v1
kind: SdnVnet
metadata: {name: labnet}
spec: {zone: lab}
`,
	"pools.yaml", `apiVersion: proxmops.dev/v1
kind: Pool
metadata: {name: prod}
spec: {comment: production}
---
apiVersion: proxmops.dev/v1
kind: Pool
metadata: {name: web}
spec: {comment: web servers}
`,
	"guests.yaml", `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata: {name: app-01, node: pve1, tags: [prod]}
spec:
  vmid: 120
  pool: web
  fromTemplate: tpl
  net: [{bridge: vmbr1, firewall: true}, {bridge: labnet}]
  firewall:
    rules:
      - { type: group, action: webserver }
      - { type: in, action: ACCEPT, source: +admins, dest: lan }
  ha: {state: started}
---
apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata: {name: installer, node: pve1}
spec:
  vmid: 400
  memory: 1024
  iso: debian-12
  disks: [{storage: local-lvm, size: 8G}]
  net: [{bridge: vmbr1}]
  state: stopped
---
apiVersion: proxmops.dev/v1
kind: Container
metadata: {name: web, node: pve1}
spec:
  vmid: 142
  pool: prod
  rootfs: {storage: local-lvm, size: 8}
  net: [{bridge: vmbr1, ip: dhcp}, {bridge: labnet, ip: dhcp}]
  template: debian-12-standard
  state: stopped
`,
	"cluster.yaml", `apiVersion: proxmops.dev/v1
kind: BackupJob
metadata: {name: nightly}
spec: {schedule: "02:30", storage: local, selector: {tags: [prod]}}
---
apiVersion: proxmops.dev/v1
kind: HARule
metadata: {name: app-on-pve1}
spec: {type: node-affinity, guests: [app-01], nodes: [{node: pve1}]}
`,
}

// The apply order and the graph the UI draws are one graph: on a cluster
// where everything is still to be created, each action comes after
// exactly the declared resources manifest.Dependencies lists for it
// (metadata.dependsOn aside: that is a wait, waits.go). The only other
// edges are the SDN sequence's (zones and vnets one after the other, a
// guest after the action that applies the configuration), between SDN
// actions, never a relation of their own.
func TestApplyOrderIsTheDependencyGraph(t *testing.T) {
	e, eng := withManifests(t, engine.Options{}, everyRelation...)
	set, err := manifest.LoadDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	p := e.plan(eng)
	pairs := map[[2]manifest.Kind]bool{}
	for _, r := range set.Resources {
		a := p.Find(string(r.Kind()), r.Name())
		if a == nil || !a.Acts() || !a.Runnable() {
			t.Fatalf("%s/%s is not planned as a change that runs: %+v", r.Kind(), r.Name(), a)
		}
		var want []string
		for _, d := range manifest.Dependencies(r) {
			if d.Relation != manifest.RelationDependsOn {
				want = append(want, d.Key())
				pairs[[2]manifest.Kind{r.Kind(), d.Kind}] = true
			}
		}
		var got []string
		for _, k := range a.DependsOn {
			kind, _, _ := vocab.SplitKey(k)
			if !slices.Contains(want, k) && (kind == engine.KindSdnZone || kind == engine.KindSdnVnet) {
				continue // the SDN sequence
			}
			if !slices.Contains(got, k) {
				got = append(got, k)
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s/%s comes after %v; manifest.Dependencies lists %v", r.Kind(), r.Name(), got, want)
		}
	}
	// The repository uses every relation between declared kinds, so that
	// a new one is added here too.
	for _, want := range [][2]manifest.Kind{
		{manifest.KindFirewallIPSet, manifest.KindFirewallAlias},
		{manifest.KindFirewallGroup, manifest.KindFirewallIPSet},
		{manifest.KindFirewallGroup, manifest.KindFirewallAlias},
		{manifest.KindClusterFirewall, manifest.KindFirewallIPSet},
		{manifest.KindClusterFirewall, manifest.KindFirewallAlias},
		{manifest.KindIso, manifest.KindStorage},
		{manifest.KindSdnVnet, manifest.KindSdnZone},
		{manifest.KindNetwork, manifest.KindNetwork},
		{manifest.KindVirtualMachine, manifest.KindPool},
		{manifest.KindVirtualMachine, manifest.KindTemplate},
		{manifest.KindVirtualMachine, manifest.KindIso},
		{manifest.KindVirtualMachine, manifest.KindNetwork},
		{manifest.KindVirtualMachine, manifest.KindSdnVnet},
		{manifest.KindVirtualMachine, manifest.KindFirewallGroup},
		{manifest.KindVirtualMachine, manifest.KindFirewallIPSet},
		{manifest.KindVirtualMachine, manifest.KindFirewallAlias},
		{manifest.KindContainer, manifest.KindContainerTemplate},
		{manifest.KindContainer, manifest.KindPool},
		{manifest.KindContainer, manifest.KindNetwork},
		{manifest.KindContainer, manifest.KindSdnVnet},
		{manifest.KindBackupJob, manifest.KindVirtualMachine},
		{manifest.KindHARule, manifest.KindVirtualMachine},
	} {
		if !pairs[want] {
			t.Errorf("the repository has no %s -> %s edge", want[0], want[1])
		}
	}
}

// A guest on a bridge a declared Network makes, whose firewall rule names
// a declared IP set, is created after both in one apply: Proxmox refuses
// a rule naming an IP set that does not exist (Firewall.pm verify_rule),
// and a guest's bridge is there only once its Network is applied.
func TestAGuestIsCreatedAfterItsBridgeAndTheIPSetItsFirewallNames(t *testing.T) {
	e, eng := withManifests(t, engine.Options{},
		"fw.yaml", `apiVersion: proxmops.dev/v1
kind: FirewallIPSet
metadata: {name: admins}
spec:
  entries: [{cidr: 192.168.1.10}]
`,
		"net.yaml", `apiVersion: proxmops.dev/v1
kind: Network
metadata: {name: pve1-vmbr1, node: pve1}
spec: {type: bridge, iface: vmbr1, ports: [eno2]}
`,
		"vm.yaml", webVM+`  cores: 1
  memory: 512
  net: [{bridge: vmbr1, firewall: true}]
  firewall:
    rules:
      - { type: in, action: ACCEPT, source: +admins }
  state: stopped
`)
	var o order
	rep, err := eng.Apply(context.Background(), e.plan(eng), o.progress())
	if err != nil {
		t.Fatal(err)
	}
	o.assertSyncedInOrder(t, rep, "FirewallIPSet/admins", "VirtualMachine/web", "web created before its IP set")
	o.assertSyncedInOrder(t, rep, "Network/pve1-vmbr1", "VirtualMachine/web", "web created before its bridge")
	e.assertInSync(eng)
}
