package pvesim

import (
	"sort"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// KVMCommand is what qemu-server put on a running VM's kvm command line
// that a person can see with `qm showcmd` (PVE/QemuServer.pm
// config_to_command): the CPU model and the devices given a bootindex.
// QEMU runs with `-boot strict=on`, so the firmware boots only from those
// devices, in that order: a CD-ROM missing from the list never boots.
type KVMCommand struct {
	// CPU is the CPU model: the config's cputype, else kvm64
	// (PVE/QemuServer/CPUConfig.pm get_default_cpu_type on x86_64 with KVM).
	CPU string `json:"cpu"`
	// BootOrder lists the devices with a bootindex, lowest index first.
	BootOrder []string `json:"bootOrder"`
}

// qemuDriveNames is valid_drive_names (PVE/QemuServer/Drive.pm): the order
// foreach_volume walks drives in.
var qemuDriveNames = func() []string {
	var out []string
	for _, b := range []struct {
		bus string
		n   int
	}{{"ide", 4}, {"scsi", 31}, {"virtio", 16}, {"sata", 6}} {
		for i := 0; i < b.n; i++ {
			out = append(out, b.bus+itoa(i))
		}
	}
	return append(out, "efidisk0", "tpmstate0")
}()

// kvmCommand renders the parts of config_to_command a test can observe.
func kvmCommand(conf map[string]string) *KVMCommand {
	cmd := &KVMCommand{CPU: "kvm64", BootOrder: []string{}}
	if v, ok := conf["cpu"]; ok {
		if c, err := parsePropString(route.NamedProps("pve-vm-cpu-conf"), v, "cpu"); err == nil && c["cputype"] != "" {
			cmd.CPU = c["cputype"]
		}
	}
	index := deviceBootOrder(conf)
	// Only devices the VM has get a bootindex: drives (not efidisk or
	// tpmstate) in foreach_volume, NICs in the net loop.
	for dev := range index {
		_, ok := conf[dev]
		if !ok || strings.HasPrefix(dev, "efidisk") || strings.HasPrefix(dev, "tpmstate") {
			continue
		}
		if !isQemuDiskKey(dev) && !strings.HasPrefix(dev, "net") {
			continue
		}
		cmd.BootOrder = append(cmd.BootOrder, dev)
	}
	sort.SliceStable(cmd.BootOrder, func(i, j int) bool { return index[cmd.BootOrder[i]] < index[cmd.BootOrder[j]] })
	return cmd
}

// deviceBootOrder is device_bootorder (PVE/QemuServer.pm): bootindex per
// device, from `boot: order=` (starting at 100), else from the legacy
// letters (bootorder_from_legacy; "cdn" when boot is absent).
func deviceBootOrder(conf map[string]string) map[string]int {
	out := map[string]int{}
	b := map[string]string{}
	if v, ok := conf["boot"]; ok {
		if p, err := parsePropString(route.NamedProps("pve-qm-boot"), v, "legacy"); err == nil {
			b = p
		}
	}
	if b["legacy"] == "" && b["order"] != "" {
		for i, dev := range splitList(b["order"]) {
			if _, seen := out[dev]; !seen {
				out[dev] = 100 + i
			}
		}
		return out
	}
	if b["legacy"] == "" && conf["boot"] != "" {
		return out // "boot: order=" with an empty list: nothing boots
	}
	legacy := b["legacy"]
	if legacy == "" {
		legacy = "cdn"
	}
	next := map[rune]int{}
	for i, c := range legacy {
		next[c] = (i + 1) * 100
	}
	for _, ds := range qemuDriveNames {
		v, ok := conf[ds]
		if !ok {
			continue
		}
		d, err := parseDrive(ds, v)
		if err != nil {
			continue
		}
		if driveIsCdrom(d) && !driveIsCloudinit(d) {
			if next['d'] > 0 {
				out[ds] = next['d']
				next['d']++
			}
		} else if next['c'] > 0 {
			if conf["bootdisk"] == ds {
				out[ds] = next['c']
			}
			next['c']++
		}
	}
	if next['n'] > 0 {
		for i := 0; i < maxQemuNets; i++ {
			if _, ok := conf["net"+itoa(i)]; ok {
				out["net"+itoa(i)] = next['n']
				next['n']++
			}
		}
	}
	return out
}

// bootOrderList reads the device list of a `boot: order=` value, nil for
// none or a legacy value.
func bootOrderList(boot string) []string {
	b, err := parsePropString(route.NamedProps("pve-qm-boot"), boot, "legacy")
	if err != nil || b["order"] == "" {
		return nil
	}
	return splitList(b["order"])
}

// printBootOrder is print_bootorder: "order=a;b", "" for no device.
func printBootOrder(devs []string) string {
	if len(devs) == 0 {
		return ""
	}
	return "order=" + strings.Join(devs, ";")
}

// runningKVM copies the command line of a running QEMU guest, nil otherwise.
func runningKVM(g *Guest) *KVMCommand {
	if !g.Running || g.KVM == nil {
		return nil
	}
	c := *g.KVM
	c.BootOrder = append([]string{}, g.KVM.BootOrder...)
	return &c
}
