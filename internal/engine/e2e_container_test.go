package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/render"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// requireInSync plans again and fails when anything is still to do, or
// cannot be evaluated.
func (e *env) requireInSync(eng *engine.Engine) *engine.Plan {
	e.t.Helper()
	p := e.plan(eng)
	if p.HasChanges() || p.Summary.Unknown > 0 {
		e.t.Fatalf("not in sync after apply:\n%s", planText(p))
	}
	return p
}

// pruneRemoved removes the manifest files and fails unless eng, which
// prunes, plans that many deletes (of what); then it applies the plan.
func (e *env) pruneRemoved(eng *engine.Engine, deletes int, what string, files ...string) {
	e.t.Helper()
	for _, f := range files {
		e.remove(f)
	}
	if p := e.plan(eng); p.Summary.Delete != deletes {
		e.t.Fatalf("want %s deleted:\n%s", what, planText(p))
	}
	e.mustApply(eng)
}

// decodePlanJSON decodes the plan's JSON form into doc.
func decodePlanJSON(t *testing.T, p *engine.Plan, doc any) {
	t.Helper()
	raw, err := p.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, doc); err != nil {
		t.Fatal(err)
	}
}

func planText(p *engine.Plan) string {
	var b strings.Builder
	render.Plan(&b, p, false)
	return b.String()
}

func lxcConfig(t *testing.T, e *env, node string, vmid int) pve.ConfigValues {
	t.Helper()
	cfg, err := e.client.LxcConfig(context.Background(), node, vmid)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The seed's container with the appliance it names: created from the
// newest catalogue template, in sync on the next plan in Proxmox's
// read-back forms, drift corrected, growth by resize, shrink refused,
// creation-only changes reported, deleted only when owned.
func TestContainerSeedLifecycle(t *testing.T) {
	e, eng := withManifests(t, engine.Options{},
		"ct/debian.yaml", applianceTemplate,
		"ct/dns-01.yaml", testvm.Example(t, "containers/dns-01.yaml"),
	)
	cfg := containerIsCreatedFromTheNewestTemplate(t, e, eng)
	containerDriftIsCorrectedLive(t, e, eng, cfg)
	dns := containerGrowsAndKeepsPendingAndCreationOnlyChanges(t, e, eng)
	containerRebootAppliesThePendingSetting(t, e, eng, dns)
	containerShrinkIsRefused(t, e, eng)
	containerIsDeletedOnlyWithPrune(t, e, eng)
}

// The steps of TestContainerSeedLifecycle, in order on one cluster: the
// container is dns-01 (VMID 201 on pve1) from examples/.

// containerIsCreatedFromTheNewestTemplate returns its configuration as created.
func containerIsCreatedFromTheNewestTemplate(t *testing.T, e *env, eng *engine.Engine) pve.ConfigValues {
	ctx := context.Background()
	p := e.plan(eng)
	ct := p.Find(engine.KindContainer, "dns-01")
	tpl := p.Find(engine.KindContainerTemplate, "debian-12-standard")
	if ct == nil || tpl == nil || ct.Action != vocab.ActionCreate || tpl.Action != vocab.ActionCreate {
		t.Fatalf("want both created:\n%s", planText(p))
	}
	if !strings.Contains(planText(p), "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst") {
		t.Fatalf("the newest debian-12-standard of the catalogue is 12.7-1:\n%s", planText(p))
	}
	e.mustApply(eng)
	e.requireInSync(eng)

	cfg := lxcConfig(t, e, "pve1", 201)
	for key, want := range map[string]string{"hostname": "dns-01", "cores": "1", "memory": "512", "unprivileged": "1"} {
		if cfg[key] != want {
			t.Errorf("%s = %q, want %q", key, cfg[key], want)
		}
	}
	if !strings.Contains(cfg["net0"], "hwaddr=") || !strings.Contains(cfg["net0"], "type=veth") || !strings.Contains(cfg["net0"], "ip=10.0.0.53/24") {
		t.Errorf("net0 = %q", cfg["net0"])
	}
	if cfg["rootfs"] != "local-lvm:vm-201-disk-0,size=8G" {
		t.Errorf("rootfs = %q", cfg["rootfs"])
	}
	if !strings.Contains(cfg["tags"], engine.OwnerTag) {
		t.Errorf("tags = %q", cfg["tags"])
	}
	if st, _ := e.client.LxcStatus(ctx, "pve1", 201); st.Status != "running" {
		t.Errorf("status %q, want running", st.Status)
	}
	return cfg
}

// containerDriftIsCorrectedLive: hand-made drift on what Proxmox applies
// live; cfg is the configuration as created.
func containerDriftIsCorrectedLive(t *testing.T, e *env, eng *engine.Engine, cfg pve.ConfigValues) {
	ctx := context.Background()
	if err := e.client.LxcSetConfig(ctx, "pve1", 201, pve.NewParams().Set("cores", "3").Set("hostname", "other").
		Set("net0", strings.Replace(cfg["net0"], "bridge=vmbr0", "bridge=vmbr0,tag=7", 1))); err != nil {
		t.Fatal(err)
	}
	p := e.plan(eng)
	a := p.Find(engine.KindContainer, "dns-01")
	if a.Action != vocab.ActionUpdate || a.NeedsReboot {
		t.Fatalf("want a live update:\n%s", planText(p))
	}
	text := planText(p)
	for _, want := range []string{"cores: 3 -> 1", "hostname: other -> dns-01", "net0.tag: 7 -> (unset)"} {
		if !strings.Contains(text, want) {
			t.Errorf("plan lacks %q:\n%s", want, text)
		}
	}
	paths := map[string]string{}
	for _, c := range a.Changes {
		paths[c.Field] = c.Path
	}
	for field, want := range map[string]string{"cores": "spec.cores", "hostname": "spec.hostname", "net0.tag": "spec.net[0].tag"} {
		if paths[field] != want {
			t.Errorf("change %s has path %q, want %q (all: %v)", field, paths[field], want, paths)
		}
	}
	e.mustApply(eng)
	e.requireInSync(eng)
	if got := lxcConfig(t, e, "pve1", 201)["net0"]; got != cfg["net0"] {
		t.Errorf("net0 after correction = %q, want %q (hwaddr kept)", got, cfg["net0"])
	}
}

// containerGrowsAndKeepsPendingAndCreationOnlyChanges: growth, a setting
// Proxmox keeps pending on a running container, and a creation-only change.
// It returns the manifest it wrote.
func containerGrowsAndKeepsPendingAndCreationOnlyChanges(t *testing.T, e *env, eng *engine.Engine) string {
	dns := strings.Replace(testvm.Example(t, "containers/dns-01.yaml"), "size: 8G", "size: 10G", 1)
	dns = strings.Replace(dns, "  state: running", "  nameserver: 1.1.1.1 9.9.9.9\n  unprivileged: false\n  state: running", 1)
	e.write("ct/dns-01.yaml", dns)
	p := e.plan(eng)
	a := p.Find(engine.KindContainer, "dns-01")
	text := planText(p)
	if a.Action != vocab.ActionUpdate || !a.NeedsReboot || !strings.Contains(text, "rootfs.size: 8G -> 10G") ||
		!strings.Contains(text, "unprivileged (creation-only): 1 -> 0") || !strings.Contains(text, "can only be set when the container is created") {
		t.Fatalf("want resize, pending nameserver and a creation-only report:\n%s", text)
	}
	e.mustApply(eng)
	cfg := lxcConfig(t, e, "pve1", 201)
	if !strings.Contains(cfg["rootfs"], "size=10G") || cfg["unprivileged"] != "1" {
		t.Errorf("rootfs %q unprivileged %q", cfg["rootfs"], cfg["unprivileged"])
	}
	p = e.plan(eng)
	a = p.Find(engine.KindContainer, "dns-01")
	text = planText(p)
	if a.Action != vocab.ActionNone || a.Status != vocab.StatusOutOfSync || !a.NeedsReboot || !strings.Contains(text, "nameserver (pending)") {
		t.Fatalf("want the nameserver pending until a restart:\n%s", text)
	}
	if !slices.ContainsFunc(a.Changes, func(c vocab.Change) bool { return c.Field == "nameserver" && c.Pending && c.Path == "spec.nameserver" }) {
		t.Fatalf("want the pending nameserver as data, with its path: %+v", a.Changes)
	}
	return dns
}

// containerRebootAppliesThePendingSetting: applyMode: reboot restarts it;
// the creation-only change stays reported. dns is the manifest as grown.
func containerRebootAppliesThePendingSetting(t *testing.T, e *env, eng *engine.Engine, dns string) {
	e.write("ct/dns-01.yaml", strings.Replace(dns, "  state: running", "  applyMode: reboot\n  state: running", 1))
	p := e.plan(eng)
	if a := p.Find(engine.KindContainer, "dns-01"); a.Action != vocab.ActionReboot {
		t.Fatalf("want a reboot:\n%s", planText(p))
	}
	e.mustApply(eng)
	if got := lxcConfig(t, e, "pve1", 201)["nameserver"]; got != "1.1.1.1 9.9.9.9" {
		t.Errorf("nameserver = %q after the reboot", got)
	}
	p = e.plan(eng)
	if a := p.Find(engine.KindContainer, "dns-01"); a.Action != vocab.ActionNone || len(a.Changes) != 1 {
		t.Fatalf("only the creation-only change should remain:\n%s", planText(p))
	}
}

// containerShrinkIsRefused with a clear message.
func containerShrinkIsRefused(t *testing.T, e *env, eng *engine.Engine) {
	e.write("ct/dns-01.yaml", strings.Replace(testvm.Example(t, "containers/dns-01.yaml"), "size: 8G", "size: 4G", 1))
	p := e.plan(eng)
	if !strings.Contains(planText(p), "rootfs is 10G on the cluster but 4G in the manifest: shrinking is not supported") {
		t.Fatalf("want a refused shrink:\n%s", planText(p))
	}
}

// containerIsDeletedOnlyWithPrune: prune off leaves it, on stops and deletes
// it; the template stays while declared.
func containerIsDeletedOnlyWithPrune(t *testing.T, e *env, eng *engine.Engine) {
	e.remove("ct/dns-01.yaml")
	p := e.plan(eng)
	if a := p.Find(engine.KindContainer, "dns-01"); a == nil || a.Action != vocab.ActionNone || a.Status != vocab.StatusOutOfSync {
		t.Fatalf("prune off: want it reported and kept:\n%s", planText(p))
	}
	e.mustApply(e.engine(engine.Options{Prune: true}))
	if _, ok := e.sim.Guest(201); ok {
		t.Fatal("container 201 was not deleted by prune")
	}
	e.requireInSync(e.engine(engine.Options{Prune: true}))
}

// A declared VMID held by a container (or VM) proxmops does not own is a
// Conflict, left untouched even with prune.
func TestContainerConflictUntouched(t *testing.T) {
	e := newEnv(t)
	if err := e.sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []pvesim.GuestSpec{
		{VMID: 201, Node: "pve1", Type: "lxc", Running: true, Config: map[string]string{"hostname": "theirs", "cores": "2", "memory": "1024",
			"rootfs": "local-lvm:vm-201-disk-0,size=4G", "ostype": "debian"}},
		{VMID: 142, Node: "pve1", Type: "qemu", Config: map[string]string{"name": "a-vm", "cores": "1"}},
		{VMID: 150, Node: "pve2", Type: "lxc", Config: map[string]string{"hostname": "stray", "rootfs": "local-lvm:vm-150-disk-0,size=4G"}},
	} {
		if err := e.sim.AddGuest(g); err != nil {
			t.Fatal(err)
		}
	}
	e.write("dns-01.yaml", testvm.Example(t, "containers/dns-01.yaml"))
	e.write("apache.yaml", testvm.Example(t, "containers/apache.yaml"))
	eng := e.engine(engine.Options{Prune: true})
	p := e.plan(eng)
	for _, name := range []string{"dns-01", "apache"} {
		a := p.Find(engine.KindContainer, name)
		if a == nil || !a.Conflicted() || a.Status != vocab.StatusConflict {
			t.Fatalf("%s: want a conflict:\n%s", name, planText(p))
		}
	}
	if !strings.Contains(planText(p), `VMID 201 is held by container "theirs"`) || !strings.Contains(planText(p), `VMID 142 is held by VM "a-vm"`) {
		t.Fatalf("conflict reasons:\n%s", planText(p))
	}
	if p.Summary.Conflict != 2 || p.Summary.Delete != 0 {
		t.Fatalf("summary %+v", p.Summary)
	}
	rep, err := eng.Apply(context.Background(), p, nil)
	if err != nil || len(rep.Results) != 0 {
		t.Fatalf("nothing may run: %v %+v", err, rep)
	}
	if g, _ := e.sim.Guest(201); g.Config["hostname"] != "theirs" || g.Config["cores"] != "2" {
		t.Fatalf("the unowned container was touched: %+v", g.Config)
	}
	if _, ok := e.sim.Guest(150); !ok {
		t.Fatal("an unowned container was pruned")
	}
}

// The second seed's container (apache) is created and in sync. The media
// example with a bind mount and features beyond nesting needs root@pam:
// the plan says so and nothing is created. As the example stands (an API
// token can do all of it), media is created. (Provisioning over SSH is in
// e2e_provision_test.go.)
func TestContainerSeedAndRootOnly(t *testing.T) {
	e := newEnv(t)
	if err := e.sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.AddVolume(pvesim.VolumeSpec{VolID: "nfs-shared:vztmpl/alpine-3.20-default_20241201_amd64.tar.xz", Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(e.dir, "..", "pw")
	if err := os.WriteFile(secret, []byte("correct horse\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.write("apache.yaml", testvm.Example(t, "containers/apache.yaml"))
	media := strings.Replace(testvm.Example(t, "containers/media.yaml"), "{ env: MEDIA_ROOT_PASSWORD }", "{ file: "+secret+" }", 1)
	media = strings.Replace(media, "bridge: vmbr1", "bridge: vmbr0", 1)
	rootOnly := strings.Replace(media, "  net:\n", `    - path: /mnt/media
      bind: /mnt/pve/nfs-shared/media
      ro: true
      shared: true
  net:
`, 1)
	rootOnly = strings.Replace(rootOnly, "    nesting: true\n", "    nesting: true\n    keyctl: true\n    mount: [nfs, cifs]\n", 1)
	e.write("media.yaml", rootOnly)
	eng := e.engine(engine.Options{})
	p := e.plan(eng)
	text := planText(p)
	ap := p.Find(engine.KindContainer, "apache")
	if ap.Action != vocab.ActionCreate {
		t.Fatalf("apache: want a create:\n%s", text)
	}
	if !strings.Contains(text, "template: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst") {
		t.Fatalf("apache: the appliance name resolves to the volume on the node:\n%s", text)
	}
	md := p.Find(engine.KindContainer, "media")
	if md.Status != vocab.StatusFailed || !strings.Contains(md.Reason, "bind mount mp2 (/mnt/pve/nfs-shared/media on /mnt/media)") ||
		!strings.Contains(md.Reason, "features keyctl, mount=nfs;cifs") || !strings.Contains(md.Reason, "root@pam") {
		t.Fatalf("media: want a clear root@pam failure:\n%s", text)
	}
	_, rep := e.apply(eng)
	for _, r := range rep.Results {
		if r.Name == "apache" && r.Status != vocab.StatusSynced || r.Name == "media" && r.Status != vocab.StatusFailed {
			t.Fatalf("%+v", r)
		}
	}
	if _, ok := e.sim.Guest(210); ok {
		t.Fatal("media was created")
	}
	cfg := lxcConfig(t, e, "pve1", 142)
	if cfg["swap"] != "512" || cfg["onboot"] != "1" || cfg["memory"] != "2048" || cfg["cores"] != "2" ||
		!strings.Contains(cfg["net0"], "ip=192.168.178.42/24") || cfg["rootfs"] != "local-lvm:vm-142-disk-0,size=8G" {
		t.Fatalf("apache config %v", cfg)
	}
	p = e.plan(eng)
	ap = p.Find(engine.KindContainer, "apache")
	if ap.Status != vocab.StatusSynced || ap.Action != vocab.ActionNone {
		t.Fatalf("apache: want in sync:\n%s", planText(p))
	}

	// The example as it stands is created, with its storage mount points,
	// and in sync afterwards.
	e.write("media.yaml", media)
	e.remove("apache.yaml")
	pruning := e.engine(engine.Options{Prune: true})
	e.mustApply(pruning)
	e.requireInSync(pruning)
	cfg = lxcConfig(t, e, "pve3", 210)
	if cfg["mp0"] != "local-lvm:vm-210-disk-1,mp=/srv/data,backup=1,size=200G" || cfg["mp1"] != "local-lvm:vm-210-disk-2,mp=/srv/cache,size=20G" || cfg["features"] != "nesting=1" ||
		cfg["searchdomain"] != "home.arpa" || cfg["cpulimit"] != "2.5" || cfg["ostype"] != "alpine" {
		t.Fatalf("media config %v", cfg)
	}
}

func pvesimVolume(volid string) pvesim.VolumeSpec {
	return pvesim.VolumeSpec{Node: "pve1", VolID: volid, Size: 1 << 20}
}
