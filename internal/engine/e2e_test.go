package engine_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

const (
	tokenID     = "root@pam!proxmops"
	tokenSecret = "e2e-secret"
	sshKey      = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGvY7cXKfJ7Q0Zl1dFh4r3n1Xx2m9Ykq1z5b7a8c9d0e user@laptop"
	// taskSpeed keeps task durations real but short: a clone or an import
	// takes tens of milliseconds instead of seconds.
	taskSpeed = 0.01
)

// webVM and dnsCT are the heads of the VM "web" (VMID 150 on pve1) and
// the container "dns" (250 on pve1) the kind tests add their spec to.
const (
	webVM = `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: web
  node: pve1
spec:
  vmid: 150
`
	dnsCT = `apiVersion: proxmops.dev/v1
kind: Container
metadata:
  name: dns
  node: pve1
spec:
  vmid: 250
`
)

// qcow2Image is a minimal qcow2 header announcing a virtual size.
func qcow2Image(virtual int64) []byte {
	b := make([]byte, 4096)
	copy(b, "QFI\xfb")
	binary.BigEndian.PutUint32(b[4:], 3)
	binary.BigEndian.PutUint64(b[24:], uint64(virtual))
	return b
}

// env is a simulated cluster, a file server for images and ISOs on
// loopback, and an engine talking to the cluster over real HTTP.
type env struct {
	t       testing.TB
	sim     *pvesim.Server
	client  *pve.Client
	files   *httptest.Server
	isoData []byte
	isoSum  string
	dir     string
	fetches atomic.Int32
}

func newEnv(t testing.TB) *env { t.Helper(); return newEnvWith(t, nil) }

// withManifests starts a cluster with the manifests, given as path and
// YAML pairs, in its repository and an engine with opts over it.
func withManifests(t testing.TB, opts engine.Options, manifests ...string) (*env, *engine.Engine) {
	t.Helper()
	e := newEnv(t)
	return e, e.engineWith(opts, manifests...)
}

// convergedWith is withManifests with the manifests converged.
func convergedWith(t testing.TB, opts engine.Options, manifests ...string) (*env, *engine.Engine) {
	t.Helper()
	e := newEnv(t)
	return e, e.convergedEngine(opts, manifests...)
}

// newEnvWith is newEnv with simulator options changed by tune.
func newEnvWith(t testing.TB, tune func(*pvesim.Options)) *env {
	t.Helper()
	opts := pvesim.Options{Nodes: 3, TokenID: tokenID, TokenSecret: tokenSecret, RootPassword: rootPassword, TaskSpeed: taskSpeed, Seed: 7}
	if tune != nil {
		tune(&opts)
	}
	sim := simtest.Start(t, opts)
	e := &env{t: t, sim: sim, dir: t.TempDir()}
	e.isoData = make([]byte, 256<<10)
	if _, err := rand.Read(e.isoData); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(e.isoData)
	e.isoSum = hex.EncodeToString(sum[:])
	img := qcow2Image(2 << 30)
	e.files = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.fetches.Add(1)
		switch {
		case strings.HasSuffix(r.URL.Path, ".qcow2"), strings.HasSuffix(r.URL.Path, ".img"):
			_, _ = w.Write(img)
		case strings.HasSuffix(r.URL.Path, ".iso"):
			_, _ = w.Write(e.isoData)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(e.files.Close)
	client, err := pve.New(pve.Config{Endpoint: sim.APIURL(), TokenID: tokenID, TokenSecret: tokenSecret,
		RetryBackoff: 5 * time.Millisecond, TaskPollMin: 5 * time.Millisecond, TaskPollMax: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	e.client = client
	return e
}

// write puts a manifest file in the repository directory.
func (e *env) write(name, yaml string) {
	e.t.Helper()
	yaml = strings.ReplaceAll(yaml, "FILES", e.files.URL)
	yaml = strings.ReplaceAll(yaml, "ISOSUM", e.isoSum)
	yaml = strings.ReplaceAll(yaml, "SSHKEY", sshKey)
	p := filepath.Join(e.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) remove(name string) {
	if err := os.Remove(filepath.Join(e.dir, name)); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) desired() *engine.Desired {
	e.t.Helper()
	set, err := manifest.LoadDir(e.dir)
	if err != nil {
		e.t.Fatalf("manifests: %v", err)
	}
	return engine.DesiredFromSet(set, nil)
}

func (e *env) engine(opts engine.Options) *engine.Engine { return engine.New(e.client, opts) }

// engineWith writes the manifests, given as path and YAML pairs, and
// returns an engine with opts over the cluster.
func (e *env) engineWith(opts engine.Options, manifests ...string) *engine.Engine {
	e.t.Helper()
	if len(manifests)%2 != 0 {
		e.t.Fatalf("manifests come as path and YAML pairs: %d strings", len(manifests))
	}
	for i := 0; i < len(manifests); i += 2 {
		e.write(manifests[i], manifests[i+1])
	}
	return e.engine(opts)
}

// convergedEngine is engineWith with the manifests converged.
func (e *env) convergedEngine(opts engine.Options, manifests ...string) *engine.Engine {
	e.t.Helper()
	eng := e.engineWith(opts, manifests...)
	e.converge(eng)
	return eng
}

func (e *env) plan(eng *engine.Engine) *engine.Plan {
	e.t.Helper()
	p, err := eng.Plan(context.Background(), e.desired(), "test")
	if err != nil {
		e.t.Fatalf("plan: %v", err)
	}
	return p
}

func (e *env) apply(eng *engine.Engine) (*engine.Plan, *engine.Report) {
	e.t.Helper()
	p := e.plan(eng)
	rep, err := eng.Apply(context.Background(), p, nil)
	if err != nil {
		e.t.Fatalf("apply: %v", err)
	}
	return p, rep
}

// converge applies and fails the test on any failed action.
func (e *env) converge(eng *engine.Engine) *engine.Report {
	e.t.Helper()
	_, rep := e.mustApply(eng)
	return rep
}

// mustApply is converge returning the plan applied too.
func (e *env) mustApply(eng *engine.Engine) (*engine.Plan, *engine.Report) {
	e.t.Helper()
	p, rep := e.apply(eng)
	for _, r := range rep.Results {
		if r.Status != vocab.StatusSynced {
			e.t.Errorf("%s/%s %s: %s %s", r.Kind, r.Name, r.Action, r.Status, r.Error)
		}
	}
	if e.t.Failed() {
		for _, a := range p.Actions {
			e.t.Logf("planned %s: %s %s (%s) %v", a.Key(), a.Action, a.Status, a.Reason, a.Changes)
		}
		e.t.FailNow()
	}
	return p, rep
}

// assertInSync fails unless a fresh plan has nothing to do.
func (e *env) assertInSync(eng *engine.Engine) *engine.Plan {
	e.t.Helper()
	p := e.plan(eng)
	for _, a := range p.Actions {
		if a.Action != vocab.ActionNone || a.Status != vocab.StatusSynced {
			e.t.Errorf("not in sync: %s %s %s: %s %v", a.Key(), a.Action, a.Status, a.Reason, a.Changes)
		}
	}
	if p.HasChanges() {
		e.t.Errorf("plan has changes: %+v", p.Summary)
	}
	return p
}

// assertOwnerTag fails unless guest vmid carries proxmops' ownership tag
// exactly when want says; what says the failure.
func (e *env) assertOwnerTag(vmid int, want bool, what string) {
	e.t.Helper()
	if g := e.guest(vmid); strings.Contains(g.Config["tags"], engine.OwnerTag) != want {
		e.t.Fatalf("%s (guest %d owner-tagged %v, want %v): %v", what, vmid, !want, want, g.Config)
	}
}

// assertPlanned fails unless p plans kind/name as action with a reason
// holding part; it returns the action.
func assertPlanned(t testing.TB, p *engine.Plan, kind, name string, action vocab.Action, part string) *engine.Action {
	t.Helper()
	a := p.Find(kind, name)
	if a == nil {
		t.Fatalf("%s/%s is not planned:\n%s", kind, name, planText(p))
	}
	if a.Action != action || !strings.Contains(a.Reason, part) {
		t.Fatalf("%s/%s planned %s %s: %q %v; want %s with %q", kind, name, a.Action, a.Status, a.Reason, a.Changes, action, part)
	}
	return a
}

func (e *env) guest(vmid int) pvesim.GuestInfo {
	e.t.Helper()
	g, ok := e.sim.Guest(vmid)
	if !ok {
		e.t.Fatalf("guest %d does not exist", vmid)
	}
	return g
}

// The seed's examples, pointed at the loopback file server.
const (
	seedVMImage = `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: app-01
  node: pve1
  tags: [prod, app]
spec:
  vmid: 120
  cores: 2
  memory: 2048
  cpu: x86-64-v2
  image:
    source: FILES/images/debian-12-genericcloud-amd64.qcow2
  disks:
    - storage: local-lvm
      size: 20G
  net:
    - bridge: vmbr0
  cloudInit:
    user: debian
    sshKeys:
      - SSHKEY
    ip: dhcp
    nameserver: 1.1.1.1
  applyMode: reboot
  state: running
`
	seedVMVolume = `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: app-04
  node: pve1
spec:
  vmid: 121
  cores: 1
  memory: 1024
  image:
    source: local:import/prebuilt.qcow2
  disks:
    - storage: local-lvm
      size: 10G
  net:
    - bridge: vmbr0
  cloudInit:
    user: debian
    ip: "ip=10.0.0.5/24,gw=10.0.0.1"
  state: stopped
`
	seedTemplate = `apiVersion: proxmops.dev/v1
kind: Template
metadata:
  name: debian-12-tpl
  node: pve1
spec:
  vmid: 9000
  image:
    source: FILES/images/debian-12-genericcloud-amd64.qcow2
  cores: 2
  memory: 2048
  disks:
    - storage: local-lvm
      size: 10G
  net:
    - bridge: vmbr0
`
	seedClone = `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: app-02
  node: pve1
spec:
  vmid: 130
  fromTemplate: debian-12-tpl
  cores: 2
  memory: 2048
  disks:
    - storage: local-lvm
      size: 20G
  cloudInit:
    user: app
    sshKeys:
      - SSHKEY
    ip: dhcp
  state: running
`
	seedLinkedClone = `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: app-03
  node: pve1
spec:
  vmid: 131
  fromTemplate: { name: debian-12-tpl, linked: true }
  cores: 1
  memory: 1024
  cloudInit:
    user: app
    ip: dhcp
  state: running
`
	seedUserData = `apiVersion: proxmops.dev/v1
kind: Template
metadata:
  name: guix-homelab-template
  node: pve1
spec:
  vmid: 9001
  image:
    source: FILES/images/jammy-server-cloudimg-amd64.img
  disks:
    - storage: local-lvm
      size: 8G
  net:
    - bridge: vmbr0
---
apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: web01
  node: pve1
spec:
  vmid: 140
  fromTemplate: guix-homelab-template
  userData: |
    #cloud-config
    ((system-file . "systems/web01.scm"))
  applyMode: reboot
  state: running
`
	seedIso = `apiVersion: proxmops.dev/v1
kind: Iso
metadata:
  name: debian-12
spec:
  source: FILES/isos/debian-12-amd64-netinst.iso
  node: pve1
  storage: local
  checksum:
    algo: sha256
    value: ISOSUM
`
)

func TestSeedExamplesConverge(t *testing.T) {
	e := newEnv(t)
	if err := e.sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:import/prebuilt.qcow2", Size: 2 << 30}); err != nil {
		t.Fatal(err)
	}
	e.write("vms/app-01.yaml", seedVMImage)
	e.write("vms/app-04.yaml", seedVMVolume)
	e.write("templates/debian-12-tpl.yaml", seedTemplate)
	e.write("vms/app-02.yaml", seedClone)
	e.write("vms/app-03.yaml", seedLinkedClone)
	e.write("vms/web01.yaml", seedUserData)
	e.write("isos/debian-12.yaml", seedIso)
	eng := e.engine(engine.Options{Concurrency: 4})

	p := e.plan(eng)
	if p.Summary.Create != 8 {
		for _, a := range p.Actions {
			t.Logf("%s %s %s %s", a.Key(), a.Action, a.Status, a.Reason)
		}
		t.Fatalf("want 8 creates, got %+v", p.Summary)
	}
	// Dependencies: clones after their template.
	if a := p.Find(engine.KindVirtualMachine, "app-02"); len(a.DependsOn) != 1 || a.DependsOn[0] != "Template/debian-12-tpl" {
		t.Fatalf("app-02 depends on %v", a.DependsOn)
	}
	e.converge(eng)
	e.assertInSync(eng)

	app01 := e.guest(120)
	if !app01.Running {
		t.Error("app-01 is not running")
	}
	c := app01.Config
	if !strings.Contains(c["scsi0"], "size=20G") || c["cores"] != "2" || c["memory"] != "2048" || c["cpu"] != "x86-64-v2" {
		t.Errorf("app-01 config %v", c)
	}
	if c["sshkeys"] != pve.EncodeSSHKeys([]string{sshKey}) || c["ciuser"] != "debian" || c["ipconfig0"] != "ip=dhcp" || c["nameserver"] != "1.1.1.1" {
		t.Errorf("app-01 cloud-init %v", c)
	}
	if !strings.Contains(c["tags"], "managed-by-proxmops") || !strings.Contains(c["ide2"], "cloudinit") {
		t.Errorf("app-01 tags/drive %v", c)
	}
	if app04 := e.guest(121); app04.Running || app04.Config["ipconfig0"] != "gw=10.0.0.1,ip=10.0.0.5/24" && app04.Config["ipconfig0"] != "ip=10.0.0.5/24,gw=10.0.0.1" {
		t.Errorf("app-04 %v running=%v", app04.Config, app04.Running)
	}
	if tpl := e.guest(9000); tpl.Config["template"] != "1" {
		t.Errorf("debian-12-tpl is not a template: %v", tpl.Config)
	}
	if app02 := e.guest(130); !strings.Contains(app02.Config["scsi0"], "size=20G") || app02.Config["ciuser"] != "app" {
		t.Errorf("app-02 %v", app02.Config)
	}
	if app03 := e.guest(131); !strings.Contains(app03.Config["ide2"], "cloudinit") || app03.Config["ciuser"] != "app" {
		t.Errorf("app-03 has no cloud-init drive: %v", app03.Config)
	}
	web := e.guest(140)
	if !strings.Contains(web.Config["ide0"], "proxmops-cidata-140-") || !web.Running {
		t.Errorf("web01 has no seed ISO attached: %v", web.Config)
	}
	// The image was downloaded once for the template and app-01, and once
	// as a .qcow2 for the jammy ".img".
	vols := strings.Join(e.sim.Volumes("pve1", "local"), " ")
	for _, want := range []string{"local:import/debian-12-genericcloud-amd64.qcow2", "local:import/jammy-server-cloudimg-amd64.qcow2", "local:iso/debian-12-amd64-netinst.iso"} {
		if !strings.Contains(vols, want) {
			t.Errorf("missing %s in %s", want, vols)
		}
	}
	if n := e.fetches.Load(); n != 3 {
		t.Errorf("%d downloads, want 3 (two images, one ISO)", n)
	}
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
