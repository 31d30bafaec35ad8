package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

const (
	movedVM = `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: web-01
  node: pve1
spec:
  vmid: 130
  cores: 1
  memory: 512
  description: DESC
  disks:
    - storage: local-lvm
      size: 4G
  net:
    - bridge: vmbr0
  state: running
`
	movedCT = `apiVersion: proxmops.dev/v1
kind: Container
metadata:
  name: cache-01
  node: pve1
spec:
  vmid: 230
  template: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
  cores: CORES
  memory: 512
  rootfs:
    storage: local-lvm
    size: 4G
  net:
    - name: eth0
      bridge: vmbr0
      ip: dhcp
  state: running
`
)

// migrate moves a guest through pvesim's migrate call, as a person, HA or
// PVE's load balancing would, and waits for the task.
func (e *env) migrate(typ string, vmid int, from, to string, params ...string) {
	e.t.Helper()
	ctx := context.Background()
	p := pve.NewParams().Set("target", to)
	for i := 0; i+1 < len(params); i += 2 {
		p.Set(params[i], params[i+1])
	}
	var upid string
	if err := e.client.Post(ctx, fmt.Sprintf("/nodes/%s/%s/%d/migrate", from, typ, vmid), p, &upid); err != nil {
		e.t.Fatalf("migrate %d: %v", vmid, err)
	}
	st, err := e.client.WaitTask(ctx, upid, nil)
	if err != nil || st.ExitStatus != "OK" {
		e.t.Fatalf("migrate %d: %v %q", vmid, err, st.ExitStatus)
	}
}

// TestAMovedGuestIsLeftWhereItIsAndNamed moves a VM (live) and a
// container (restart mode) to another node: the plan counts them in sync,
// says where they are and what the manifest says, in its text and JSON,
// and a later change is applied on the node they are on, with no guest
// created on the declared node.
func TestAMovedGuestIsLeftWhereItIsAndNamed(t *testing.T) {
	e := newEnv(t)
	if err := e.sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", Size: 120 << 20}); err != nil {
		t.Fatal(err)
	}
	e.write("vm.yaml", strings.Replace(movedVM, "DESC", "web", 1))
	e.write("ct.yaml", strings.Replace(movedCT, "CORES", "1", 1))
	eng := e.engine(engine.Options{})
	e.converge(eng)

	e.migrate("qemu", 130, "pve1", "pve2", "online", "1", "with-local-disks", "1")
	e.migrate("lxc", 230, "pve1", "pve3", "restart", "1")

	p := e.assertInSync(eng)
	for _, want := range []struct {
		key, node, note string
	}{
		{"VirtualMachine/web-01", "pve2", "running on pve2; the manifest says pve1: moved by HA or a migration, left where it is"},
		{"Container/cache-01", "pve3", "running on pve3; the manifest says pve1: moved by HA or a migration, left where it is"},
	} {
		kind, name, _ := strings.Cut(want.key, "/")
		a := p.Find(kind, name)
		if a.Node != want.node || a.ManifestNode != "pve1" || a.Status != vocab.StatusSynced || !strings.Contains(a.Reason, want.note) {
			t.Errorf("%s: node %s, manifest node %q, %s: %q; want %s, pve1, Synced, %q", want.key, a.Node, a.ManifestNode, a.Status, a.Reason, want.node, want.note)
		}
	}
	if p.Summary.InSync() != 2 {
		t.Errorf("in sync: %d, want 2", p.Summary.InSync())
	}
	if text := planText(p); !strings.Contains(text, "running on pve2; the manifest says pve1: moved by HA or a migration, left where it is") {
		t.Errorf("plan text does not name the move:\n%s", text)
	}
	var doc struct {
		Actions []struct {
			Name, Node, ManifestNode string
		}
	}
	decodePlanJSON(t, p, &doc)
	for _, a := range doc.Actions {
		if a.ManifestNode != "pve1" {
			t.Errorf("JSON %s: node %s, manifestNode %q", a.Name, a.Node, a.ManifestNode)
		}
	}

	// A change is applied where the guest is.
	e.write("vm.yaml", strings.Replace(movedVM, "DESC", "web, moved", 1))
	e.write("ct.yaml", strings.Replace(movedCT, "CORES", "2", 1))
	e.converge(eng)
	if g := e.guest(130); g.Node != "pve2" || !strings.HasPrefix(g.Config["description"], "web, moved") {
		t.Errorf("VM 130 on %s with description %q, want pve2 and the new one", g.Node, g.Config["description"])
	}
	if g := e.guest(230); g.Node != "pve3" || g.Config["cores"] != "2" {
		t.Errorf("CT 230 on %s with cores %s, want pve3 and 2", g.Node, g.Config["cores"])
	}
	e.assertInSync(eng)
}

// TestAMovedVMGetsItsSeedOnAStorageOfItsNode: a VM whose cloud-init seed
// was on a storage of its declared node only (Proxmox migrates no guest
// with a local CD image: the person detached it first) is moved; the seed
// proxmops attaches again goes to an ISO storage of the node the VM is on,
// not to the declared node's, which the VM's node cannot reach.
func TestAMovedVMGetsItsSeedOnAStorageOfItsNode(t *testing.T) {
	e := newEnv(t)
	for _, st := range []pvesim.StorageSpec{
		{ID: "local", Type: "dir", Path: "/var/lib/vz", Content: []string{"vztmpl", "import", "snippets", "backup"}},
		{ID: "iso-pve1", Type: "dir", Path: "/srv/iso", Content: []string{"iso"}, Nodes: []string{"pve1"}},
	} {
		if err := e.sim.SetStorage(st); err != nil {
			t.Fatal(err)
		}
	}
	e.write("vm.yaml", strings.Replace(strings.Replace(movedVM, "DESC", "web", 1), "  state: running\n",
		"  userData: |\n    #cloud-config\n    hostname: web-01\n  state: stopped\n", 1))
	eng := e.engine(engine.Options{})
	e.converge(eng)
	if seed := e.guest(130).Config["ide0"]; !strings.HasPrefix(seed, "iso-pve1:iso/proxmops-cidata-130-") {
		t.Fatalf("seed %q, want one on iso-pve1", seed)
	}
	ctx := context.Background()
	if err := e.client.QemuSetConfig(ctx, "pve1", 130, pve.NewParams().Set("delete", "ide0")); err != nil {
		t.Fatal(err)
	}
	e.migrate("qemu", 130, "pve1", "pve2")

	p, rep := e.apply(eng)
	a := p.Find(engine.KindVirtualMachine, "web-01")
	if a.Node != "pve2" || a.ManifestNode != "pve1" {
		t.Errorf("planned on %s (manifest %q)", a.Node, a.ManifestNode)
	}
	for _, r := range rep.Results {
		if r.Status != vocab.StatusSynced {
			t.Fatalf("%s/%s: %s %s", r.Kind, r.Name, r.Status, r.Error)
		}
	}
	if seed := e.guest(130).Config["ide0"]; !strings.HasPrefix(seed, "nfs-shared:iso/proxmops-cidata-130-") {
		t.Errorf("seed %q, want one on nfs-shared, which pve2 reads", seed)
	}
	e.assertInSync(eng)
}

// TestEveryCallForAMovedGuestGoesToItsNode moves a VM and then drives each
// kind of call proxmops makes for a guest: a change with a snapshot first,
// a disk growth, a power change, the snapshot list, a rollback and a
// delete. pvesim refuses a call sent to a node the guest is not on, so each
// succeeds only on the guest's own node.
func TestEveryCallForAMovedGuestGoesToItsNode(t *testing.T) {
	e := newEnv(t)
	vm := strings.Replace(movedVM, "DESC", "web", 1) + "  snapshots:\n    beforeChange: true\n    keep: 2\n"
	e.write("vm.yaml", vm)
	eng := e.engine(engine.Options{})
	e.converge(eng)
	e.migrate("qemu", 130, "pve1", "pve3", "online", "1", "with-local-disks", "1")

	// A change (with its snapshot first), a disk growth and a stop.
	vm = strings.Replace(strings.Replace(strings.Replace(vm, "description: web", "description: web, moved", 1), "size: 4G", "size: 6G", 1), "state: running", "state: stopped", 1)
	e.write("vm.yaml", vm)
	p := e.plan(eng)
	if a := p.Find(engine.KindVirtualMachine, "web-01"); a.Node != "pve3" || a.Action != vocab.ActionUpdate || a.ManifestNode != "pve1" {
		t.Fatalf("planned %s on %s (manifest %q): %s", a.Action, a.Node, a.ManifestNode, a.Reason)
	}
	e.converge(eng)
	g := e.guest(130)
	if g.Node != "pve3" || g.Running || !strings.Contains(g.Config["scsi0"], "size=6G") || len(g.Snapshots) != 1 {
		t.Fatalf("VM 130 on %s, running %v, scsi0 %q, snapshots %v", g.Node, g.Running, g.Config["scsi0"], g.Snapshots)
	}

	// The snapshot list and a rollback.
	ctx := context.Background()
	list, err := eng.GuestSnapshots(ctx, e.desired(), engine.KindVirtualMachine, "web-01")
	if err != nil || list.Node != "pve3" || len(list.Snapshots) == 0 {
		t.Fatalf("snapshots: %v %+v", err, list)
	}
	if _, err := eng.Rollback(ctx, e.desired(), engine.KindVirtualMachine, "web-01", "", nil); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if g := e.guest(130); g.Node != "pve3" || !strings.Contains(g.Config["scsi0"], "size=4G") {
		t.Errorf("after the rollback: on %s, scsi0 %q", g.Node, g.Config["scsi0"])
	}

	// A delete.
	if _, err := eng.Delete(ctx, e.desired(), engine.KindVirtualMachine, "web-01", nil); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, ok := e.sim.Guest(130); ok {
		t.Error("VM 130 still exists after the delete")
	}
}

// TestAdoptingAMovedGuestTagsItWhereItIs adopts a guest someone made on
// another node than the manifest names.
func TestAdoptingAMovedGuestTagsItWhereItIs(t *testing.T) {
	e := newEnv(t)
	if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 130, Node: "pve2", Running: true,
		Config: map[string]string{"name": "web-01", "cores": "1", "memory": "512", "description": "web", "scsi0": "local-lvm:vm-130-disk-0,size=4G", "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0", "boot": "order=scsi0"}}); err != nil {
		t.Fatal(err)
	}
	e.write("vm.yaml", strings.Replace(strings.Replace(movedVM, "DESC", "web", 1), "  node: pve1\n", "  node: pve1\n  annotations:\n    proxmops.dev/adopt: \"true\"\n", 1))
	eng := e.engine(engine.Options{})
	p := e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "web-01")
	if !a.Adopt || a.Node != "pve2" || a.ManifestNode != "pve1" || !strings.Contains(a.Reason, "running on pve2; the manifest says pve1") {
		t.Fatalf("adopt planned on %s (manifest %q, adopt %v): %s", a.Node, a.ManifestNode, a.Adopt, a.Reason)
	}
	e.converge(eng)
	if g := e.guest(130); g.Node != "pve2" || !strings.Contains(g.Config["tags"], "managed-by-proxmops") {
		t.Errorf("VM 130 on %s with tags %q", g.Node, g.Config["tags"])
	}
	e.assertInSync(eng)
}

// TestAGuestMovedWhileItsActionWaitsIsPlannedAgainWhereItIs: the guest is
// migrated between the plan and the apply; the action's call fails on the
// old node, the result says where the guest went and asks for a retry, and
// the next plan applies the change there.
func TestAGuestMovedWhileItsActionWaitsIsPlannedAgainWhereItIs(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{}, "vm.yaml", strings.Replace(movedVM, "DESC", "web", 1))
	e.write("vm.yaml", strings.Replace(movedVM, "DESC", "web, changed", 1))
	p := e.plan(eng)
	e.migrate("qemu", 130, "pve1", "pve2", "online", "1", "with-local-disks", "1")
	rep, err := eng.Apply(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	const want = "VMID 130 is now on pve2: moved by HA or a migration while proxmops acted on it on pve1; planned again where it is"
	if r.Status != vocab.StatusFailed || !r.Retry || !strings.Contains(r.Error, want) {
		t.Fatalf("result %s retry %v: %q; want Failed, a retry and %q", r.Status, r.Retry, r.Error, want)
	}
	e.converge(eng)
	if g := e.guest(130); g.Node != "pve2" || !strings.HasPrefix(g.Config["description"], "web, changed") {
		t.Errorf("VM 130 on %s with description %q", g.Node, g.Config["description"])
	}
}

// TestAGuestMigratedBetweenTheListAndItsReadIsFoundOnItsNewNode migrates
// a VM after the plan listed it on pve1 and before it reads its
// configuration there, which Proxmox then answers as for a deleted guest
// ("does not exist"): the plan finds it on pve2 instead of planning a
// create that Proxmox would refuse ("already exists on node 'pve2'").
func TestAGuestMigratedBetweenTheListAndItsReadIsFoundOnItsNewNode(t *testing.T) {
	e := newEnv(t)
	e.write("vm.yaml", strings.Replace(movedVM, "DESC", "web", 1))
	e.converge(e.engine(engine.Options{}))

	target, err := url.Parse(e.sim.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	target.Path = ""
	proxy := httputil.NewSingleHostReverseProxy(target)
	var once sync.Once
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/api2/json/nodes/pve1/qemu/130/") {
			once.Do(func() { e.migrate("qemu", 130, "pve1", "pve2", "online", "1", "with-local-disks", "1") })
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	client, err := pve.New(pve.Config{Endpoint: front.URL + "/api2/json", TokenID: tokenID, TokenSecret: tokenSecret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)

	p, err := engine.New(client, engine.Options{}).Plan(context.Background(), e.desired(), "test")
	if err != nil {
		t.Fatal(err)
	}
	a := p.Find(engine.KindVirtualMachine, "web-01")
	if a.Action != vocab.ActionNone || a.Node != "pve2" || a.Status != vocab.StatusSynced {
		t.Fatalf("after a migration during the plan: %s on %s, %s: %s; want no action on pve2, Synced", a.Action, a.Node, a.Status, a.Reason)
	}
}
