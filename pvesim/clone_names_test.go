package pvesim

import (
	"strings"
	"testing"
)

// A linked clone's volume is named as the storage plugin's clone_image
// names it: on a file storage it names its base image
// (BASEVMID/BASENAME/VMID/NAME, always qcow2), on LVM-thin it does not.
// The clone is a guest like any other: it resizes, and its destruction
// frees the base.
func TestLinkedCloneVolumesAreNamedAsTheStoragePluginNamesThem(t *testing.T) {
	_, c := newSim(t, Options{})
	for _, tc := range []struct {
		storage, base, clone string
	}{
		{"nfs-shared", "nfs-shared:9000/base-9000-disk-0.raw", "nfs-shared:9000/base-9000-disk-0.raw/9001/vm-9001-disk-0.qcow2"},
		{"local-lvm", "local-lvm:base-9100-disk-0", "local-lvm:vm-9101-disk-0"},
	} {
		tpl, clone := map[string]string{"nfs-shared": "9000", "local-lvm": "9100"}[tc.storage], map[string]string{"nfs-shared": "9001", "local-lvm": "9101"}[tc.storage]
		format := map[string]string{"nfs-shared": ",format=raw", "local-lvm": ""}[tc.storage]
		mustTaskOK(t, c, "POST", "/nodes/pve1/qemu", vals("vmid", tpl, "scsi0", tc.storage+":2"+format))
		mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/"+tpl+"/template", nil)
		mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/"+tpl+"/clone", vals("newid", clone, "name", "linked"))
		tcfg := c.mustOK("GET", "/nodes/pve1/qemu/"+tpl+"/config", nil).obj(t)
		ccfg := c.mustOK("GET", "/nodes/pve1/qemu/"+clone+"/config", nil).obj(t)
		if tcfg["scsi0"] != tc.base+",size=2G" || ccfg["scsi0"] != tc.clone+",size=2G" {
			t.Fatalf("%s: template %v, clone %v", tc.storage, tcfg["scsi0"], ccfg["scsi0"])
		}
		if st := c.task("PUT", "/nodes/pve1/qemu/"+clone+"/resize", vals("disk", "scsi0", "size", "3G")); st != "OK" {
			t.Fatalf("%s: resize: %s", tc.storage, st)
		}
		if st := c.task("DELETE", "/nodes/pve1/qemu/"+tpl, nil); st == "OK" {
			t.Fatalf("%s: the base went while its clone uses it", tc.storage)
		}
		if st := c.task("DELETE", "/nodes/pve1/qemu/"+clone, nil); st != "OK" {
			t.Fatalf("%s: destroy clone: %s", tc.storage, st)
		}
		if st := c.task("DELETE", "/nodes/pve1/qemu/"+tpl, nil); st != "OK" {
			t.Fatalf("%s: destroy template: %s", tc.storage, st)
		}
	}
}

// A clone copies its source's description unless the clone call gives a
// non-empty one (qemu-server API2/Qemu.pm and pve-container API2/LXC.pm
// clone_vm: `if ($param->{description})`).
func TestACloneCopiesTheDescriptionUnlessOneIsGiven(t *testing.T) {
	_, c := lxcSim(t, Options{})
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu", vals("vmid", "9000", "scsi0", "local-lvm:2", "description", "base notes"))
	mustTaskOK(t, c, "POST", "/nodes/pve1/lxc", vals("vmid", "9100", "ostemplate", testTemplate, "rootfs", "local-lvm:1", "description", "base notes"))
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/9000/template", nil)
	c.mustOK("POST", "/nodes/pve1/lxc/9100/template", nil)
	for _, tc := range []struct {
		path, newid, desc, want string
	}{
		{"/nodes/pve1/qemu/9000", "9001", "", "base notes"},
		{"/nodes/pve1/qemu/9000", "9002", "own notes", "own notes"},
		{"/nodes/pve1/lxc/9100", "9101", "", "base notes"},
		{"/nodes/pve1/lxc/9100", "9102", "own notes", "own notes"},
	} {
		if st := c.task("POST", tc.path+"/clone", vals("newid", tc.newid, "description", tc.desc)); st != "OK" {
			t.Fatalf("%s clone: %s", tc.path, st)
		}
		kind := "qemu"
		if strings.Contains(tc.path, "lxc") {
			kind = "lxc"
		}
		if got := c.mustOK("GET", "/nodes/pve1/"+kind+"/"+tc.newid+"/config", nil).obj(t)["description"]; got != tc.want {
			t.Errorf("clone %s of %s: description %v, want %q", tc.newid, tc.path, got, tc.want)
		}
	}
}
