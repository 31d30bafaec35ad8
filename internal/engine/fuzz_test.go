package engine

import (
	"testing"

	"github.com/proxmops/proxmops/internal/pvefields"
)

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
		d := diffGuest(baseSpec(), guestWith(cfg, "running"))
		_ = d.Changes()
		_, _ = pvefields.ParseSize(v)
		if pvefields.NormalIPConfig(v) != pvefields.NormalIPConfig(v) {
			t.Fatal("NormalIPConfig is not stable")
		}
	})
}
