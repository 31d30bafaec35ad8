package engine_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// adoptClone is seedClone (app-02 at VMID 130, linked from debian-12-tpl)
// annotated for adoption, with the hand-made guest's tag.
var adoptClone = strings.Replace(strings.Replace(seedClone, "  node: pve1\n",
	"  node: pve1\n  tags: [web]\n  annotations:\n    proxmops.dev/adopt: \"true\"\n", 1), "size: 20G", "size: 1G", 1)

// handMadeClone makes app-02 at VMID 130 as a person would: a linked clone
// of a template proxmops did not build, by root@pam, tagged web, 1 core.
func handMadeClone(t *testing.T, e *env) {
	t.Helper()
	externalTemplate(t, e)
	asRoot(t, e, "POST", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"130"}, "name": {"app-02"}})
	asRoot(t, e, "PUT", "/nodes/pve1/qemu/130/config", url.Values{"cores": {"1"}, "tags": {"web"}})
}

// An annotated manifest adopts the hand-made guest: the plan shows the
// adoption, the tag and the ordinary updates, never a creation-only
// change nor a shrink (its 2G disk is larger than the 1G declared); a
// sync applies them, and a later change is corrected like any drift.
func TestAdoptionByAnnotationTagsAndReconcilesTheGuest(t *testing.T) {
	e := newEnv(t)
	handMadeClone(t, e)
	e.write("vms/app-02.yaml", adoptClone)
	eng := e.engine(engine.Options{})
	p := e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "app-02")
	if a == nil || !a.Adopt || a.Conflicted() || a.Action != vocab.ActionUpdate || a.Status != vocab.StatusOutOfSync {
		t.Fatalf("want an adoption:\n%s", planText(p))
	}
	fields := map[string]bool{}
	for _, c := range a.Changes {
		fields[c.Field] = true
		if c.Hold == vocab.HoldCreationOnly {
			t.Fatalf("creation-only change planned: %+v", c)
		}
	}
	if !fields["tags"] || !fields["cores"] {
		t.Fatalf("want tags and cores changed: %+v", a.Changes)
	}
	text := planText(p)
	if !strings.Contains(text, "app-02 (pve1, vmid 130): adopt") || !strings.Contains(a.Reason, "never shrunk") {
		t.Fatalf("plan text:\n%s", text)
	}
	e.assertOwnerTag(130, false, "tagged by a plan")
	e.mustApply(eng)
	g := e.guest(130)
	if g.Config["tags"] != engine.AdoptedTag+";"+engine.OwnerTag+";web" || g.Config["cores"] != "2" || !strings.Contains(g.Config["scsi0"], "size=2G") {
		t.Fatalf("after the sync: %v", g.Config)
	}
	asRoot(t, e, "PUT", "/nodes/pve1/qemu/130/config", url.Values{"cores": {"4"}})
	a = e.plan(eng).Find(engine.KindVirtualMachine, "app-02")
	if a.Adopt || !a.Owned || a.Action != vocab.ActionUpdate || len(a.Changes) != 1 || a.Changes[0].Field != "cores" {
		t.Fatalf("drift on the adopted guest: %+v", a)
	}
	e.mustApply(eng)
	if g := e.guest(130); g.Config["cores"] != "2" {
		t.Fatalf("drift not corrected: %v", g.Config)
	}
}

// Without the annotation the hand-made guest stays a Conflict, and a sync
// leaves it untouched.
func TestConflictWithoutAdoptionIsUntouched(t *testing.T) {
	e := newEnv(t)
	handMadeClone(t, e)
	e.write("vms/app-02.yaml", strings.Replace(adoptClone, "proxmops.dev/adopt: \"true\"", "proxmops.dev/adopt: \"false\"", 1))
	eng := e.engine(engine.Options{Prune: true})
	before := e.guest(130).Config
	p, _ := e.apply(eng)
	a := p.Find(engine.KindVirtualMachine, "app-02")
	if !a.Conflicted() || a.Adopt || a.Action != vocab.ActionNone {
		t.Fatalf("want a conflict: %+v", a)
	}
	after := e.guest(130).Config
	if after["tags"] != before["tags"] || after["cores"] != "1" {
		t.Fatalf("touched: %v", after)
	}
}

// The explicit command (Options.Adopt with Plan.AdoptOnly) adopts a guest
// whose manifest has no annotation: only the tag, the guest's other tags
// kept; the other differences wait for a sync.
func TestAdoptCommandTagsOnly(t *testing.T) {
	e := newEnv(t)
	handMadeClone(t, e)
	e.write("vms/app-02.yaml", seedClone) // no tags, no annotation
	eng := e.engine(engine.Options{Adopt: []string{"VirtualMachine/app-02"}})
	p, err := e.plan(eng).AdoptOnly("VirtualMachine/app-02")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Apply(context.Background(), p, nil); err != nil {
		t.Fatal(err)
	}
	g := e.guest(130)
	if g.Config["tags"] != engine.AdoptedTag+";"+engine.OwnerTag+";web" || g.Config["cores"] != "1" {
		t.Fatalf("want only the tags: %v", g.Config)
	}
	a := e.plan(e.engine(engine.Options{})).Find(engine.KindVirtualMachine, "app-02")
	if a.Conflicted() || !a.Owned || a.Action != vocab.ActionUpdate {
		t.Fatalf("now owned, the rest an ordinary update: %+v", a)
	}
	if _, err := e.plan(e.engine(engine.Options{})).AdoptOnly("VirtualMachine/app-02"); !errors.Is(err, engine.ErrAlreadyAdopted) {
		t.Fatalf("adopting an adopted guest: %v", err)
	}
}

// Adoption is refused, with the reason, for a guest of another kind
// (either way), a template where a VM is declared or a VM where a
// template is, and a locked guest.
func TestAdoptionRefused(t *testing.T) {
	tpl := "apiVersion: proxmops.dev/v1\nkind: Template\nmetadata:\n  name: app-02\n  node: pve1\n  annotations:\n    proxmops.dev/adopt: \"true\"\n" +
		"spec:\n  vmid: 130\n  image:\n    source: https://images.example.org/debian-12.qcow2\n  disks:\n    - storage: local-lvm\n      size: 2G\n"
	ct := strings.Replace(strings.Replace(testvm.Example(t, "containers/dns-01.yaml"), "  node: pve1\n", "  node: pve1\n  annotations:\n    proxmops.dev/adopt: \"true\"\n", 1),
		"vmid: 201", "vmid: 130", 1)
	vm := pvesim.GuestSpec{VMID: 130, Node: "pve1", Config: map[string]string{"name": "app-02", "scsi0": "local-lvm:vm-130-disk-0,size=2G"}}
	for _, tc := range []struct {
		name     string
		guest    pvesim.GuestSpec
		kind     string
		manifest string
		want     string
	}{
		{"a container", pvesim.GuestSpec{VMID: 130, Node: "pve1", Type: "lxc", Config: map[string]string{"hostname": "app-02", "rootfs": "local-lvm:vm-130-disk-0,size=2G"}},
			engine.KindVirtualMachine, adoptClone, "it is a container, the manifest declares a VirtualMachine"},
		{"a template", pvesim.GuestSpec{VMID: 130, Node: "pve1", Config: map[string]string{"name": "app-02", "template": "1"}},
			engine.KindVirtualMachine, adoptClone, "it is a template, the manifest declares a VirtualMachine"},
		{"locked", pvesim.GuestSpec{VMID: 130, Node: "pve1", Config: map[string]string{"name": "app-02", "lock": "backup"}},
			engine.KindVirtualMachine, adoptClone, "it is locked (backup)"},
		{"a VM where a template is declared", vm, engine.KindTemplate, tpl, "it is a VM, the manifest declares a Template"},
		{"a VM where a container is declared", vm, engine.KindContainer, ct, "it is a VM, the manifest declares a Container"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			externalTemplate(t, e)
			if err := e.sim.AddGuest(tc.guest); err != nil {
				t.Fatal(err)
			}
			name := "app-02"
			if tc.kind == engine.KindContainer {
				name = "dns-01"
				e.write("ct/debian.yaml", applianceTemplate)
			}
			e.write("guest.yaml", tc.manifest)
			eng := e.engine(engine.Options{})
			p, _ := e.apply(eng)
			a := p.Find(tc.kind, name)
			if a == nil || !a.Conflicted() || a.Adopt || !strings.Contains(a.Reason, "cannot adopt VMID 130") || !strings.Contains(a.Reason, tc.want) {
				t.Fatalf("want refused:\n%s", planText(p))
			}
			e.assertOwnerTag(130, false, "tagged")
		})
	}
}
