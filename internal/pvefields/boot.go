package pvefields

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

// FormatBootOrder renders an order as Proxmox writes it back.
func FormatBootOrder(devs []string) string { return "order=" + strings.Join(devs, ";") }

// EffectiveBootOrder lists the devices of cfg that get a bootindex, lowest
// first: those of `order=` that exist, else the legacy letters' reading
// (bootorder_from_legacy, "cdn" when boot is absent).
func EffectiveBootOrder(cfg map[string]string) []string {
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
		if IsDiskKey(k) && !strings.HasPrefix(k, "efidisk") && !strings.HasPrefix(k, "tpmstate") {
			slots = append(slots, k)
		}
	}
	sort.Slice(slots, func(i, j int) bool { return legacyBootWalk.less(slots[i], slots[j]) })
	for _, k := range slots {
		d := ParseDisk(cfg[k])
		if d.IsCdrom() && !d.IsCloudInit() {
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

// BootDrift compares the order with the wanted devices: they must lead it,
// in that order. Devices after them (a NIC for PXE, a seed CD-ROM Proxmox
// appended) are left alone.
func BootDrift(want []string, cfg map[string]string) bool {
	have := EffectiveBootOrder(cfg)
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

// BootDisplay shows an order for the plan: the value Proxmox holds, or the
// devices it boots from when the value is legacy or absent.
func BootDisplay(cfg map[string]string) string {
	v, ok := cfg["boot"]
	if ok && pve.ParsePropertyString(v, "legacy").Values["legacy"] == "" {
		return v
	}
	eff := EffectiveBootOrder(cfg)
	if !ok {
		v = "(default cdn)"
	}
	if len(eff) == 0 {
		return v
	}
	return v + ": " + strings.Join(eff, ";")
}

// BootDiskSlot finds the boot disk of a configuration: the first disk of the
// boot order, else the first non-cdrom disk.
func BootDiskSlot(cfg map[string]string) string {
	if b, ok := cfg["boot"]; ok {
		ps := pve.ParsePropertyString(b, "legacy")
		for _, dev := range strings.Split(ps.Values["order"], ";") {
			dev = strings.TrimSpace(dev)
			if IsDiskKey(dev) {
				if v, ok := cfg[dev]; ok && !ParseDisk(v).IsCdrom() {
					return dev
				}
			}
		}
	}
	var keys []string
	for k, v := range cfg {
		if IsDiskKey(k) && !strings.HasPrefix(k, "efidisk") && !strings.HasPrefix(k, "tpmstate") {
			if d := ParseDisk(v); !d.IsCdrom() && !d.IsCloudInit() {
				keys = append(keys, k)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool { return busPreference.less(keys[i], keys[j]) })
	if len(keys) > 0 {
		return keys[0]
	}
	return ""
}

func (o slotOrder) less(a, b string) bool {
	rank := func(s string) (int, int) {
		for i, p := range o {
			if rest, ok := strings.CutPrefix(s, p); ok {
				n, _ := strconv.Atoi(rest)
				return i, n
			}
		}
		return len(o), 0
	}
	ra, na := rank(a)
	rb, nb := rank(b)
	if ra != rb {
		return ra < rb
	}
	return na < nb
}

// slotOrder ranks drive slots by bus, in the order listed, then by index.
type slotOrder []string

var (
	// busPreference is how proxmops orders the drives it lists.
	busPreference = slotOrder{"scsi", "virtio", "sata", "ide"}
	// legacyBootWalk is Proxmox's drive walk for legacy boot letters.
	legacyBootWalk = slotOrder{"ide", "scsi", "virtio", "sata"}
)
