package engine_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// The adoption rules, each over real HTTP against the simulator:
// creation-only choices are never a reason to replace, larger disks are
// never shrunk, tags are managed but their removal is shown before
// anything happens.

// replacements counts the requests that would replace, recreate or move a
// guest or a disk: deletions, creates, clones and disk moves.
func replacements(sim *pvesim.Server) map[string]int64 {
	out := map[string]int64{}
	for _, r := range sim.Requests() {
		p := r.Path
		if r.Method == "DELETE" || r.Method == "POST" && (strings.HasSuffix(p, "/qemu") || strings.HasSuffix(p, "/lxc") ||
			strings.HasSuffix(p, "/clone") || strings.HasSuffix(p, "/move_disk") || strings.HasSuffix(p, "/move_volume")) {
			out[r.Method+" "+p] += r.Count
		}
	}
	return out
}

func sameCounts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Creation-only choices of a hand-made guest (its template, linked or full
// clone, the storage and format of its disks; a container's root disk
// storage and privilege) are accepted as they are: the adoption plans an
// update, never a create or a replacement, notes what it accepts, and
// the sync neither recreates nor moves anything; afterwards the guest is
// in sync.
func TestAdoptionAcceptsCreationOnlyChoices(t *testing.T) {
	otherTemplate := func(t *testing.T, e *env) {
		if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 9001, Node: "pve1", Config: map[string]string{
			"name": "other-tpl", "template": "1", "scsi0": "local-lvm:base-9001-disk-0,size=2G"}}); err != nil {
			t.Fatal(err)
		}
	}
	bigDisk := strings.Replace(adoptClone, "size: 1G", "size: 2G", 1)
	ct := strings.Replace(testvm.Example(t, "containers/dns-01.yaml"), "  node: pve1\n", "  node: pve1\n  annotations:\n    proxmops.dev/adopt: \"true\"\n", 1)
	for _, tc := range []struct {
		name     string
		setup    func(t *testing.T, e *env)
		file     string
		manifest string
		kind     string
		vmid     int
		disk     string // the disk whose volume must stay
		notes    []string
	}{
		{"a clone of another template", func(t *testing.T, e *env) {
			otherTemplate(t, e)
			asRoot(t, e, "POST", "/nodes/pve1/qemu/9001/clone", url.Values{"newid": {"130"}, "name": {"app-02"}})
		}, "vms/app-02.yaml", bigDisk, engine.KindVirtualMachine, 130, "scsi0", nil},
		{"a full clone where a linked one is declared", func(t *testing.T, e *env) {
			asRoot(t, e, "POST", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"130"}, "name": {"app-02"}, "full": {"1"}})
		}, "vms/app-02.yaml", strings.Replace(bigDisk, "fromTemplate: debian-12-tpl", "fromTemplate: {name: debian-12-tpl, linked: true}", 1),
			engine.KindVirtualMachine, 130, "scsi0", nil},
		{"a disk on another storage, in another format", func(t *testing.T, e *env) {
			asRoot(t, e, "POST", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"130"}, "name": {"app-02"}, "full": {"1"}, "storage": {"nfs-shared"}, "format": {"qcow2"}})
		}, "vms/app-02.yaml", strings.Replace(bigDisk, "size: 2G", "size: 2G\n      format: raw", 1), engine.KindVirtualMachine, 130, "scsi0",
			[]string{"disk scsi0 is on nfs-shared, the manifest says local-lvm (accepted as it is, never moved)", `scsi0.format is "qcow2" on the guest (creation-only: accepted as it is)`}},
		{"a container on another storage, privileged", func(t *testing.T, e *env) {
			if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 201, Node: "pve1", Type: "lxc", Config: map[string]string{
				"hostname": "dns-01", "cores": "2", "memory": "512", "ostype": "debian", "arch": "amd64",
				"rootfs": "nfs-shared:201/vm-201-disk-0.raw,size=8G",
				"net0":   "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:02:01,ip=10.0.0.53/24,gw=10.0.0.1,type=veth"}}); err != nil {
				t.Fatal(err)
			}
		}, "ct/dns-01.yaml", ct, engine.KindContainer, 201, "rootfs",
			[]string{`rootfs.storage is "nfs-shared" on the guest (creation-only: accepted as it is)`, `unprivileged is "0" on the guest (creation-only: accepted as it is)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			externalTemplate(t, e)
			if tc.kind == engine.KindContainer {
				e.write("ct/debian.yaml", applianceTemplate)
			}
			tc.setup(t, e)
			e.write(tc.file, tc.manifest)
			volume := strings.SplitN(e.guest(tc.vmid).Config[tc.disk], ",", 2)[0]
			before := replacements(e.sim)
			eng := e.engine(engine.Options{})
			p := e.plan(eng)
			name := strings.TrimSuffix(tc.file[strings.Index(tc.file, "/")+1:], ".yaml")
			a := p.Find(tc.kind, name)
			if a == nil || !a.Adopt || a.Action != vocab.ActionUpdate {
				t.Fatalf("want an adoption planned as an update:\n%s", planText(p))
			}
			for _, c := range a.Changes {
				if c.Hold == vocab.HoldCreationOnly || c.Field == tc.disk {
					t.Errorf("planned a creation-only change: %+v", c)
				}
			}
			for _, n := range tc.notes {
				if !strings.Contains(a.Reason, n) {
					t.Errorf("the plan does not note %q:\n%s", n, a.Reason)
				}
			}
			e.mustApply(eng)
			if after := replacements(e.sim); !sameCounts(before, after) {
				t.Fatalf("the sync replaced or moved something: %v -> %v", before, after)
			}
			g := e.guest(tc.vmid)
			if got := strings.SplitN(g.Config[tc.disk], ",", 2)[0]; got != volume || !strings.Contains(g.Config["tags"], engine.OwnerTag) {
				t.Fatalf("after the sync: %s = %q (was %q), tags %q", tc.disk, g.Config[tc.disk], volume, g.Config["tags"])
			}
			p = e.plan(eng)
			if a := p.Find(tc.kind, name); a.Status != vocab.StatusSynced || a.Action != vocab.ActionNone {
				t.Fatalf("the adopted guest is not in sync:\n%s", planText(p))
			}
		})
	}
}

// A disk larger than declared is reported and never shrunk, however the
// guest was adopted: with the annotation the plan notes it and the guest
// ends in sync; adopted by the command (no annotation), or annotated and
// the annotation removed later, every later pass applies the rest, notes
// the larger disk and ends in sync, never failed, never a resize.
func TestAdoptionNeverShrinksADisk(t *testing.T) {
	e := newEnv(t)
	handMadeClone(t, e) // its disk is 2G, the manifest's 1G
	e.write("vms/app-02.yaml", adoptClone)
	eng := e.engine(engine.Options{})
	p := e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "app-02")
	if !a.Adopt || !strings.Contains(a.Reason, "disk scsi0 is 2G on the cluster but 1G in the manifest: never shrunk") {
		t.Fatalf("want the larger disk noted:\n%s", planText(p))
	}
	e.mustApply(eng)
	if g := e.guest(130); !strings.Contains(g.Config["scsi0"], "size=2G") {
		t.Fatalf("shrunk: %v", g.Config)
	}
	if a := e.plan(eng).Find(engine.KindVirtualMachine, "app-02"); a.Status != vocab.StatusSynced || !strings.Contains(a.Reason, "never shrunk") {
		t.Fatalf("with the annotation the guest is in sync and the disk noted: %+v", a)
	}
	// The annotation removed once the guest is adopted: nothing changes.
	e.write("vms/app-02.yaml", strings.Replace(adoptClone, "  annotations:\n    proxmops.dev/adopt: \"true\"\n", "", 1))
	assertAdoptedDiskKept(t, e, eng)

	// The same guest adopted by the command, its manifest unannotated.
	e2 := newEnv(t)
	handMadeClone(t, e2)
	e2.write("vms/app-02.yaml", strings.Replace(adoptClone, "  annotations:\n    proxmops.dev/adopt: \"true\"\n", "", 1))
	ad, err := e2.engine(engine.Options{}).PlanAdoption(context.Background(), e2.desired(), "test", "VirtualMachine/app-02")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ad.Plan.Actions[0].Reason, "never shrunk") {
		t.Fatalf("the adoption's plan does not note the larger disk: %s", ad.Plan.Actions[0].Reason)
	}
	eng2 := e2.engine(engine.Options{})
	if err := eng2.ApplyAdoption(context.Background(), ad, nil); err != nil {
		t.Fatal(err)
	}
	assertAdoptedDiskKept(t, e2, eng2)
}

// assertAdoptedDiskKept syncs the adopted app-02 (2G disk, 1G declared,
// 2 cores) three times: each pass ends with it in sync and the larger
// disk noted, never failed; nothing resizes, replaces nor moves it.
func assertAdoptedDiskKept(t *testing.T, e *env, eng *engine.Engine) {
	t.Helper()
	before := replacements(e.sim)
	for i := range 3 {
		p, rep := e.apply(eng)
		a := p.Find(engine.KindVirtualMachine, "app-02")
		if !strings.Contains(a.Reason, "disk scsi0 is 2G on the cluster but 1G in the manifest: never shrunk") || strings.Contains(a.Reason, "not supported") {
			t.Fatalf("pass %d: want the larger disk noted, never refused:\n%s", i, planText(p))
		}
		for _, r := range rep.Results {
			if r.Status == vocab.StatusFailed {
				t.Fatalf("pass %d: the adopted guest failed: %+v", i, r)
			}
		}
		if g := e.guest(130); !strings.Contains(g.Config["scsi0"], "size=2G") || g.Config["cores"] != "2" || !strings.Contains(g.Config["tags"], engine.AdoptedTag) {
			t.Fatalf("pass %d: shrunk, the rest not applied, or the adoption's record dropped: %v", i, g.Config)
		}
	}
	if a := e.plan(eng).Find(engine.KindVirtualMachine, "app-02"); a.Status != vocab.StatusSynced || a.Action != vocab.ActionNone {
		t.Fatalf("the adopted guest is not in sync: %+v", a)
	}
	for _, r := range e.sim.Requests() {
		if strings.HasSuffix(r.Path, "/resize") {
			t.Fatalf("a resize was sent: %+v", r)
		}
	}
	if after := replacements(e.sim); !sameCounts(before, after) {
		t.Fatalf("replaced or moved: %v -> %v", before, after)
	}
}

// Tags are managed: adopting a guest whose tags the manifest does not
// declare shows their removal in the plan before anything happens; the
// adoption itself only adds the ownership tag, and the sync then leaves
// the declared tags and the ownership tag.
func TestAdoptionShowsTheTagsASyncRemoves(t *testing.T) {
	e := newEnv(t)
	handMadeClone(t, e)
	asRoot(t, e, "PUT", "/nodes/pve1/qemu/130/config", url.Values{"tags": {"web;old;team-a"}})
	handTags := e.guest(130).Config["tags"]
	e.write("vms/app-02.yaml", strings.Replace(strings.Replace(adoptClone, "  annotations:\n    proxmops.dev/adopt: \"true\"\n", "", 1), "size: 1G", "size: 2G", 1))
	eng := e.engine(engine.Options{})
	ad, err := eng.PlanAdoption(context.Background(), e.desired(), "test", "VirtualMachine/app-02")
	if err != nil {
		t.Fatal(err)
	}
	var tags *vocab.Change
	for i, c := range ad.Plan.Actions[0].Changes {
		if c.Field == "tags" {
			tags = &ad.Plan.Actions[0].Changes[i]
		}
	}
	if tags == nil || tags.From != "old;team-a;web" || tags.To != engine.AdoptedTag+";"+engine.OwnerTag+";web" {
		t.Fatalf("the plan must show the undeclared tags removed: %+v", ad.Plan.Actions[0].Changes)
	}
	if g := e.guest(130); g.Config["tags"] != handTags {
		t.Fatalf("planning changed the tags: %q", g.Config["tags"])
	}
	if err := eng.ApplyAdoption(context.Background(), ad, nil); err != nil {
		t.Fatal(err)
	}
	if g := e.guest(130); g.Config["tags"] != engine.AdoptedTag+";"+engine.OwnerTag+";old;team-a;web" {
		t.Fatalf("the adoption must only add the ownership tags: %q", g.Config["tags"])
	}
	e.mustApply(eng)
	if g := e.guest(130); g.Config["tags"] != engine.AdoptedTag+";"+engine.OwnerTag+";web" {
		t.Fatalf("after the sync: %q, want the declared tags and the ownership tag", g.Config["tags"])
	}
}

// What `proxmops adopt` (and the UI's button, the same PlanAdoption and
// ApplyAdoption) accepts stays accepted with no annotation in the
// manifest: a container whose root disk is larger than declared, on
// another storage, privileged, and a template whose disk is larger than
// declared are, pass after pass, in sync with those differences noted,
// never failed, resized nor replaced.
func TestAdoptedByCommandKeepsWhatItAccepted(t *testing.T) {
	for _, tc := range []struct {
		name, file, manifest, key string
		vmid                      int
		guest                     pvesim.GuestSpec
		notes                     []string
	}{
		{"a container", "ct/dns-01.yaml", testvm.Example(t, "containers/dns-01.yaml"), "Container/dns-01", 201,
			pvesim.GuestSpec{VMID: 201, Node: "pve1", Type: "lxc", Config: map[string]string{
				"hostname": "dns-01", "cores": "2", "memory": "512", "ostype": "debian", "arch": "amd64",
				"rootfs": "nfs-shared:201/vm-201-disk-0.raw,size=16G",
				"net0":   "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:02:01,ip=10.0.0.53/24,gw=10.0.0.1,type=veth"}},
			[]string{"rootfs is 16G on the cluster but 8G in the manifest: never shrunk", `rootfs.storage is "nfs-shared" on the guest (creation-only: accepted as it is)`,
				`unprivileged is "0" on the guest (creation-only: accepted as it is)`}},
		{"a template", "templates/tpl.yaml", "apiVersion: proxmops.dev/v1\nkind: Template\nmetadata:\n  name: debian-12-tpl\n  node: pve1\nspec:\n  vmid: 9000\n" +
			"  image:\n    source: https://images.example.org/debian-12.qcow2\n  cores: 2\n  memory: 2048\n  disks:\n    - storage: local-lvm\n      size: 2G\n  net:\n    - bridge: vmbr0\n",
			"Template/debian-12-tpl", 9000,
			pvesim.GuestSpec{VMID: 9000, Node: "pve1", Config: map[string]string{"name": "debian-12-tpl", "template": "1", "cores": "2", "memory": "2048",
				"boot": "order=scsi0", "scsi0": "local-lvm:base-9000-disk-0,size=4G", "net0": "virtio=BC:24:11:00:90:00,bridge=vmbr0"}},
			[]string{"disk scsi0 is 4G on the cluster but 2G in the manifest: never shrunk"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("ct/debian.yaml", applianceTemplate)
			if err := e.sim.AddGuest(tc.guest); err != nil {
				t.Fatal(err)
			}
			e.write(tc.file, tc.manifest)
			ad, err := e.engine(engine.Options{}).PlanAdoption(context.Background(), e.desired(), "test", tc.key)
			if err != nil {
				t.Fatal(err)
			}
			eng := e.engine(engine.Options{})
			if err := eng.ApplyAdoption(context.Background(), ad, nil); err != nil {
				t.Fatal(err)
			}
			kind, name, _ := strings.Cut(tc.key, "/")
			before := replacements(e.sim)
			for i := range 3 {
				p, rep := e.apply(eng)
				a := p.Find(kind, name)
				for _, n := range tc.notes {
					if !strings.Contains(a.Reason, n) {
						t.Fatalf("pass %d: %q not noted:\n%s", i, n, planText(p))
					}
				}
				for _, r := range rep.Results {
					if r.Status == vocab.StatusFailed {
						t.Fatalf("pass %d: failed: %+v\n%s", i, r, planText(p))
					}
				}
			}
			a := e.plan(eng).Find(kind, name)
			if a.Status != vocab.StatusSynced || a.Action != vocab.ActionNone || strings.Contains(a.Reason, "not supported") {
				t.Fatalf("the adopted guest is not in sync: %+v", a)
			}
			g := e.guest(tc.vmid)
			if !strings.Contains(g.Config["tags"], engine.AdoptedTag) || !strings.Contains(g.Config["tags"], engine.OwnerTag) {
				t.Fatalf("tags: %q", g.Config["tags"])
			}
			for _, r := range e.sim.Requests() {
				if strings.HasSuffix(r.Path, "/resize") {
					t.Fatalf("a resize was sent: %+v", r)
				}
			}
			if after := replacements(e.sim); !sameCounts(before, after) {
				t.Fatalf("replaced or moved: %v -> %v", before, after)
			}
		})
	}
}
