package engine

import (
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/pve"
)

// Boot order. qemu-server starts QEMU with `-boot strict=on` and gives a
// bootindex only to the devices of `boot: order=` (PVE/QemuServer.pm
// config_to_command, device_bootorder): a device left out never boots. So
// the boot disk and an installer's ISO drive must be in the order.

// wantBootOrder lists the devices the guest must boot from, in order: its
// boot disk, then the declared ISO's drive. cfg is the guest's effective
// configuration (nil before it exists). Nil means the order is not managed.
func wantBootOrder(gs *guestSpec, cfg map[string]string) []string {
	var out []string
	if disks := resolveDiskSlots(gs.disks, cfg); len(disks) > 0 {
		out = append(out, disks[0].Slot)
	} else if cfg != nil {
		if slot := bootDiskSlot(cfg); slot != "" {
			out = append(out, slot)
		}
	}
	if gs.isoVolume != "" {
		out = append(out, cdromSlot)
	}
	return out
}

// printBootOrder renders an order as Proxmox writes it back.
func printBootOrder(devs []string) string { return "order=" + strings.Join(devs, ";") }

// effectiveBootOrder lists the devices of cfg that get a bootindex, lowest
// first: those of `order=` that exist, else the legacy letters' reading
// (bootorder_from_legacy, "cdn" when boot is absent).
func effectiveBootOrder(cfg map[string]string) []string {
	v, set := cfg["boot"]
	ps := pve.ParsePropertyString(v, "legacy")
	legacy := ps.Values["legacy"]
	if set && legacy == "" {
		var out []string
		for _, dev := range strings.FieldsFunc(ps.Values["order"], func(r rune) bool { return r == ';' || r == ' ' }) {
			if _, ok := cfg[dev]; ok {
				out = append(out, dev)
			}
		}
		return out
	}
	if legacy == "" {
		legacy = "cdn"
	}
	next := map[rune]int{}
	for i, c := range legacy {
		next[c] = (i + 1) * 100
	}
	index := map[string]int{}
	var slots []string
	for k := range cfg {
		if isDiskKey(k) && !strings.HasPrefix(k, "efidisk") && !strings.HasPrefix(k, "tpmstate") {
			slots = append(slots, k)
		}
	}
	sort.Slice(slots, func(i, j int) bool { return legacyBootWalk.less(slots[i], slots[j]) })
	for _, k := range slots {
		d := parseDisk(cfg[k])
		if d.isCdrom() && !d.isCloudInit() {
			if next['d'] > 0 {
				index[k] = next['d']
				next['d']++
			}
		} else if next['c'] > 0 {
			if cfg["bootdisk"] == k {
				index[k] = next['c']
			}
			next['c']++
		}
	}
	if next['n'] > 0 {
		for i := 0; i < 32; i++ {
			if _, ok := cfg["net"+strconv.Itoa(i)]; ok {
				index["net"+strconv.Itoa(i)] = next['n']
				next['n']++
			}
		}
	}
	out := make([]string, 0, len(index))
	for k := range index {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return index[out[i]] < index[out[j]] })
	return out
}

// bootDrift compares the order with the wanted devices: they must lead it,
// in that order. Devices after them (a NIC for PXE, a seed CD-ROM Proxmox
// appended) are left alone.
func bootDrift(want []string, cfg map[string]string) bool {
	have := effectiveBootOrder(cfg)
	if len(have) < len(want) {
		return true
	}
	for i := range want {
		if have[i] != want[i] {
			return true
		}
	}
	return false
}

// bootDisplay shows an order for the plan: the value Proxmox holds, or the
// devices it boots from when the value is legacy or absent.
func bootDisplay(cfg map[string]string) string {
	v, ok := cfg["boot"]
	if ok && pve.ParsePropertyString(v, "legacy").Values["legacy"] == "" {
		return v
	}
	eff := effectiveBootOrder(cfg)
	if !ok {
		v = "(default cdn)"
	}
	if len(eff) == 0 {
		return v
	}
	return v + ": " + strings.Join(eff, ";")
}
