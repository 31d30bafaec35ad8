package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/vocab"
)

// fieldsManifests, with seedIso and the example's ContainerTemplate,
// declare every row of every field table between them (an ISO and a
// userData seed exclude each other, so two VMs).
const fieldsManifests = `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: full-01
  node: pve1
  tags: [web, prod]
spec:
  vmid: 150
  image:
    source: FILES/images/debian-12-genericcloud-amd64.qcow2
  cores: 2
  sockets: 2
  memory: 2048
  cpu: x86-64-v2-AES
  ostype: l26
  bios: seabios
  machine: q35
  scsihw: virtio-scsi-single
  balloon: 1024
  description: |
    Every field of the VM table.
  onboot: true
  startup: {order: 2, up: 10}
  agent: true
  disks:
    - storage: local-lvm
      size: 12G
      discard: true
      ssd: true
      iothread: true
      cache: writeback
      backup: false
    - storage: local-lvm
      size: 4G
  net:
    - bridge: vmbr0
      tag: 20
      firewall: true
      macaddr: bc:24:11:aa:bb:01
      mtu: 1
      rate: 12.5
      queues: 2
    - bridge: vmbr0
      model: e1000
      linkDown: true
  cloudInit:
    user: debian
    passwordFrom: {env: FULL01_PASSWORD}
    sshKeys: [SSHKEY]
    ip: ip=10.0.0.50/24,gw=10.0.0.1
    ipConfigs:
      - slot: net1
        ip6: auto
    nameserver: "1.1.1.1  9.9.9.9"
    searchDomain: example.org
    upgrade: false
  iso: debian-12
---
apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: seed-01
  node: pve1
spec:
  vmid: 151
  image:
    source: FILES/images/debian-12-genericcloud-amd64.qcow2
  disks:
    - storage: local-lvm
  net:
    - bridge: vmbr0
  userData: |
    #cloud-config
    hostname: seed-01
---
apiVersion: proxmops.dev/v1
kind: Template
metadata:
  name: full-tpl
  node: pve1
  tags: [base]
spec:
  vmid: 9050
  image:
    source: FILES/images/debian-12-genericcloud-amd64.qcow2
  cores: 2
  sockets: 1
  memory: 1024
  cpu: host
  ostype: l26
  bios: seabios
  machine: q35
  scsihw: virtio-scsi-single
  description: Every field a template has.
  agent: true
  disks:
    - storage: local-lvm
      size: 10G
      discard: true
  net:
    - bridge: vmbr0
      firewall: true
  cloudInit:
    user: debian
    sshKeys: [SSHKEY]
    ip: dhcp
    nameserver: 1.1.1.1
    searchDomain: example.org
    upgrade: true
---
apiVersion: proxmops.dev/v1
kind: Container
metadata:
  name: full-ct
  node: pve1
  tags: [dns]
spec:
  vmid: 250
  template: debian-12-standard
  hostname: full-ct
  ostype: debian
  arch: amd64
  cores: 2
  cpulimit: 1.5
  memory: 1024
  swap: 256
  rootfs:
    storage: local-lvm
    size: 8G
    mountOptions: [noatime]
    acl: true
  mountpoints:
    - slot: mp0
      path: /srv
      storage: local-lvm
      size: 4G
      backup: true
      ro: true
      mountOptions: [nodev, noexec]
      quota: true
  net:
    - bridge: vmbr0
      name: eth0
      ip: 10.0.0.60/24
      gw: 10.0.0.1
      ip6: fd00::60/64
      gw6: fd00::1
      tag: 30
      firewall: true
      hwaddr: bc:24:11:cc:dd:01
      mtu: 1450
      rate: 12.5
  unprivileged: true
  features: {nesting: true}
  nameserver: 1.1.1.1 9.9.9.9
  searchDomain: example.org
  sshKeys: [SSHKEY]
  passwordFrom: {env: FULLCT_PASSWORD}
  onboot: true
  startup: {order: 3}
  description: Every field of the container table.
  timezone: Europe/Berlin
`

// TestEveryFieldRowInSyncAfterCreate creates, through pvesim over HTTP,
// guests that declare every row of every field table, and plans again: a
// row whose create and read-back compare differently shows up as a
// perpetual diff here. The create previews must name every row, so a row
// added to a table without a field in these manifests fails the test.
func TestEveryFieldRowInSyncAfterCreate(t *testing.T) {
	t.Setenv("FULL01_PASSWORD", "s3cret-pass")
	t.Setenv("FULLCT_PASSWORD", "s3cret-root")
	e, eng := withManifests(t, engine.Options{},
		"fields.yaml", fieldsManifests,
		"iso.yaml", seedIso,
		"ctemplate.yaml", testvm.Example(t, "container-templates/debian-12-standard.yaml"),
	)
	p := e.plan(eng)
	seen := map[string][]string{} // kind -> previewed paths and fields
	for _, a := range p.Actions {
		if a.Action != vocab.ActionCreate {
			continue
		}
		for _, c := range a.Changes {
			seen[a.Kind] = append(seen[a.Kind], c.Path, c.Field)
		}
	}
	for _, kind := range []string{engine.KindVirtualMachine, engine.KindTemplate, engine.KindContainer} {
		for _, row := range engine.FieldRows(kind) {
			if !previewed(seen[kind], row) {
				t.Errorf("%s: no declared field of row %s in the create previews (declare it in fieldsManifests): %v", kind, row, seen[kind])
			}
		}
	}
	if t.Failed() {
		t.Fatalf("plan:\n%s", planText(p))
	}
	e.mustApply(eng)
	e.requireInSync(eng)
	// A second, fresh engine reads everything again (no state kept).
	e.requireInSync(e.engine(engine.Options{}))

	// Drift on keys the manifest names otherwise: the plan's changes carry
	// the rows' manifest paths.
	ctx := context.Background()
	if err := e.client.QemuSetConfig(ctx, "pve1", 150, pve.NewParams().Set("ciuser", "root").Set("searchdomain", "other.org")); err != nil {
		t.Fatal(err)
	}
	if err := e.client.LxcSetConfig(ctx, "pve1", 250, pve.NewParams().Set("searchdomain", "other.org")); err != nil {
		t.Fatal(err)
	}
	p = e.plan(eng)
	for _, tc := range []struct{ kind, name, field, path string }{
		{engine.KindVirtualMachine, "full-01", "ciuser", "spec.cloudInit.user"},
		{engine.KindVirtualMachine, "full-01", "searchdomain", "spec.cloudInit.searchDomain"},
		{engine.KindContainer, "full-ct", "searchdomain", "spec.searchDomain"},
	} {
		var got *vocab.Change
		for i, c := range p.Find(tc.kind, tc.name).Changes {
			if c.Field == tc.field {
				got = &p.Find(tc.kind, tc.name).Changes[i]
			}
		}
		if got == nil || got.Path != tc.path {
			t.Errorf("%s/%s %s: change %+v, want path %s\n%s", tc.kind, tc.name, tc.field, got, tc.path, planText(p))
		}
	}
}

// previewed reports whether a row (a manifest path, or a Proxmox key when
// the field has none) is among the preview's paths and fields.
func previewed(seen []string, row string) bool {
	for _, s := range seen {
		if s == row || strings.HasPrefix(s, row+"[") || strings.HasPrefix(s, row+".") {
			return true
		}
	}
	return false
}
