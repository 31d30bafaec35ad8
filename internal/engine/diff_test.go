package engine

import (
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

func ptr[T any](v T) *T { return &v }

func guestWith(cfg map[string]string, status string) *Guest {
	eff := map[string]string{}
	for k, v := range cfg {
		eff[k] = v
	}
	return &Guest{VMID: 120, Type: "qemu", Node: "pve1", Status: status, Owned: true, Read: true,
		Current: cfg, Effective: eff, Pending: map[string]string{}, PendingDelete: map[string]bool{}}
}

func baseSpec() *GuestSpec {
	return &GuestSpec{Kind: KindVirtualMachine, Name: "app-01", VMID: 120, Node: "pve1", Tags: []string{"prod", "app"},
		QemuHW: QemuHW{Cores: 2, Memory: 2048, CPU: "x86-64-v2"},
		Disks:  []DiskSpec{{Storage: "local-lvm", Size: 20 * pvefields.GiB}},
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
	d := diffGuest(baseSpec(), guestWith(readBack(), "running"))
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
	if d := diffGuest(baseSpec(), guestWith(cfg, "running")); !d.Empty() {
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
			d := diffGuest(baseSpec(), guestWith(cfg, "running"))
			if tt.refused {
				if len(d.Refused) != 1 || !strings.Contains(d.Refused[0], "shrinking disks is not supported") {
					t.Fatalf("refused %v", d.Refused)
				}
				return
			}
			if tt.resize {
				if len(d.Resizes) != 1 || d.Resizes[0].To != 20*pvefields.GiB {
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
	d := diffGuest(baseSpec(), guestWith(cfg, "running"))
	if len(d.Refused) != 1 || len(d.Resizes) != 0 {
		t.Fatalf("%+v", d)
	}
}

func TestNICChangeKeepsMAC(t *testing.T) {
	cfg := readBack()
	cfg["net0"] = "virtio=BC:24:11:2A:3B:4C,bridge=vmbr1,firewall=1"
	gs := baseSpec()
	gs.NICs[0].Tag = ptr(10)
	d := diffGuest(gs, guestWith(cfg, "stopped"))
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
	cfg := readBack()
	g := guestWith(cfg, "running")
	g.Effective["cores"] = "4"
	g.Pending["cores"] = "4"
	gs := baseSpec()
	gs.Cores = 4
	d := diffGuest(gs, g)
	if !d.Empty() || len(d.Pending) != 1 || d.Pending[0].Field != "cores" || d.Pending[0].From != "2" || d.Pending[0].To != "4" {
		t.Fatalf("%+v", d)
	}
	a := &Action{Action: vocab.ActionNone}
	planUpdate(a, g, d, updateOptions{})
	if a.Action != vocab.ActionNone || !a.NeedsReboot || a.Status != vocab.StatusOutOfSync {
		t.Fatalf("without applyMode: %+v", a)
	}
	a = &Action{Action: vocab.ActionNone}
	planUpdate(a, g, d, updateOptions{rebootIfNeeded: true})
	if a.Action != vocab.ActionReboot || !a.NeedsReboot {
		t.Fatalf("with applyMode reboot: %+v", a)
	}
}

func TestResolveDiskSlotsFollowsBootDisk(t *testing.T) {
	disks := []DiskSpec{{Storage: "local-lvm", Size: 20 * pvefields.GiB}, {Storage: "local-lvm", Size: 50 * pvefields.GiB}}
	got := resolveDiskSlots(disks, map[string]string{"virtio0": "local-lvm:base-9000-disk-0/vm-130-disk-0,size=10G", "boot": "order=virtio0;net0"})
	if got[0].Slot != "virtio0" || got[1].Slot != "scsi1" {
		t.Fatalf("%+v", got)
	}
	got = resolveDiskSlots(disks, nil)
	if got[0].Slot != "scsi0" || got[1].Slot != "scsi1" {
		t.Fatalf("%+v", got)
	}
}

func TestHealth(t *testing.T) {
	tests := []struct {
		a    *Action
		want vocab.Health
	}{
		{&Action{Kind: KindVirtualMachine, Action: vocab.ActionCreate, Status: vocab.StatusOutOfSync}, vocab.HealthMissing},
		{&Action{Kind: KindVirtualMachine, Status: vocab.StatusProgressing, Observed: map[string]any{"status": "running"}}, vocab.HealthProgressing},
		{&Action{Kind: KindVirtualMachine, Status: vocab.StatusSynced, Observed: map[string]any{"status": "running"}}, vocab.HealthHealthy},
		{&Action{Kind: KindVirtualMachine, Status: vocab.StatusOutOfSync, Observed: map[string]any{"status": "stopped"}, wantRunning: true}, vocab.HealthDegraded},
		{&Action{Kind: KindVirtualMachine, Status: vocab.StatusSynced, Observed: map[string]any{"status": "stopped"}}, vocab.HealthHealthy},
		{&Action{Kind: KindVirtualMachine, Status: vocab.StatusConflict, Observed: map[string]any{"status": "running"}}, vocab.HealthUnknown},
		{&Action{Kind: KindVirtualMachine, Status: vocab.StatusSynced, Observed: map[string]any{"status": "paused"}}, vocab.HealthSuspended},
		{&Action{Kind: KindVirtualMachine, Status: vocab.StatusFailed, Observed: map[string]any{"status": "running"}}, vocab.HealthDegraded},
		{&Action{Kind: KindVirtualMachine, Status: vocab.StatusUnknown}, vocab.HealthUnknown},
		{&Action{Kind: KindVirtualMachine}, vocab.HealthUnknown},
		{&Action{Kind: KindTemplate, Status: vocab.StatusSynced, Observed: map[string]any{"status": "stopped"}}, vocab.HealthHealthy},
	}
	for i, tt := range tests {
		if got := HealthOf(tt.a); got != tt.want {
			t.Errorf("%d: %s, want %s", i, got, tt.want)
		}
	}
}
