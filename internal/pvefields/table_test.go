package pvefields

import (
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

func ptr[T any](v T) *T { return &v }

// observedWith is a VM read with configuration cfg and nothing pending.
func observedWith(cfg map[string]string) Observed {
	return Observed{VMID: 120, Current: cfg, Effective: maps.Clone(cfg), Pending: map[string]string{}, PendingDelete: map[string]bool{}, Running: true}
}

func baseSpec() *GuestSpec {
	return &GuestSpec{Kind: string(manifest.KindVirtualMachine), Name: "app-01", VMID: 120, Node: "pve1", Tags: []string{"prod", "app"},
		QemuHW: QemuHW{Cores: 2, Memory: 2048, CPU: "x86-64-v2"},
		Disks:  []DiskSpec{{Storage: "local-lvm", Size: 20 * GiB}},
		NICs:   []NICSpec{{Slot: "net0", Bridge: "vmbr0"}},
		CloudInit: &CloudInitSpec{User: "debian", SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample user@host"}, Nameserver: "1.1.1.1",
			IPConfigs: map[string]string{"net0": "ip=dhcp"}}}
}

// readBack is what Proxmox returns for baseSpec after create, import and resize.
func readBack() map[string]string {
	return map[string]string{
		"name": "app-01", "cores": "2", "memory": "2048", "cpu": "x86-64-v2",
		"tags":       "app;managed-by-proxmops;prod",
		"scsi0":      "local-lvm:vm-120-disk-0,size=20G",
		"ide2":       "local-lvm:vm-120-cloudinit,media=cdrom",
		"net0":       "virtio=BC:24:11:2A:3B:4C,bridge=vmbr0",
		"ipconfig0":  "ip=dhcp",
		"ciuser":     "debian",
		"sshkeys":    pve.EncodeSSHKeys([]string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample user@host"}),
		"nameserver": "1.1.1.1",
		"boot":       "order=scsi0",
		"scsihw":     "virtio-scsi-single",
		"smbios1":    "uuid=5b0f0000-0000-0000-0000-000000000000",
		"vmgenid":    "00000000-0000-0000-0000-000000000000",
		"digest":     "abc",
	}
}

func TestNoPerpetualDiffAfterCreate(t *testing.T) {
	d := DiffQemu(baseSpec(), observedWith(readBack()))
	if !d.Empty() || len(d.Pending) > 0 {
		t.Fatalf("diff on the read-back form: %+v", d.Changes())
	}
	// Memory as a property string (8.x/9.x) and a clone's extra keys.
	cfg := readBack()
	cfg["memory"] = "current=2048"
	cfg["cpu"] = "cputype=x86-64-v2,flags=+aes"
	cfg["net0"] = "virtio=bc:24:11:2a:3b:4c,bridge=vmbr0,firewall=0"
	cfg["sshkeys"] = "ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAIExample%20user%40host%0A"
	cfg["tags"] = "prod;app;managed-by-proxmops"
	cfg["ipconfig0"] = "ip=DHCP"
	if d := DiffQemu(baseSpec(), observedWith(cfg)); !d.Empty() {
		t.Fatalf("diff on equivalent forms: %+v", d.Changes())
	}
}

func TestDriftDetected(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(map[string]string)
		field   string
		reboot  bool
		refused bool
		resize  bool
	}{
		{"cores", func(c map[string]string) { c["cores"] = "4" }, "cores", true, false, false},
		{"memory", func(c map[string]string) { c["memory"] = "4096" }, "memory", true, false, false},
		{"cpu", func(c map[string]string) { c["cpu"] = "host" }, "cpu", true, false, false},
		{"tags", func(c map[string]string) { c["tags"] = "managed-by-proxmops;prod" }, "tags", false, false, false},
		{"bridge", func(c map[string]string) { c["net0"] = "virtio=BC:24:11:2A:3B:4C,bridge=vmbr1" }, "net0.bridge", false, false, false},
		{"nic removed", func(c map[string]string) { delete(c, "net0") }, "net0", false, false, false},
		{"extra nic", func(c map[string]string) { c["net1"] = "e1000=BC:24:11:00:00:01,bridge=vmbr0" }, "net1", false, false, false},
		{"ciuser", func(c map[string]string) { c["ciuser"] = "root" }, "ciuser", false, false, false},
		{"sshkeys", func(c map[string]string) { c["sshkeys"] = "" }, "sshkeys", false, false, false},
		{"ipconfig", func(c map[string]string) { c["ipconfig0"] = "ip=10.0.0.5/24,gw=10.0.0.1" }, "ipconfig0", false, false, false},
		{"shrunk", func(c map[string]string) { c["scsi0"] = "local-lvm:vm-120-disk-0,size=10G" }, "", false, false, true},
		{"grown", func(c map[string]string) { c["scsi0"] = "local-lvm:vm-120-disk-0,size=30G" }, "", false, true, false},
		{"cloudinit drive gone", func(c map[string]string) { delete(c, "ide2") }, "cloudinit drive", false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := readBack()
			tt.mutate(cfg)
			d := DiffQemu(baseSpec(), observedWith(cfg))
			if tt.refused {
				if len(d.Refused) != 1 || !strings.Contains(d.Refused[0], "shrinking disks is not supported") {
					t.Fatalf("refused %v", d.Refused)
				}
				return
			}
			if tt.resize {
				if len(d.Resizes) != 1 || d.Resizes[0].To != 20*GiB {
					t.Fatalf("resizes %+v", d.Resizes)
				}
				return
			}
			var found *ConfigChange
			for i := range d.Config {
				if d.Config[i].Field == tt.field {
					found = &d.Config[i]
				}
			}
			if found == nil {
				t.Fatalf("no change on %s: %+v", tt.field, d.Changes())
			}
			if found.Reboot != tt.reboot {
				t.Errorf("reboot = %v, want %v", found.Reboot, tt.reboot)
			}
		})
	}
}

func TestGrownDiskIsNotShrunk(t *testing.T) {
	// The manifest says 20G, someone grew the disk to 30G by hand: refused, never shrunk.
	cfg := readBack()
	cfg["scsi0"] = "local-lvm:vm-120-disk-0,size=30G"
	d := DiffQemu(baseSpec(), observedWith(cfg))
	if len(d.Refused) != 1 || len(d.Resizes) != 0 {
		t.Fatalf("%+v", d)
	}
}

func TestNICChangeKeepsMAC(t *testing.T) {
	cfg := readBack()
	cfg["net0"] = "virtio=BC:24:11:2A:3B:4C,bridge=vmbr1,firewall=1"
	gs := baseSpec()
	gs.NICs[0].Tag = ptr(10)
	d := DiffQemu(gs, observedWith(cfg))
	var v string
	for _, c := range d.Config {
		if c.Key == "net0" {
			v = c.Value
		}
	}
	if v != "virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,firewall=1,tag=10" {
		t.Fatalf("net0 set to %q", v)
	}
}

func TestPendingReported(t *testing.T) {
	o := observedWith(readBack())
	o.Effective["cores"] = "4"
	o.Pending["cores"] = "4"
	gs := baseSpec()
	gs.Cores = 4
	d := DiffQemu(gs, o)
	if !d.Empty() || len(d.Pending) != 1 || d.Pending[0].Field != "cores" || d.Pending[0].From != "2" || d.Pending[0].To != "4" {
		t.Fatalf("%+v", d)
	}
}

func TestResolveDiskSlotsFollowsBootDisk(t *testing.T) {
	disks := []DiskSpec{{Storage: "local-lvm", Size: 20 * GiB}, {Storage: "local-lvm", Size: 50 * GiB}}
	got := resolveDiskSlots(disks, map[string]string{"virtio0": "local-lvm:base-9000-disk-0/vm-130-disk-0,size=10G", "boot": "order=virtio0;net0"})
	if got[0].Slot != "virtio0" || got[1].Slot != "scsi1" {
		t.Fatalf("%+v", got)
	}
	got = resolveDiskSlots(disks, nil)
	if got[0].Slot != "scsi0" || got[1].Slot != "scsi1" {
		t.Fatalf("%+v", got)
	}
}

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
func fullContainerSpec() *ctSpec {
	features := "keyctl=1,nesting=1"
	return &ctSpec{ContainerConfig: &ContainerConfig{Hostname: "dns-01", OSType: "debian", Arch: "amd64",
		Cores: 2, CPULimit: "1.5", Memory: 1024, Swap: ptr(256), Unprivileged: true, Features: &features,
		RootFS:     MountSpec{Slot: "rootfs", Storage: "local-lvm", Size: 8 * GiB, MountOptions: []string{"noatime"}},
		Mounts:     []MountSpec{{Slot: "mp0", Path: "/srv", Storage: "local-lvm", Size: 4 * GiB, Backup: true}},
		NICs:       []CTNICSpec{{Slot: "net0", Name: "eth0", Bridge: "vmbr0", IP: "dhcp", Tag: 20, Firewall: true, MTU: 1450, Rate: "12.5"}},
		Nameserver: "1.1.1.1 9.9.9.9", SearchDomain: "example.org", SSHKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample user@host"},
		Password: "secret", PasswordSet: true, OnBoot: ptr(true), Startup: "order=3", Description: "resolver", Timezone: "Europe/Berlin"}}
}

// templateSpec is fullGuestSpecs()[0] declaring only what a TemplateSpec
// can (the engine's templateGuestSpec copies no other field).
func templateSpec() *GuestSpec {
	tpl := *fullGuestSpecs()[0]
	tpl.Kind, tpl.OnBoot, tpl.Startup, tpl.Balloon, tpl.ISOVolume = string(manifest.KindTemplate), nil, "", nil, ""
	return &tpl
}

func TestFieldTablesAreWellFormed(t *testing.T) {
	vm, tpl := reflect.TypeOf(manifest.VirtualMachine{}), reflect.TypeOf(manifest.Template{})
	checkTable(t, "qemuFields", qemuFields, fullGuestSpecs(), vm)
	// A Template declares a part of the same rows: those must be its fields.
	checkTable(t, "qemuFields (Template)", declaredRows(templateSpec()), fullGuestSpecs()[:1], tpl)
	checkTable(t, "ctFields", ctFields, []*ctSpec{fullContainerSpec()}, reflect.TypeOf(manifest.Container{}))
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
		p := pve.NewParams()
		QemuCreateParams(gs, 120, "", p)
		cfg := map[string]string{}
		for _, k := range p.Keys() {
			cfg[k], _ = p.Get(k)
		}
		cfg["scsi0"] = "local-lvm:vm-120-disk-0,size=20G"
		if gs.CloudInit != nil {
			cfg[CloudInitSlot] = "local-lvm:vm-120-cloudinit,media=cdrom"
			cfg["cipassword"] = "**********"
		}
		if gs.UserData != "" {
			cfg[CdromSlot] = gs.CidataVolume(120) + ",media=cdrom"
		}
		d := DiffQemu(gs, observedWith(cfg))
		if !d.Empty() {
			t.Errorf("spec %d differs right after the create: %+v", i, d.Changes())
		}
	}
}

func TestContainerCreatedAsDiffed(t *testing.T) {
	s := fullContainerSpec()
	p := pve.NewParams().Set("ostemplate", "local:vztmpl/debian-12.tar.zst")
	CTCreateParams(s.ContainerConfig, nil, 201, p)
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
	o := Observed{VMID: 201, Running: true, Current: cfg, Effective: cfg,
		Pending: map[string]string{}, PendingDelete: map[string]bool{}}
	if d := DiffCT(s.ContainerConfig, nil, o); !d.Empty() || len(d.CreationOnly) > 0 || len(d.Pending) > 0 {
		t.Errorf("differs right after the create: %+v", d.Changes())
	}
}

// TestChangePathsFromTheRows: a change carries its row's manifest path,
// also where the Proxmox key is not the manifest's name.
func TestChangePathsFromTheRows(t *testing.T) {
	gs := fullGuestSpecs()[0]
	cfg := readBack()
	cfg["ciuser"], cfg["searchdomain"], cfg["ipconfig0"], cfg["tags"] = "root", "other.org", "ip=10.9.9.9/24", "x;managed-by-proxmops"
	g := observedWith(cfg)
	g.Pending["memory"] = "4096"
	d := DiffQemu(gs, g)
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
	ct := Observed{VMID: 201, Running: true, Effective: map[string]string{"searchdomain": "other.org"},
		Current: map[string]string{}, Pending: map[string]string{}, PendingDelete: map[string]bool{}}
	for _, c := range DiffCT(s.ContainerConfig, nil, ct).Changes() {
		if c.Field == "searchdomain" && c.Path != "spec.searchDomain" || c.Field == "arch" && (c.Hold != vocab.HoldCreationOnly || c.Path != "spec.arch") {
			t.Errorf("%s: path %q", c.Field, c.Path)
		}
	}
	for kind, m := range map[string]reflect.Type{string(manifest.KindNetwork): reflect.TypeOf(manifest.Network{}),
		string(manifest.KindSdnZone): reflect.TypeOf(manifest.SdnZone{}), string(manifest.KindSdnVnet): reflect.TypeOf(manifest.SdnVnet{})} {
		for key, path := range FieldPaths(kind) {
			if !manifestPathExists(m, path) {
				t.Errorf("%s key %s: %s is not a field of %s", kind, key, path, kind)
			}
		}
	}
}

func TestFeatures(t *testing.T) {
	for _, tc := range []struct {
		have, want   string
		same, rootOK bool
	}{
		{"nesting=1", "nesting=1", true, true},
		{"keyctl=1,nesting=1", "nesting=1,keyctl=1", true, true},
		{"", "nesting=1", false, true},
		{"nesting=1", "", false, true},
		{"nesting=1", "nesting=1,keyctl=1", false, false},
		{"mount=nfs;cifs,nesting=1", "nesting=1,mount=cifs;nfs", true, true},
		{"fuse=0", "", true, true},
	} {
		if got := NormalFeatures(tc.have) == NormalFeatures(tc.want); got != tc.same {
			t.Errorf("%q vs %q: same = %v", tc.have, tc.want, got)
		}
		if got := !changedRootOnly(tc.have, tc.want); got != tc.rootOK {
			t.Errorf("%q -> %q: token may change it = %v", tc.have, tc.want, got)
		}
	}
}

// FuzzDiffReadBack feeds arbitrary read-back values to the diff: whatever
// Proxmox (or a person editing a config by hand) writes, planning must not
// panic, and a value that parses as the desired one must not be a change.
func FuzzDiffReadBack(f *testing.F) {
	for _, s := range []string{"virtio=BC:24:11:2A:3B:4C,bridge=vmbr0", "local-lvm:vm-120-disk-0,size=20G", "current=2048",
		"cputype=host,flags=+aes", "ip=dhcp", "ssh-ed25519%20AAAA%20a%40b", "", ",,,", "=", "size=", "%zz", "order=scsi0;net0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		cfg := map[string]string{"net0": v, "scsi0": v, "memory": v, "cpu": v, "sshkeys": v, "ipconfig0": v, "boot": v, "tags": v, "ide2": v}
		d := DiffQemu(baseSpec(), observedWith(cfg))
		_ = d.Changes()
		_, _ = ParseSize(v)
		if NormalIPConfig(v) != NormalIPConfig(v) {
			t.Fatal("NormalIPConfig is not stable")
		}
	})
}
