package engine

import (
	"github.com/proxmops/proxmops/internal/pvefields"
)

// FieldRows names the rows of a guest kind's field table that its
// manifests can declare (pvefields.FieldRows); a Template's are the rows a
// TemplateSpec declaring everything fills (templateGuestSpec copies no
// other field).
func FieldRows(kind string) []string {
	if kind != KindTemplate {
		return pvefields.FieldRows(kind)
	}
	yes := true
	full := &TemplateSpec{Meta: Meta{Name: "t", Tags: []string{"x"}}, VMID: 9000, Description: "d", Agent: &yes,
		QemuHW: QemuHW{Cores: 1, Sockets: 1, Memory: 512, CPU: "host", OSType: "l26", BIOS: "ovmf", Machine: "q35", SCSIHW: "virtio-scsi-single"},
		Disks:  []DiskSpec{{Storage: "local-lvm", Size: pvefields.GiB}}, NICs: []NICSpec{{Slot: "net0", Bridge: "vmbr0", Firewall: &yes}},
		CloudInit: &CloudInitSpec{User: "u", Nameserver: "1.1.1.1", Searchdomain: "example.org", Upgrade: &yes,
			SSHKeys: []string{"ssh-ed25519 AAAA u@h"}, IPConfigs: map[string]string{"net0": "ip=dhcp"}}}
	return pvefields.DeclaredRows(templateGuestSpec(full, "pve1"))
}
