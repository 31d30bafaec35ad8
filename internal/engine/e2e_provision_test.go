package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/provision"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// The guests' loopback addresses in these tests.
const (
	provCTIP = "127.0.71.10"
	provVMIP = "127.0.71.11"
)

// provEnv is a simulator whose running guests serve SSH (a real server,
// commands confined to each guest's tree) and an engine that provisions.
type provEnv struct {
	*env
	port  int
	keys  *provision.Keys
	eng   *engine.Engine
	trees string
}

func newProvEnv(t *testing.T) *provEnv {
	t.Helper()
	port := simtest.GuestSSHPort(t, provCTIP)
	trees := filepath.Join(t.TempDir(), "guests")
	e := newEnvWith(t, func(o *pvesim.Options) { o.GuestSSHPort, o.GuestRoot = port, trees })
	if err := e.sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: testvm.CTTemplate, Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	keys := provision.NewKeys(&provision.MemStore{}, "")
	runner := &provision.Runner{Keys: keys, ConnectWait: 20 * time.Second}
	return &provEnv{env: e, port: port, keys: keys, trees: trees, eng: e.engine(engine.Options{Provisioner: runner})}
}

// writeRepo writes a file of the repository (beside the manifests).
func (p *provEnv) writeRepo(name, content string) {
	p.t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// guestFile reads a file of guest vmid's tree.
func (p *provEnv) guestFile(vmid int, path string) string {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join(p.trees, strconv.Itoa(vmid), path))
	if err != nil {
		p.t.Fatalf("guest %d %s: %v", vmid, path, err)
	}
	return string(b)
}

// assertGuestFiles fails for each file of guest vmid's tree, given as path
// and content pairs, that does not hold its content; when says at which
// point.
func (p *provEnv) assertGuestFiles(vmid int, when string, files ...string) {
	p.t.Helper()
	if len(files)%2 != 0 {
		p.t.Fatalf("files come as path and content pairs: %d strings", len(files))
	}
	for i := 0; i < len(files); i += 2 {
		if got := p.guestFile(vmid, files[i]); got != files[i+1] {
			p.t.Errorf("%s: guest %d %s holds %q, want %q", when, vmid, files[i], got, files[i+1])
		}
	}
}

func (p *provEnv) applyOne(kind, name string) engine.Result {
	p.t.Helper()
	plan, rep := p.apply(p.eng)
	for _, r := range rep.Results {
		if r.Kind == kind && r.Name == name {
			return r
		}
	}
	p.t.Fatalf("%s/%s was not applied:\n%s", kind, name, planText(plan))
	return engine.Result{}
}

var brokerCT = testvm.CT{Name: "broker", Node: "pve1", VMID: 310, IP: provCTIP, Spec: `  description: message broker
  provision:
    port: PORT
    packages: [mosquitto, mosquitto-clients]
    files:
      - path: /etc/mosquitto/conf.d/proxmops.conf
        source: files/broker.conf
        mode: "0640"
        owner: "nobody:nogroup"
    copy:
      - {source: lib/broker, path: /opt/broker}
    commands:
      - sh /opt/broker/setup.sh >> /opt/broker/setup.log
      - cat /etc/mosquitto/conf.d/proxmops.conf
`}.YAML()

// A container is provisioned once after its creation and start, in sync
// afterwards (its description keeps the user's text), provisioned again
// when a file's content changes in Git, and a failing command fails the
// action with its exit status and output; nothing reaches the host's files.
func TestProvisionContainerOverSSH(t *testing.T) {
	p := newProvEnv(t)
	p.writeRepo("files/broker.conf", "listener 1883\n")
	p.writeRepo("lib/broker/setup.sh", "echo setup ran\n")
	p.write("broker.yaml", strings.ReplaceAll(brokerCT, "PORT", strconv.Itoa(p.port)))

	plan := p.plan(p.eng)
	a := plan.Find(engine.KindContainer, "broker")
	if a.Action != vocab.ActionCreate || !strings.Contains(planText(plan), "provision: sha256:") ||
		!strings.Contains(planText(plan), "(2 packages, 1 file, 1 copy (1 file), 2 commands)") {
		t.Fatalf("create plan:\n%s", planText(plan))
	}
	r := p.applyOne(engine.KindContainer, "broker")
	if r.Status != vocab.StatusSynced || !strings.Contains(r.Detail, "provisioned in") || !strings.Contains(r.Detail, "listener 1883") {
		t.Fatalf("first apply: %+v", r)
	}
	if got := p.guestFile(310, "var/lib/pvesim/installed-packages"); got != "mosquitto\nmosquitto-clients\n" {
		t.Errorf("installed packages %q", got)
	}
	conf := filepath.Join(p.trees, "310", "etc/mosquitto/conf.d/proxmops.conf")
	if st, err := os.Stat(conf); err != nil || st.Mode().Perm() != 0o640 || fileUID(st) != 65534 {
		t.Errorf("file mode/owner: %v %v", st, err)
	}
	if got := p.guestFile(310, "opt/broker/setup.log"); got != "setup ran\n" {
		t.Errorf("setup log %q", got)
	}
	desc := lxcConfig(t, p.env, "pve1", 310)["description"]
	if !strings.HasPrefix(desc, "message broker\n") || !strings.Contains(desc, "proxmops-provisioned: sha256:") {
		t.Errorf("description %q", desc)
	}
	p.assertInSync(p.eng)

	// A change of the file's content in Git provisions again.
	p.writeRepo("files/broker.conf", "listener 8883\n")
	plan = p.plan(p.eng)
	a = plan.Find(engine.KindContainer, "broker")
	if a.Action != vocab.ActionUpdate || !strings.Contains(a.Reason, "provision: inputs changed (files /etc/mosquitto/conf.d/proxmops.conf)") {
		t.Fatalf("after a content change:\n%s", planText(plan))
	}
	if r := p.applyOne(engine.KindContainer, "broker"); r.Status != vocab.StatusSynced {
		t.Fatalf("re-provision: %+v", r)
	}
	if got := p.guestFile(310, "etc/mosquitto/conf.d/proxmops.conf"); got != "listener 8883\n" {
		t.Errorf("conf after re-provision %q", got)
	}
	p.assertInSync(p.eng)

	// A new description of the user's keeps proxmops' record: no re-run.
	p.write("broker.yaml", strings.ReplaceAll(strings.Replace(brokerCT, "message broker", "MQTT broker", 1), "PORT", strconv.Itoa(p.port)))
	if r := p.applyOne(engine.KindContainer, "broker"); r.Status != vocab.StatusSynced || r.Detail != "" {
		t.Fatalf("description update: %+v", r)
	}
	p.assertInSync(p.eng)
	if got := p.guestFile(310, "opt/broker/setup.log"); got != "setup ran\nsetup ran\n" {
		t.Errorf("provisioning ran again for a description change: %q", got)
	}

	// A failing command fails the action with its status and output; the
	// record stays the old one, so the next plan still wants the run.
	p.write("broker.yaml", strings.ReplaceAll(strings.Replace(brokerCT, "      - cat /etc", "      - echo broker refused >&2; exit 7\n      - cat /etc", 1), "PORT", strconv.Itoa(p.port)))
	r = p.applyOne(engine.KindContainer, "broker")
	if r.Status != vocab.StatusFailed || !strings.Contains(r.Error, "command 2/3") || !strings.Contains(r.Error, "exit status 7") || !strings.Contains(r.Error, "broker refused") {
		t.Fatalf("failing command: %+v", r)
	}
	if a := p.plan(p.eng).Find(engine.KindContainer, "broker"); a.Action != vocab.ActionUpdate || !strings.Contains(a.Reason, "inputs changed (commands)") {
		t.Fatalf("after the failure: %s %s", a.Action, a.Reason)
	}
	for _, host := range []string{"/etc/mosquitto/conf.d/proxmops.conf", "/opt/broker/setup.sh", "/opt/broker/setup.log"} {
		if _, err := os.Stat(host); !os.IsNotExist(err) {
			t.Errorf("the host has %s: %v", host, err)
		}
	}
}

func fileUID(st os.FileInfo) int {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid)
	}
	return -1
}

const appVM = `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: app
  node: pve1
spec:
  vmid: 320
  cores: 1
  memory: 1024
  image:
    source: FILES/images/debian-12-genericcloud-amd64.qcow2
  disks:
    - {storage: local-lvm, size: 10G}
  net:
    - bridge: vmbr0
  cloudInit:
    user: debian
    sshKeys: [SSHKEY]
    ip: ` + provVMIP + `/8
  provision:
    port: PORT
    packages: [nginx]
    files:
      - {path: /etc/motd, content: "MOTD\n"}
    commands:
      - echo provisioned >> /root/app.log
`

// A VM gets proxmops' key through cloud-init beside the declared one, is
// provisioned once as the cloud-init user, is in sync afterwards (the
// managed key is part of the desired keys), and runs again when a file's
// content changes.
func TestProvisionVMOverSSH(t *testing.T) {
	p := newProvEnv(t)
	vm := strings.ReplaceAll(appVM, "PORT", strconv.Itoa(p.port))
	p.write("app.yaml", strings.Replace(vm, "MOTD", "welcome", 1))
	r := p.applyOne(engine.KindVirtualMachine, "app")
	if r.Status != vocab.StatusSynced || !strings.Contains(r.Detail, "1 package(s) (apt), 1 file(s), 1 command(s)") {
		t.Fatalf("create: %+v", r)
	}
	pub, err := p.keys.PublicKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := p.client.QemuConfig(context.Background(), "pve1", 320, false)
	if err != nil {
		t.Fatal(err)
	}
	keys := strings.Join(pve.DecodeSSHKeys(cfg["sshkeys"]), "\n")
	if !strings.Contains(keys, "user@laptop") || !strings.Contains(keys, pub) {
		t.Fatalf("sshkeys %q lack the declared or proxmops' key", keys)
	}
	p.assertGuestFiles(320, "after the first provisioning",
		"etc/motd", "welcome\n",
		"var/lib/pvesim/installed-packages", "nginx\n")
	p.assertInSync(p.eng)

	p.write("app.yaml", strings.Replace(vm, "MOTD", "welcome back", 1))
	if a := p.plan(p.eng).Find(engine.KindVirtualMachine, "app"); a.Action != vocab.ActionUpdate || !strings.Contains(a.Reason, "inputs changed (files /etc/motd)") {
		t.Fatalf("after a content change: %s %s %v", a.Action, a.Reason, a.Changes)
	}
	if r := p.applyOne(engine.KindVirtualMachine, "app"); r.Status != vocab.StatusSynced {
		t.Fatalf("re-provision: %+v", r)
	}
	p.assertGuestFiles(320, "after the re-provisioning",
		"etc/motd", "welcome back\n",
		"root/app.log", "provisioned\nprovisioned\n")
	p.assertInSync(p.eng)
}

// A guest offering another host key than the one pinned at first contact
// fails its provisioning with both fingerprints, runs nothing, until the
// pin is reset; a guest proxmops recreates is pinned anew.
func TestProvisionHostKeyPinned(t *testing.T) {
	p := newProvEnv(t)
	ctx := context.Background()
	motd := testvm.CT{Name: "web", Node: "pve1", VMID: 311, IP: provCTIP, Spec: "  provision:\n    port: " + strconv.Itoa(p.port) + `
    files: [{path: /etc/motd, content: "MOTD\n"}]
`}.YAML()
	p.write("web.yaml", strings.Replace(motd, "MOTD", "one", 1))
	if r := p.applyOne(engine.KindContainer, "web"); r.Status != vocab.StatusSynced {
		t.Fatalf("create: %+v", r)
	}
	pin, ok, err := p.keys.HostKey(ctx, "Container/web")
	if err != nil || !ok || pin.VMID != 311 {
		t.Fatalf("pin %+v %v %v", pin, ok, err)
	}

	// The guest's host key changes behind proxmops' back (a restore from
	// elsewhere, or another machine on the address).
	// (The simulator lays out a tree without its marker afresh, with a new
	// host key, at the guest's next start.)
	if err := os.Remove(filepath.Join(p.trees, "311", ".pvesim-guest")); err != nil {
		t.Fatal(err)
	}
	restart(t, p.sim, 311)
	p.write("web.yaml", strings.Replace(motd, "MOTD", "two", 1))
	r := p.applyOne(engine.KindContainer, "web")
	if r.Status != vocab.StatusFailed || !strings.Contains(r.Error, "host key of Container/web") || !strings.Contains(r.Error, pin.Fingerprint) ||
		!strings.Contains(r.Error, "DELETE /api/v1/resources/Container/web/hostkey") {
		t.Fatalf("changed host key: %+v", r)
	}
	if got := p.guestFile(311, "etc/motd"); got == "two\n" {
		t.Fatal("a file was written to a guest with a changed host key")
	}
	if err := p.keys.ResetHostKey(ctx, "Container/web"); err != nil {
		t.Fatal(err)
	}
	if r := p.applyOne(engine.KindContainer, "web"); r.Status != vocab.StatusSynced || p.guestFile(311, "etc/motd") != "two\n" {
		t.Fatalf("after the reset: %+v", r)
	}
	p.assertInSync(p.eng)

	// Deleted and created again by proxmops: a new guest, a new pin.
	old, _, _ := p.keys.HostKey(ctx, "Container/web")
	upid, err := p.client.LxcStop(ctx, "pve1", 311)
	if err == nil {
		_, err = p.client.WaitTask(ctx, upid, nil)
	}
	if err == nil {
		upid, err = p.client.LxcDelete(ctx, "pve1", 311)
	}
	if err == nil {
		_, err = p.client.WaitTask(ctx, upid, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	if r := p.applyOne(engine.KindContainer, "web"); r.Status != vocab.StatusSynced || r.Action != vocab.ActionCreate {
		t.Fatalf("recreate: %+v", r)
	}
	if now, _, _ := p.keys.HostKey(ctx, "Container/web"); now.Fingerprint == old.Fingerprint {
		t.Fatal("the recreated guest kept the old pin")
	}
	p.assertInSync(p.eng)
}

// restart stops and starts a guest through the simulator: its SSH server
// starts anew from its tree.
func restart(t *testing.T, sim *pvesim.Server, vmid int) {
	t.Helper()
	if err := sim.SetGuestRunning(vmid, false); err != nil {
		t.Fatal(err)
	}
	if err := sim.SetGuestRunning(vmid, true); err != nil {
		t.Fatal(err)
	}
	// Asking for the address brings the SSH servers in line at once.
	if _, err := sim.GuestSSHAddr(vmid); err != nil {
		t.Fatal(err)
	}
}
