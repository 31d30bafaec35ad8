package engine

import (
	"github.com/proxmops/proxmops/internal/pvefields"
)

// FieldRows names the rows of a kind's field table that its manifests can
// declare (a manifest path, or the Proxmox key of a field without one): the
// export reads each (every field the engine manages is exported), and the
// e2e test proves each in sync right after a create.
func FieldRows(kind string) []string {
	var out []string
	name := func(p param) string {
		if p.path != "" {
			return p.path
		}
		return p.key
	}
	switch kind {
	case KindVirtualMachine:
		for _, r := range qemuFields {
			out = append(out, name(r.param))
		}
	case KindTemplate:
		for _, r := range templateFieldRows() {
			out = append(out, name(r.param))
		}
	case KindContainer:
		for _, r := range ctFields {
			out = append(out, name(r.param))
		}
	}
	return out
}

// templateFieldRows are the rows of qemuFields a Template can declare: those
// a TemplateSpec declaring everything fills (templateGuestSpec copies no
// other field).
func templateFieldRows() []row[*GuestSpec] {
	yes := true
	full := &TemplateSpec{Meta: Meta{Name: "t", Tags: []string{"x"}}, VMID: 9000, Description: "d", Agent: &yes,
		QemuHW: QemuHW{Cores: 1, Sockets: 1, Memory: 512, CPU: "host", OSType: "l26", BIOS: "ovmf", Machine: "q35", SCSIHW: "virtio-scsi-single"},
		Disks:  []DiskSpec{{Storage: "local-lvm", Size: pvefields.GiB}}, NICs: []NICSpec{{Slot: "net0", Bridge: "vmbr0", Firewall: &yes}},
		CloudInit: &CloudInitSpec{User: "u", Nameserver: "1.1.1.1", Searchdomain: "example.org", Upgrade: &yes,
			SSHKeys: []string{"ssh-ed25519 AAAA u@h"}, IPConfigs: map[string]string{"net0": "ip=dhcp"}}}
	gs := templateGuestSpec(full, "pve1")
	var out []row[*GuestSpec]
	for _, r := range qemuFields {
		if len(params([]row[*GuestSpec]{r}, gs, &fieldCtx{vmid: full.VMID})) > 0 {
			out = append(out, r)
		}
	}
	return out
}
