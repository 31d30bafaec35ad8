package engine

import (
	"testing"

	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
)

func TestOwnershipMark(t *testing.T) {
	for _, tc := range []struct {
		field string
		owned bool
		text  string
	}{
		{"", false, ""},
		{"guest VLAN trunk", false, "guest VLAN trunk"},
		{markOwned(""), true, ""},
		{markOwned("guest VLAN trunk"), true, "guest VLAN trunk"},
		{"guest VLAN trunk (managed-by-proxmops)\n", true, "guest VLAN trunk"},
		{"managed-by-proxmops edited", true, "edited"},
	} {
		owned, text := ParseOwned(tc.field)
		if owned != tc.owned || text != tc.text {
			t.Errorf("ParseOwned(%q) = %v %q, want %v %q", tc.field, owned, text, tc.owned, tc.text)
		}
	}
}

func TestSDNHelpers(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"start-address=10.0.0.1,end-address=10.0.0.9", `{"end-address":"10.0.0.9","start-address":"10.0.0.1"}`},
		{"start-address=10.0.0.1,end-address=10.0.0.9\nstart-address=10.0.0.20,end-address=10.0.0.29",
			"start-address=10.0.0.20,end-address=10.0.0.29\x00start-address=10.0.0.1,end-address=10.0.0.9"},
	} {
		if pvefields.NormalRanges(tc.a) != pvefields.NormalRanges(tc.b) {
			t.Errorf("ranges differ: %q vs %q", tc.a, tc.b)
		}
	}
	if !sameSDNValue("peers", "10.0.0.2,10.0.0.1", "10.0.0.1, 10.0.0.2") || sameSDNValue("mtu", "1450", "1400") {
		t.Error("sameSDNValue")
	}
}

// diffContainer against Proxmox's read-back forms: nothing differs.
func TestDiffContainerReadBack(t *testing.T) {
	swap := 512
	on := true
	feat := "nesting=1"
	s := &ContainerSpec{Meta: Meta{Name: "dns-01"}, VMID: 201, ContainerConfig: pvefields.ContainerConfig{Hostname: "dns-01", Cores: 1, Memory: 512, Swap: &swap,
		OnBoot: &on, Unprivileged: true, Nameserver: "1.1.1.1 9.9.9.9", Features: &feat, CPULimit: "2.5",
		RootFS: MountSpec{Slot: "rootfs", Storage: "local-lvm", Size: 8 * pvefields.GiB, MountOptions: []string{"noatime"}},
		Mounts: []MountSpec{{Slot: "mp0", Path: "/srv/data", Storage: "local-lvm", Size: 200 * pvefields.GiB, Backup: true}},
		NICs:   []CTNICSpec{{Slot: "net0", Name: "eth0", Bridge: "vmbr0", IP: "10.0.0.53/24", Gw: "10.0.0.1", Firewall: true}}}}
	cfg := map[string]string{"hostname": "dns-01", "cores": "1", "memory": "512", "swap": "512", "onboot": "1",
		"unprivileged": "1", "nameserver": "1.1.1.1 9.9.9.9", "features": "nesting=1", "cpulimit": "2.5", "arch": "amd64",
		"rootfs": "local-lvm:vm-201-disk-0,mountoptions=noatime,size=8G",
		"mp0":    "local-lvm:vm-201-disk-1,mp=/srv/data,backup=1,size=200G",
		"net0":   "name=eth0,bridge=vmbr0,firewall=1,gw=10.0.0.1,hwaddr=BC:24:11:AA:BB:CC,ip=10.0.0.53/24,type=veth",
		"tags":   "managed-by-proxmops", "digest": "abc"}
	g := &Guest{VMID: 201, Type: "lxc", Status: "running", Current: cfg, Effective: cfg, Pending: map[string]string{}, PendingDelete: map[string]bool{}}
	d := diffContainer(s, g)
	if !d.Empty() || len(d.CreationOnly) > 0 || len(d.Pending) > 0 {
		t.Fatalf("perpetual diff: %+v", d.Changes())
	}
	// A changed NIC keeps its MAC address and type.
	s.NICs[0].Tag = 20
	d = diffContainer(s, g)
	if len(d.Config) != 1 || d.Config[0].Value != "name=eth0,bridge=vmbr0,firewall=1,gw=10.0.0.1,hwaddr=BC:24:11:AA:BB:CC,ip=10.0.0.53/24,type=veth,tag=20" {
		t.Fatalf("net0 change: %+v", d.Config)
	}
	if d.needsReboot() {
		t.Error("a NIC change is live on a running container")
	}
	// The nameserver waits for a restart.
	s.NICs[0].Tag = 0
	s.Nameserver = "8.8.8.8"
	if d = diffContainer(s, g); !d.needsReboot() {
		t.Error("nameserver should need a restart")
	}
}

func TestParamsSetList(t *testing.T) {
	p := pve.NewParams().Set("subnet", "10.0.0.0/24").SetList("dhcp-range", []string{"a=1", "b=2"})
	if got := p.Encode(); got != "subnet=10.0.0.0%2F24&dhcp-range=a%3D1&dhcp-range=b%3D2" {
		t.Fatalf("Encode = %q", got)
	}
	p.Set("dhcp-range", "c")
	if got := p.Encode(); got != "subnet=10.0.0.0%2F24&dhcp-range=c" {
		t.Fatalf("after Set: %q", got)
	}
}

func TestApplianceVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		less bool
	}{
		{"12.7-1", "12.10-1", true},
		{"12.7-1", "12.7-2", true},
		{"20250617", "20240101", false},
		{"13.1-2", "12.7-1", false},
		{"12.7", "12.7-1", true},
	} {
		if got := pve.ApplianceVersionLess(tc.a, tc.b); got != tc.less {
			t.Errorf("%s < %s = %v, want %v", tc.a, tc.b, got, tc.less)
		}
	}
}
