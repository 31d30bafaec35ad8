package engine_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// What an adoption accepts is bounded by what the guest had then, over
// real HTTP against the simulator.

// resizes counts the resize requests the simulator answered.
func resizes(sim *pvesim.Server) int64 {
	var n int64
	for _, r := range sim.Requests() {
		if strings.HasSuffix(r.Path, "/resize") {
			n += r.Count
		}
	}
	return n
}

// hasGrownChange reports the disk's size change listed as held: grown
// since adoption, never applied.
func hasGrownChange(a *engine.Action, field, from, to string) bool {
	return slices.ContainsFunc(a.Changes, func(c vocab.Change) bool {
		return c.Field == field && c.Hold == vocab.HoldGrownSinceAdoption && c.From == from && c.To == to
	})
}

// The adoption records the disk sizes it accepted in the guest's
// description; a disk grown by hand beyond them afterwards is drift:
// OutOfSync with the reason and the change listed, never shrunk, and in
// sync again once the manifest declares the new size. A description
// change from the manifest keeps the record.
func TestDiskGrownAfterAdoptionIsDrift(t *testing.T) {
	e := newEnv(t)
	handMadeClone(t, e) // its disk is 2G, the manifest's 1G
	e.write("vms/app-02.yaml", adoptClone)
	eng := e.engine(engine.Options{})
	e.mustApply(eng)
	if d := e.guest(130).Config["description"]; d != engine.AdoptedLinePrefix+" scsi0=2G" {
		t.Fatalf("the adoption's record: %q", d)
	}
	a := e.plan(eng).Find(engine.KindVirtualMachine, "app-02")
	if a.Status != vocab.StatusSynced || !strings.Contains(a.Reason, "disk scsi0 is 2G on the cluster but 1G in the manifest: never shrunk (2G at adoption, accepted)") {
		t.Fatalf("after the adoption: %s %q", a.Status, a.Reason)
	}

	asRoot(t, e, "PUT", "/nodes/pve1/qemu/130/resize", url.Values{"disk": {"scsi0"}, "size": {"3G"}})
	byHand := resizes(e.sim)
	p := e.plan(eng)
	a = p.Find(engine.KindVirtualMachine, "app-02")
	want := "disk scsi0 is 3G on the cluster but 1G in the manifest, grown since its adoption (2G at adoption): never shrunk; raise the size in the manifest to 3G to accept it"
	if a.Status != vocab.StatusOutOfSync || a.Action != vocab.ActionNone || !strings.Contains(a.Reason, want) ||
		!hasGrownChange(a, "scsi0.size", "3G", "1G") {
		t.Fatalf("want the growth reported as drift:\n%s", planText(p))
	}
	_, rep := e.apply(eng)
	for _, r := range rep.Results {
		if r.Status == vocab.StatusFailed {
			t.Fatalf("failed: %+v", r)
		}
	}
	if g := e.guest(130); resizes(e.sim) != byHand || !strings.Contains(g.Config["scsi0"], "size=3G") {
		t.Fatalf("the disk changed: %v", g.Config)
	}

	// The manifest takes the new size and a description: in sync, the
	// record kept beside the description in the one request.
	e.write("vms/app-02.yaml", strings.Replace(strings.Replace(adoptClone, "size: 1G", "size: 3G", 1), "  cores: 2\n", "  cores: 2\n  description: Adopted app\n", 1))
	e.mustApply(eng)
	if d := e.guest(130).Config["description"]; d != "Adopted app\n\n"+engine.AdoptedLinePrefix+" scsi0=2G" {
		t.Fatalf("the description after the sync: %q", d)
	}
	if a := e.plan(eng).Find(engine.KindVirtualMachine, "app-02"); a.Status != vocab.StatusSynced || a.Action != vocab.ActionNone {
		t.Fatalf("with the size declared: %s %s %q", a.Status, a.Action, a.Reason)
	}
}

// A container adopted by the command: its root disk grown after the
// adoption is drift too.
func TestContainerRootDiskGrownAfterAdoptionIsDrift(t *testing.T) {
	e := newEnv(t)
	e.write("ct/debian.yaml", applianceTemplate)
	if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 201, Node: "pve1", Type: "lxc", Config: map[string]string{
		"hostname": "dns-01", "cores": "2", "memory": "512", "ostype": "debian", "arch": "amd64", "unprivileged": "1",
		"rootfs": "local-lvm:vm-201-disk-0,size=16G",
		"net0":   "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:02:01,ip=10.0.0.53/24,gw=10.0.0.1,type=veth"}}); err != nil {
		t.Fatal(err)
	}
	e.write("ct/dns-01.yaml", testvm.Example(t, "containers/dns-01.yaml"))
	eng := e.engine(engine.Options{})
	ad, err := eng.PlanAdoption(context.Background(), e.desired(), "test", "Container/dns-01")
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.ApplyAdoption(context.Background(), ad, nil); err != nil {
		t.Fatal(err)
	}
	if d := e.guest(201).Config["description"]; d != engine.AdoptedLinePrefix+" rootfs=16G" {
		t.Fatalf("the adoption's record: %q", d)
	}
	asRoot(t, e, "PUT", "/nodes/pve1/lxc/201/resize", url.Values{"disk": {"rootfs"}, "size": {"20G"}})
	byHand := resizes(e.sim)
	p := e.plan(eng)
	a := p.Find(engine.KindContainer, "dns-01")
	if a.Status != vocab.StatusOutOfSync || !strings.Contains(a.Reason, "rootfs is 20G on the cluster but 8G in the manifest, grown since its adoption (16G at adoption)") ||
		!hasGrownChange(a, "rootfs.size", "20G", "8G") {
		t.Fatalf("want the growth reported as drift:\n%s", planText(p))
	}
	e.apply(eng)
	if g := e.guest(201); resizes(e.sim) != byHand || !strings.Contains(g.Config["rootfs"], "size=20G") {
		t.Fatalf("the root disk changed: %v", g.Config)
	}
}

// A guest adopted before proxmops recorded adoptions carries the
// ownership tag alone (before adopted-by-proxmops), or both tags without
// the record of its sizes. `proxmops adopt` run again (PlanAdoption and
// ApplyAdoption, as the command and the API do) completes it: it adds
// what is missing and says so, then the larger disk is accepted up to
// its size now; run once more it has nothing to do. A manifest still
// annotated completes it at the next sync. Until then, without
// adopted-by-proxmops the larger disk is refused as on a guest proxmops
// made, and without the record it is reported, never accepted blindly.
func TestAdoptionBeforeRecordsIsCompletedByAdoptingAgain(t *testing.T) {
	unannotated := strings.Replace(adoptClone, "  annotations:\n    proxmops.dev/adopt: \"true\"\n", "", 1)
	for _, tc := range []struct {
		name, tags, manifest, before string
		byCommand                    bool
	}{
		{"the ownership tag alone, by the command", engine.OwnerTag + ";web", unannotated, "shrinking disks is not supported", true},
		{"both tags without the record, by the command", engine.AdoptedTag + ";" + engine.OwnerTag + ";web", unannotated,
			"its size at adoption is not recorded (adopted before proxmops recorded it): never shrunk; run `proxmops adopt VirtualMachine/app-02`", true},
		{"the ownership tag alone, annotated", engine.OwnerTag + ";web", adoptClone, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			handMadeClone(t, e)
			asRoot(t, e, "PUT", "/nodes/pve1/qemu/130/config", url.Values{"tags": {tc.tags}})
			e.write("vms/app-02.yaml", tc.manifest)
			eng := e.engine(engine.Options{})
			p := e.plan(eng)
			a := p.Find(engine.KindVirtualMachine, "app-02")
			if tc.byCommand {
				if a.Adopt || a.Status == vocab.StatusSynced || !strings.Contains(a.Reason, tc.before) {
					t.Fatalf("before: want the larger disk reported:\n%s", planText(p))
				}
				ad, err := eng.PlanAdoption(context.Background(), e.desired(), "test", "VirtualMachine/app-02")
				if err != nil {
					t.Fatal(err)
				}
				if !ad.Completes || !strings.Contains(ad.Plan.Actions[0].Reason, "completing the adoption") ||
					!strings.Contains(ad.HistoryMessage("test"), "completed the adoption of VMID 130") {
					t.Fatalf("want the adoption completed: %+v %q", ad, ad.Plan.Actions[0].Reason)
				}
				if err := eng.ApplyAdoption(context.Background(), ad, nil); err != nil {
					t.Fatal(err)
				}
			} else {
				if !a.Adopt || !strings.Contains(a.Reason, "completing the adoption") {
					t.Fatalf("the annotation completes the adoption:\n%s", planText(p))
				}
				e.mustApply(eng)
			}
			g := e.guest(130)
			if !strings.Contains(g.Config["tags"], engine.AdoptedTag) || g.Config["description"] != engine.AdoptedLinePrefix+" scsi0=2G" {
				t.Fatalf("after: %v", g.Config)
			}
			e.mustApply(eng)
			a = e.plan(eng).Find(engine.KindVirtualMachine, "app-02")
			if a.Status != vocab.StatusSynced || !strings.Contains(a.Reason, "never shrunk (2G at adoption, accepted)") {
				t.Fatalf("after the completion: %s %q", a.Status, a.Reason)
			}
			if _, err := eng.PlanAdoption(context.Background(), e.desired(), "test", "VirtualMachine/app-02"); !errors.Is(err, engine.ErrAlreadyAdopted) {
				t.Fatalf("adopting once more: %v", err)
			}
			if n := resizes(e.sim); n != 0 {
				t.Fatalf("%d resizes sent", n)
			}
		})
	}
}
