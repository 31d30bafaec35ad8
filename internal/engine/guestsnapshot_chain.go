package engine

// What a storage's configuration means for snapshots: the format a new
// disk gets (pve-storage get_formats) and which snapshots a volume can be
// rolled back to (volume_rollback_is_possible). ZFS datasets, LVM volumes
// and file storages with snapshot-as-volume-chain roll back to their most
// recent snapshot only.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
)

// storageConfigs is storage.cfg by storage id; nil when it cannot be read
// (then Proxmox is left to judge).
type storageConfigs map[string]pve.StorageConfig

// readStorageConfigs reads GET /storage.
func (e *Engine) readStorageConfigs(ctx context.Context) storageConfigs {
	list, err := e.client.StorageConfigs(ctx)
	if err != nil {
		e.log.Debug("storage.cfg not readable; snapshot judgements left to Proxmox", "error", err)
		return nil
	}
	out := storageConfigs{}
	for _, c := range list {
		out[c.Storage] = c
	}
	return out
}

// defaultImageFormat is the format Proxmox gives a new disk on a storage
// when the drive names none (Storage.pm storage_default_format): LVM with
// snapshot-as-volume-chain qcow2 and otherwise raw (LVMPlugin.pm
// get_formats); other storages their configured "format", else raw
// (Plugin.pm get_formats: every plugin's default is raw). ok is false when
// the storage's configuration is unknown.
func (cs storageConfigs) defaultImageFormat(storage string) (format string, ok bool) {
	c, ok := cs[storage]
	if !ok {
		return "", false
	}
	if c.Type == "lvm" {
		if c.VolumeChain != 0 {
			return "qcow2", true
		}
		return "raw", true
	}
	if c.Format != "" {
		return c.Format, true
	}
	return "raw", true
}

// newestOnly says whether a volume rolls back to its most recent snapshot
// only: ZFSPoolPlugin.pm, LVMPlugin.pm (always) and Plugin.pm (with
// snapshot-as-volume-chain) volume_rollback_is_possible.
func (cs storageConfigs) newestOnly(storage string) bool {
	c, ok := cs[storage]
	if !ok {
		return false
	}
	switch c.Type {
	case "zfspool", "zfs", "lvm":
		return true
	}
	return c.VolumeChain != 0
}

// guestVolume is a storage volume in one slot of a guest's configuration.
type guestVolume struct{ slot, volid string }

// configVolumes lists the volumes of a guest configuration as
// foreach_volume walks them for snapshots: QEMU disks but CD-ROMs, LXC
// rootfs and mount points (a bind or device mount is a path).
func configVolumes(typ string, cfg map[string]string) []guestVolume {
	var out []guestVolume
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		switch {
		case typ == "qemu" && pvefields.IsDiskKey(k):
			d := pvefields.ParseDisk(cfg[k])
			if d.IsCdrom() || d.File == "" || d.File == "none" {
				continue
			}
			out = append(out, guestVolume{k, d.File})
		case typ == "lxc" && (k == "rootfs" || isMountKey(k)):
			out = append(out, guestVolume{k, pve.ParsePropertyString(cfg[k], "volume").Values["volume"]})
		}
	}
	return out
}

// rollbackBlockers says, for each snapshot Proxmox would refuse to roll
// back to, why: a volume of it on a newest-only storage has a later
// snapshot (AbstractConfig.pm snapshot_rollback checks every volume of the
// snapshot before it stops the guest). Snapshots are ordered by time then
// name, as they were taken. It reads storage.cfg and, only when some
// storage rolls back to the newest snapshot alone, each snapshot's
// configuration; what it cannot read it leaves to Proxmox.
func (e *Engine) rollbackBlockers(ctx context.Context, typ, node string, vmid int, list []pve.GuestSnapshot) map[string]string {
	cs := e.readStorageConfigs(ctx)
	any := false
	for id := range cs {
		any = any || cs.newestOnly(id)
	}
	if !any {
		return nil
	}
	var snaps []pve.GuestSnapshot
	for _, s := range list {
		if s.Name != "current" {
			snaps = append(snaps, s)
		}
	}
	sort.SliceStable(snaps, func(i, j int) bool {
		if snaps[i].SnapTime != snaps[j].SnapTime {
			return snaps[i].SnapTime < snaps[j].SnapTime
		}
		return snaps[i].Name < snaps[j].Name
	})
	vols := make([][]guestVolume, len(snaps))
	for i, s := range snaps {
		cfg, err := e.client.SnapshotConfig(ctx, typ, node, vmid, s.Name)
		if err != nil {
			return nil
		}
		vols[i] = configVolumes(typ, cfg)
	}
	out := map[string]string{}
	for i, s := range snaps {
		if why := rollbackBlocker(cs, vols, snaps, i); why != "" {
			out[s.Name] = why
		}
	}
	return out
}

// rollbackBlocker judges snapshot i of snaps (oldest first).
func rollbackBlocker(cs storageConfigs, vols [][]guestVolume, snaps []pve.GuestSnapshot, i int) string {
	for _, v := range vols[i] {
		sid := pvefields.StorageOf(v.volid)
		if !cs.newestOnly(sid) {
			continue
		}
		if cs[sid].Type == "lvm" && pvefields.VolumeFormat(v.volid) != "qcow2" {
			return fmt.Sprintf("%s (%s) is a %s volume on LVM storage %s, which rolls back qcow2 volumes only", v.slot, v.volid, pvefields.VolumeFormat(v.volid), sid)
		}
		var later []string
		for j := i + 1; j < len(snaps); j++ {
			for _, w := range vols[j] {
				if w.volid == v.volid {
					later = append(later, snaps[j].Name)
					break
				}
			}
		}
		if len(later) > 0 {
			return fmt.Sprintf("%s (%s) is on %s storage %s, which rolls a volume back to its most recent snapshot only, and %s is newer; roll back to %s, or delete the newer snapshots first",
				v.slot, v.volid, newestOnlyWhy(cs[sid]), sid, strings.Join(later, ", "), later[len(later)-1])
		}
	}
	return ""
}

// newestOnlyWhy names the kind of storage that rolls back to the newest
// snapshot only.
func newestOnlyWhy(c pve.StorageConfig) string {
	switch {
	case c.Type == "zfspool" || c.Type == "zfs":
		return "ZFS"
	case c.VolumeChain != 0:
		return c.Type + " (snapshot-as-volume-chain)"
	}
	return c.Type
}
