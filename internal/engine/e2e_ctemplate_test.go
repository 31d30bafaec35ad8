package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// writeExampleTemplates writes the repository's two ContainerTemplate
// examples, the alpine download served by a local server; it returns that
// server's URL and the served archive's SHA-256 in hex.
func writeExampleTemplates(t *testing.T, e *env) (url, sum string) {
	t.Helper()
	archive := []byte(strings.Repeat("alpine rootfs ", 4096))
	digest := sha256.Sum256(archive)
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(archive)
	}))
	t.Cleanup(files.Close)
	sum = hex.EncodeToString(digest[:])
	tpl := testvm.Example(t, "container-templates/alpine-3-20.yaml")
	tpl = strings.Replace(tpl, "https://images.linuxcontainers.org", files.URL, 1)
	tpl = strings.Replace(tpl, "9a0f3ad2a5ea87b8c67e1e0e5f3ac6cc4c9b3f64dd3ac4b1a52e5d64b2ec5d4e", sum, 1)
	e.write("tpl/alpine.yaml", tpl)
	e.write("tpl/debian.yaml", testvm.Example(t, "container-templates/debian-12-standard.yaml"))
	return files.URL, sum
}

// The repository's ContainerTemplate download example: fetched from a URL
// with its checksum, owned through its download task, in sync on the next plan; a
// same-named volume someone else put there is a Conflict; prune and the
// one-shot delete remove only owned templates and containers.
func TestContainerTemplateDownload(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	filesURL, _ := writeExampleTemplates(t, e)
	ct := strings.Replace(testvm.Example(t, "containers/dns-01.yaml"), "template: debian-12-standard", "template: alpine-3-20", 1)
	ct = strings.Replace(ct, "node: pve1", "node: pve2", 1)
	e.write("ct.yaml", ct)
	eng := e.engine(engine.Options{})
	p := e.plan(eng)
	if a := p.Find(engine.KindContainer, "dns-01"); a.Action != vocab.ActionCreate || !contains(a.DependsOn, "ContainerTemplate/alpine-3-20") {
		t.Fatalf("the container waits for its template:\n%s", planText(p))
	}
	e.mustApply(eng)
	e.requireInSync(eng)
	vols := e.sim.Volumes("pve2", "nfs-shared")
	if !contains(vols, "nfs-shared:vztmpl/alpine-3.20-default_20241201_amd64.tar.xz") {
		t.Fatalf("nfs-shared holds %v", vols)
	}
	if cfg := lxcConfig(t, e, "pve2", 201); cfg["ostype"] != "alpine" {
		t.Fatalf("container from the alpine template: %v", cfg)
	}

	// A template someone else downloaded under a declared name.
	if err := e.sim.AddVolume(pvesim.VolumeSpec{Node: "pve3", VolID: "local:vztmpl/custom.tar.zst", Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	e.write("tpl/custom.yaml", `apiVersion: proxmops.dev/v1
kind: ContainerTemplate
metadata:
  name: custom
  node: pve3
spec:
  source: `+filesURL+`/custom.tar.zst
  storage: local
`)
	pruning := e.engine(engine.Options{Prune: true})
	p = e.plan(pruning)
	if a := p.Find(engine.KindContainerTemplate, "custom"); !a.Conflicted() || !strings.Contains(a.Reason, "cannot prove it downloaded it") {
		t.Fatalf("want a conflict:\n%s", planText(p))
	}
	e.remove("tpl/custom.yaml")

	// One-shot delete: the container (owned) goes, even though declared.
	if _, err := eng.Delete(ctx, e.desired(), engine.KindContainer, "dns-01", nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.sim.Guest(201); ok {
		t.Fatal("container 201 is still there")
	}
	e.remove("ct.yaml")
	// Prune: the owned templates go, the unowned one stays.
	e.pruneRemoved(pruning, 2, "both owned templates", "tpl/alpine.yaml", "tpl/debian.yaml")
	if vols := e.sim.Volumes("pve2", "nfs-shared"); contains(vols, "nfs-shared:vztmpl/alpine-3.20-default_20241201_amd64.tar.xz") {
		t.Fatalf("alpine template not pruned: %v", vols)
	}
	if vols := e.sim.Volumes("pve3", "local"); !contains(vols, "local:vztmpl/custom.tar.zst") {
		t.Fatalf("the unowned template was deleted: %v", vols)
	}
	e.requireInSync(pruning)

	// Deleting what proxmops does not own is refused.
	if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 300, Node: "pve1", Type: "lxc", Config: map[string]string{"hostname": "x", "rootfs": "local-lvm:vm-300-disk-0,size=4G"}}); err != nil {
		t.Fatal(err)
	}
	e.write("x.yaml", strings.Replace(strings.Replace(testvm.Example(t, "containers/dns-01.yaml"), "vmid: 201", "vmid: 300", 1), "name: dns-01", "name: x", 1))
	if _, err := eng.Delete(ctx, e.desired(), engine.KindContainer, "x", nil); !errors.Is(err, engine.ErrNotOwned) && !errors.Is(err, engine.ErrNothingToDelete) {
		t.Fatalf("delete of an unowned container: %v", err)
	}
	if _, ok := e.sim.Guest(300); !ok {
		t.Fatal("the unowned container was deleted")
	}
}

// A template file name with characters Proxmox replaces (a space, + and
// ~; pve-storage normalize_content_filename) lands under the normalised
// name, and the next plan finds it there instead of downloading it again
// (without a checksum, Proxmox would refuse to override the file).
func TestContainerTemplateFileNameIsNormalisedAsProxmoxStoresIt(t *testing.T) {
	e := newEnv(t)
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("rootfs ", 512)))
	}))
	t.Cleanup(files.Close)
	e.write("tpl/custom.yaml", `apiVersion: proxmops.dev/v1
kind: ContainerTemplate
metadata:
  name: custom
  node: pve1
spec:
  source: `+files.URL+`/custom.tar.zst
  filename: "custom 1.0+build~2.tar.zst"
  storage: local
`)
	eng := e.engine(engine.Options{})
	e.converge(eng)
	if vols := e.sim.Volumes("pve1", "local"); !contains(vols, "local:vztmpl/custom_1.0_build_2.tar.zst") {
		t.Fatalf("local holds %v", vols)
	}
	e.assertInSync(eng)
	e.converge(eng)
}
