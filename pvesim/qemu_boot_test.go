package pvesim

import (
	"maps"
	"slices"
	"testing"
)

// bootSim creates VM 100 on pve1 with a blank disk, an ISO CD-ROM on ide0
// and a NIC, the boot order given (none: Proxmox's default).
func bootSim(t *testing.T, boot string) (*Server, *client) {
	t.Helper()
	srv, c := newSim(t, Options{Seed: 3})
	mustAddVolume(t, srv, VolumeSpec{Node: "pve1", VolID: "local:iso/debian-12.iso", Size: 600 << 20})
	p := vals("vmid", "100", "name", "inst", "virtio0", "local-lvm:8", "net0", "virtio,bridge=vmbr0")
	if boot != "" {
		p.Set("boot", boot)
	}
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu", p)
	return srv, c
}

func startedWith(t *testing.T, srv *Server, c *client) *KVMCommand {
	t.Helper()
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/100/status/start", nil)
	g, _ := srv.Guest(100)
	if g.KVM == nil {
		t.Fatal("a running VM has no command line")
	}
	return g.KVM
}

// qemu-server starts QEMU with -boot strict=on and gives a bootindex only to
// the devices of `boot: order=`: a CD-ROM left out of the order never boots.
func TestQemuBootOrderDecidesWhatBoots(t *testing.T) {
	tests := []struct {
		name      string
		boot      string
		cdrom     bool // attach the ISO on ide0 after the create
		want      []string
		wantBoot  string // read back after the cdrom was attached
		configSet map[string]string
	}{
		{name: "create default order lists disk then NIC", want: []string{"virtio0", "net0"}, wantBoot: "order=virtio0;net0"},
		{name: "an ISO attached later joins the end of the order", cdrom: true,
			want: []string{"virtio0", "net0", "ide0"}, wantBoot: "order=virtio0;net0;ide0"},
		{name: "an order naming only the disk leaves an ISO given at create unbootable", boot: "order=virtio0",
			configSet: map[string]string{"ide0": "local:iso/debian-12.iso,media=cdrom"}, want: []string{"virtio0"}, wantBoot: "order=virtio0"},
		{name: "legacy letters give a disk a bootindex only as bootdisk", boot: "cdn",
			want: []string{"net0"}, wantBoot: "cdn"},
		{name: "legacy cdn boots the bootdisk then the NIC", boot: "cdn",
			configSet: map[string]string{"bootdisk": "virtio0"}, want: []string{"virtio0", "net0"}, wantBoot: "cdn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c := bootSim(t, tt.boot)
			if tt.configSet != nil {
				if err := srv.MutateGuest(100, func(conf map[string]string) { maps.Copy(conf, tt.configSet) }); err != nil {
					t.Fatal(err)
				}
			}
			if tt.cdrom {
				c.mustOK("PUT", "/nodes/pve1/qemu/100/config", vals("ide0", "local:iso/debian-12.iso,media=cdrom"))
			}
			cfg := c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil).obj(t)
			if cfg["boot"] != tt.wantBoot {
				t.Errorf("boot = %v, want %s", cfg["boot"], tt.wantBoot)
			}
			if got := startedWith(t, srv, c).BootOrder; !slices.Equal(got, tt.want) {
				t.Errorf("bootindex devices = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestQemuLegacyBootOrderFollowsTheLetters(t *testing.T) {
	srv, c := bootSim(t, "dcn")
	if err := srv.MutateGuest(100, func(conf map[string]string) {
		conf["bootdisk"], conf["ide0"] = "virtio0", "local:iso/debian-12.iso,media=cdrom"
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := startedWith(t, srv, c).BootOrder, []string{"ide0", "virtio0", "net0"}; !slices.Equal(got, want) {
		t.Errorf("bootindex devices = %v, want %v", got, want)
	}
}

// update_vm_api refuses an order naming a device the VM lacks (or that the
// same request deletes), with Proxmox's text and its stray quote; the
// create call stores an order as given and checks nothing.
func TestQemuBootOrderRefusesMissingDevices(t *testing.T) {
	srv, c := bootSim(t, "order=virtio0;ide0")
	cfg := c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil).obj(t)
	if cfg["boot"] != "order=virtio0;ide0" {
		t.Errorf("create stored boot %v", cfg["boot"])
	}
	if got := startedWith(t, srv, c).BootOrder; !slices.Equal(got, []string{"virtio0"}) {
		t.Errorf("a missing device got a bootindex: %v", got)
	}
	tests := []struct {
		name   string
		params []string
		want   string
	}{
		{"missing device", []string{"boot", "order=virtio0;ide0"}, "invalid bootorder: device 'ide0' does not exist'"},
		{"device deleted by the same request", []string{"boot", "order=virtio0;net0", "delete", "net0"}, "invalid bootorder: device 'net0' does not exist'"},
	}
	for _, tt := range tests {
		r := c.do("PUT", "/nodes/pve1/qemu/100/config", vals(tt.params...))
		if r.Status != 500 || r.Reason != tt.want {
			t.Errorf("%s: %d %q, want 500 %q", tt.name, r.Status, r.Reason, tt.want)
		}
	}
	// A device added by the same request may be named; the order is stored
	// normalised (print_bootorder) and waits for the restart.
	c.mustOK("PUT", "/nodes/pve1/qemu/100/config", vals("boot", "order=ide0; virtio0", "ide0", "local:iso/debian-12.iso,media=cdrom"))
	g, _ := srv.Guest(100)
	if g.Pending["boot"] != "order=ide0;virtio0" {
		t.Errorf("pending boot = %q", g.Pending["boot"])
	}
	// Deleting a device drops it from the order.
	c.mustOK("PUT", "/nodes/pve1/qemu/100/config", vals("delete", "net0"))
	if g, _ := srv.Guest(100); g.Config["boot"] != "order=virtio0;ide0" || g.Pending["boot"] != "order=virtio0" && g.Pending["boot"] != "order=ide0;virtio0" {
		t.Errorf("after deleting net0: boot %q pending %q", g.Config["boot"], g.Pending["boot"])
	}
}

// An absent cpu is kvm64 (CPUConfig.pm get_default_cpu_type), not the
// x86-64-v2-AES the web UI preselects for new VMs.
func TestQemuAbsentCPUIsKVM64(t *testing.T) {
	srv, c := bootSim(t, "")
	if cfg := c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil).obj(t); cfg["cpu"] != nil {
		t.Errorf("config reads back cpu %v though none was set", cfg["cpu"])
	}
	if got := startedWith(t, srv, c).CPU; got != "kvm64" {
		t.Errorf("cpu model = %s, want kvm64", got)
	}
	c.mustOK("POST", "/nodes/pve1/qemu/100/status/stop", nil)
	c.mustOK("PUT", "/nodes/pve1/qemu/100/config", vals("cpu", "x86-64-v2-AES,flags=+pdpe1gb"))
	if got := startedWith(t, srv, c).CPU; got != "x86-64-v2-AES" {
		t.Errorf("cpu model = %s, want x86-64-v2-AES", got)
	}
}
