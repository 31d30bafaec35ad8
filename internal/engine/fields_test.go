package engine

import (
	"reflect"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// fullGuestSpecs declare, between them, every row of qemuFields (an ISO
// and a userData seed exclude each other).
func fullGuestSpecs() []*GuestSpec {
	gs := baseSpec()
	gs.Sockets, gs.Description, gs.Startup, gs.OSType, gs.BIOS, gs.Machine, gs.SCSIHW = 2, "app server", "order=2", "l26", "ovmf", "q35", "virtio-scsi-single"
	gs.OnBoot, gs.Agent, gs.Balloon = ptr(true), ptr(true), ptr(1024)
	gs.CloudInit.PasswordSet, gs.CloudInit.Password, gs.CloudInit.Searchdomain, gs.CloudInit.Upgrade = true, "secret", "example.org", ptr(false)
	gs.ISOVolume = "local:iso/debian.iso"
	seeded := *baseSpec()
	seeded.CloudInit, seeded.UserData, seeded.CidataStorage = nil, "#cloud-config\n", "local"
	return []*GuestSpec{gs, &seeded}
}

// manifestPathExists reports whether a manifest path ("spec.net[1].bridge",
// "metadata.tags") names a field of the manifest type t.
func manifestPathExists(t reflect.Type, path string) bool {
	head, rest, _ := strings.Cut(path, ".")
	switch head {
	case "metadata":
		t = reflect.TypeOf(manifest.Metadata{})
	case "spec":
		f, ok := t.FieldByName("Spec")
		if !ok {
			return false
		}
		t = f.Type
	default:
		return false
	}
	for _, seg := range strings.Split(rest, ".") {
		seg, _, _ = strings.Cut(seg, "[")
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || !hasJSONField(t, seg) {
			return false
		}
		t = jsonField(t, seg)
	}
	return true
}

func hasJSONField(t reflect.Type, name string) bool { return jsonField(t, name) != nil }

// jsonField finds a field by its JSON name, through embedded structs.
func jsonField(t reflect.Type, name string) reflect.Type {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if ft := jsonField(f.Type, name); ft != nil {
				return ft
			}
			continue
		}
		if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.IsExported() && n != "-" && n == name {
			return f.Type
		}
	}
	return nil
}

// checkTable proves what a table row must have: one rendering (a scalar's
// want or a list's expansion), a Proxmox key, a manifest path that exists,
// and, for the spec that declares everything, a create value and a diff
// that finds nothing on what the create sent.
func checkTable[S any](t *testing.T, name string, rows []row[S], full []S, kinds ...reflect.Type) {
	t.Helper()
	for i, r := range rows {
		id := name + "[" + r.key + r.path + "]"
		if (r.want == nil) == (r.each == nil) {
			t.Errorf("%s row %d: needs exactly one of want (a scalar) and each (a slot list)", name, i)
		}
		if r.want != nil && r.key == "" {
			t.Errorf("%s: a scalar row without a Proxmox key", id)
		}
		if r.createOnly && r.writeOnly {
			t.Errorf("%s: creation-only and write-only exclude each other", id)
		}
		if r.path != "" {
			for _, k := range kinds {
				if !manifestPathExists(k, r.path) {
					t.Errorf("%s: manifest path %s is not a field of %s", id, r.path, k.Name())
				}
			}
		} else if r.key != "boot" {
			t.Errorf("%s: no manifest path", id)
		}
		var ps []param
		for _, s := range full {
			ps = append(ps, params([]row[S]{r}, s, &fieldCtx{vmid: 120})...)
		}
		if len(ps) == 0 {
			t.Errorf("%s: the full spec of the test does not declare it: add it there", id)
		}
		for _, p := range ps {
			if p.key == "" || p.want == "" && !p.delEmpty {
				t.Errorf("%s: expands to %q without a create value", id, p.key)
			}
			if p.noParam && p.diff == nil {
				t.Errorf("%s: neither a create parameter nor applied by a diff", id)
			}
			if p.path != "" {
				for _, k := range kinds {
					if !manifestPathExists(k, p.path) {
						t.Errorf("%s: manifest path %s of %s is not a field of %s", id, p.path, p.key, k.Name())
					}
				}
			}
		}
	}
}

// fullContainerSpec declares every row of ctFields.
func fullContainerSpec() *ContainerSpec {
	features := "keyctl=1,nesting=1"
	return &ContainerSpec{Meta: Meta{Name: "dns-01"}, VMID: 201, Hostname: "dns-01", OSType: "debian", Arch: "amd64",
		Cores: 2, CPULimit: "1.5", Memory: 1024, Swap: ptr(256), Unprivileged: true, Features: &features,
		RootFS:     MountSpec{Slot: "rootfs", Storage: "local-lvm", Size: 8 * pvefields.GiB, MountOptions: []string{"noatime"}},
		Mounts:     []MountSpec{{Slot: "mp0", Path: "/srv", Storage: "local-lvm", Size: 4 * pvefields.GiB, Backup: true}},
		NICs:       []CTNICSpec{{Slot: "net0", Name: "eth0", Bridge: "vmbr0", IP: "dhcp", Tag: 20, Firewall: true, MTU: 1450, Rate: "12.5"}},
		Nameserver: "1.1.1.1 9.9.9.9", SearchDomain: "example.org", SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample user@host"},
		Password: "secret", PasswordSet: true, OnBoot: ptr(true), Startup: "order=3", Description: "resolver", Timezone: "Europe/Berlin"}
}

func TestFieldTablesAreWellFormed(t *testing.T) {
	vm, tpl := reflect.TypeOf(manifest.VirtualMachine{}), reflect.TypeOf(manifest.Template{})
	checkTable(t, "qemuFields", qemuFields, fullGuestSpecs(), vm)
	// A Template declares a part of the same rows: those must be its fields.
	checkTable(t, "qemuFields (Template)", templateFieldRows(), fullGuestSpecs()[:1], tpl)
	checkTable(t, "ctFields", ctFields, []*ContainerSpec{fullContainerSpec()}, reflect.TypeOf(manifest.Container{}))
}

func TestManifestPathExists(t *testing.T) {
	vm := reflect.TypeOf(manifest.VirtualMachine{})
	for path, want := range map[string]bool{"spec.cores": true, "spec.net[1].bridge": true, "metadata.tags": true,
		"spec.cloudInit.user": true, "spec.nosuch": false, "spec.net[0].nosuch": false, "status.x": false} {
		if got := manifestPathExists(vm, path); got != want {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
}

// TestCreatedAsDiffed reads back exactly what the create sent, with what
// Proxmox adds (sizes, the cloud-init drive's medium, the seed the first
// converge attaches): no row may then differ, so no field is created one
// way and compared another. The e2e test does the same through pvesim.
func TestCreatedAsDiffed(t *testing.T) {
	for i, gs := range fullGuestSpecs() {
		p := createParams(gs, 120, "")
		cfg := map[string]string{}
		for _, k := range p.Keys() {
			cfg[k], _ = p.Get(k)
		}
		cfg["scsi0"] = "local-lvm:vm-120-disk-0,size=20G"
		if gs.CloudInit != nil {
			cfg[pvefields.CloudInitSlot] = "local-lvm:vm-120-cloudinit,media=cdrom"
			cfg["cipassword"] = "**********"
		}
		if gs.UserData != "" {
			cfg[pvefields.CdromSlot] = gs.CidataVolume(120) + ",media=cdrom"
		}
		d := diffGuest(gs, guestWith(cfg, "running"))
		if !d.Empty() {
			t.Errorf("spec %d differs right after the create: %+v", i, d.Changes())
		}
	}
}

func TestContainerCreatedAsDiffed(t *testing.T) {
	s := fullContainerSpec()
	p := ctCreateParams(s, "local:vztmpl/debian-12.tar.zst")
	cfg := map[string]string{}
	for _, k := range p.Keys() {
		cfg[k], _ = p.Get(k)
	}
	// Proxmox allocates the volumes and keeps neither keys nor password.
	cfg["rootfs"] = "local-lvm:vm-201-disk-0,mountoptions=noatime,size=8G"
	cfg["mp0"] = "local-lvm:vm-201-disk-1,mp=/srv,backup=1,size=4G"
	cfg["net0"] += ",hwaddr=BC:24:11:00:00:01,type=veth"
	delete(cfg, "ostemplate")
	delete(cfg, "password")
	delete(cfg, "ssh-public-keys")
	g := &Guest{VMID: 201, Type: "lxc", Status: "running", Read: true, Current: cfg, Effective: cfg,
		Pending: map[string]string{}, PendingDelete: map[string]bool{}}
	if d := diffContainer(s, g); !d.Empty() || len(d.CreationOnly) > 0 || len(d.Pending) > 0 {
		t.Errorf("differs right after the create: %+v", d.Changes())
	}
}

// TestChangePathsFromTheRows: a change carries its row's manifest path,
// also where the Proxmox key is not the manifest's name.
func TestChangePathsFromTheRows(t *testing.T) {
	gs := fullGuestSpecs()[0]
	cfg := readBack()
	cfg["ciuser"], cfg["searchdomain"], cfg["ipconfig0"], cfg["tags"] = "root", "other.org", "ip=10.9.9.9/24", "x;managed-by-proxmops"
	g := guestWith(cfg, "running")
	g.Pending["memory"] = "4096"
	d := diffGuest(gs, g)
	paths := map[string]string{}
	for _, c := range append(d.Changes(), d.Pending...) {
		paths[c.Field] = c.Path
	}
	for field, want := range map[string]string{"ciuser": "spec.cloudInit.user", "searchdomain": "spec.cloudInit.searchDomain",
		"cipassword": "spec.cloudInit.passwordFrom", "ipconfig0": "spec.cloudInit.ipConfigs", "sockets": "spec.sockets",
		"memory": "spec.memory", "tags": "metadata.tags"} {
		if paths[field] != want {
			t.Errorf("%s: path %q, want %q (all: %v)", field, paths[field], want, paths)
		}
	}
	s := fullContainerSpec()
	ct := &Guest{VMID: 201, Type: "lxc", Status: "running", Read: true, Effective: map[string]string{"searchdomain": "other.org"},
		Current: map[string]string{}, Pending: map[string]string{}, PendingDelete: map[string]bool{}}
	for _, c := range diffContainer(s, ct).Changes() {
		if c.Field == "searchdomain" && c.Path != "spec.searchDomain" || c.Field == "arch" && (c.Hold != vocab.HoldCreationOnly || c.Path != "spec.arch") {
			t.Errorf("%s: path %q", c.Field, c.Path)
		}
	}
	for kind, m := range map[string]reflect.Type{KindNetwork: reflect.TypeOf(manifest.Network{}),
		KindSdnZone: reflect.TypeOf(manifest.SdnZone{}), KindSdnVnet: reflect.TypeOf(manifest.SdnVnet{})} {
		for key, path := range pvefields.FieldPaths(kind) {
			if !manifestPathExists(m, path) {
				t.Errorf("%s key %s: %s is not a field of %s", kind, key, path, kind)
			}
		}
	}
}
