package source

import (
	"path/filepath"
	"testing"

	"github.com/proxmops/proxmops/internal/manifest"
)

// A Proxmox-GitOps monorepo keeps its container libraries as Git
// submodules. Manifests inside a submodule under the watched path load like
// any other once the source checked the submodule out, and refer to the
// superproject's resources; without submodules the folder is empty and only
// the superproject's manifests load.
func TestManifestsInASubmoduleLoad(t *testing.T) {
	lib := newTestRepo(t)
	libC := lib.Commit("apache lib", map[string]string{
		"container.env": "IP=192.168.178.42\nID=42\n",
		"apache.yaml": `apiVersion: proxmops.dev/v1
kind: Container
metadata: {name: apache, node: pve1}
spec:
  vmid: 142
  template: debian-13-standard
  cores: 2
  memory: 2048
  rootfs: {storage: local-lvm, size: 8G}
  net: [{bridge: vmbr0, ip: 192.168.178.42/24}]
`,
		"recipes/default.rb": "package 'apache2'\n",
	})
	top := newTestRepo(t)
	top.Commit("monorepo", map[string]string{
		"proxmops/templates/debian.yaml": `apiVersion: proxmops.dev/v1
kind: ContainerTemplate
metadata: {name: debian-13-standard, node: pve1}
spec: {appliance: debian-13-standard_13.1-2_amd64.tar.zst, storage: local}
`,
		"base/default.yml": "- name: not a manifest, outside the watched path\n",
	})
	top.AddSubmodule("proxmops/libs/apache", "file://"+lib.Dir, libC)

	s := newSyncerT(t, Options{URL: top.URL(), Path: "proxmops", Submodules: true})
	res, err := s.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	set, err := manifest.LoadDir(res.Dir)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	ct, ok := set.Get(manifest.KindContainer, "apache").(*manifest.Container)
	if !ok || ct.Spec.VMID != 142 || ct.Origin.File != filepath.ToSlash(filepath.Join("libs", "apache", "apache.yaml")) {
		t.Fatalf("the submodule's Container did not load: %+v", set.Resources)
	}
	if set.Get(manifest.KindContainerTemplate, "debian-13-standard") == nil {
		t.Fatal("the superproject's template did not load")
	}

	off := newSyncerT(t, Options{URL: top.URL(), Path: "proxmops", Submodules: false})
	res, err = off.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	set, err = manifest.LoadDir(res.Dir)
	if err != nil {
		t.Fatalf("load without submodules: %v", err)
	}
	if len(set.Resources) != 1 || set.Get(manifest.KindContainer, "apache") != nil {
		t.Errorf("without submodules only the template loads: %+v", set.Resources)
	}
}
