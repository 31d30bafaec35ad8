package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/proxmops/proxmops/internal/pvefields"
)

// Refusals the plan can foresee. Proxmox refuses a guest on a node that is
// not in the cluster, a volume on a storage that does not exist, is
// disabled or is not available on the node (pve-storage Storage.pm
// storage_check_enabled, run where a volume is allocated, imported or
// downloaded), a storage without the content type, and a clone of a VM
// with local volumes to another node (qemu-server API2/Qemu.pm clone_vm).
// /cluster/resources lists a storage on a node only where it is enabled,
// so the observation tells all of these apart. A foreseen refusal is planned
// as a Failed action without a step: never applied, shown with its reason.

// contentRefusals are Proxmox's words for a storage without a content type.
var contentRefusals = map[string]string{
	"images":  "storage '%s' does not support vm images",             // qemu-server check_storage_access
	"rootdir": "storage '%s' does not support container directories", // pve-container LXC.pm create_vm
	"vztmpl":  "storage '%s' does not support templates",             // pve-manager Nodes.pm apl_download
}

// fileBasedTypes are the storage types with a path (download_url and
// upload refuse the others).
var fileBasedTypes = map[string]bool{"dir": true, "nfs": true, "cifs": true, "cephfs": true, "glusterfs": true, "btrfs": true}

// downloadRefusal is download_url's checks (pve-storage
// API2/Storage/Status.pm): enabled on the node, file based, content type.
func downloadRefusal(snap *Observation, node, storage, content string) string {
	if r := storageRefusal(snap, node, storage, ""); r != "" {
		return r
	}
	ref := snap.Storage(node, storage)
	switch {
	case ref == nil:
		return ""
	case ref.Type != "" && !fileBasedTypes[ref.Type]:
		return fmt.Sprintf("can't upload to storage type '%s', not a file based storage!", ref.Type)
	case !ref.Accepts(content):
		return fmt.Sprintf("storage '%s' is not configured for content-type '%s'", storage, content)
	}
	return ""
}

// nodeRefusal says why a node cannot take a guest, "" when it can.
func nodeRefusal(snap *Observation, node string) string {
	if node == "" {
		return "the cluster lists no node"
	}
	if !slices.Contains(snap.Nodes, node) {
		return fmt.Sprintf("no such cluster node '%s'", node)
	}
	return ""
}

// storageRefusal says why storage on node cannot hold content ("" for
// availability only), "" when it can or when the observation cannot tell (no
// storage listed for the node: it does not answer).
func storageRefusal(snap *Observation, node, storage, content string) string {
	if storage == "" || len(snap.storages[node]) == 0 {
		return ""
	}
	if ref := snap.Storage(node, storage); ref != nil {
		if content != "" && !ref.Accepts(content) {
			if f, ok := contentRefusals[content]; ok {
				return fmt.Sprintf(f, storage)
			}
			return fmt.Sprintf("storage '%s' does not support content type '%s'", storage, content)
		}
		return ""
	}
	for _, n := range snap.Nodes {
		if snap.Storage(n, storage) != nil {
			return fmt.Sprintf("storage '%s' is not available on node '%s'", storage, node)
		}
	}
	return fmt.Sprintf("storage '%s' does not exist or is disabled", storage)
}

// sharedOn reports whether a storage is shared, looking on node first.
func sharedOn(snap *Observation, node, storage string) bool {
	if ref := snap.Storage(node, storage); ref != nil {
		return ref.Shared
	}
	for _, n := range snap.Nodes {
		if ref := snap.Storage(n, storage); ref != nil {
			return ref.Shared
		}
	}
	return false
}

// firstRefusal returns the first non-empty reason.
func firstRefusal(reasons ...string) string {
	for _, r := range reasons {
		if r != "" {
			return r
		}
	}
	return ""
}

// guestSpecRefusal checks what creating gs on node allocates: its node,
// its disks (skip the first when a clone brings it), its cloud-init drive
// and its CD-ROM.
func guestSpecRefusal(snap *Observation, gs *pvefields.GuestSpec, node string, skipFirstDisk bool) string {
	if r := nodeRefusal(snap, node); r != "" {
		return r
	}
	for i, d := range gs.Disks {
		if i == 0 && skipFirstDisk {
			continue
		}
		if r := storageRefusal(snap, node, d.Storage, "images"); r != "" {
			return r
		}
	}
	if gs.CloudInit != nil {
		stor := gs.CloudInit.Storage
		if stor == "" && len(gs.Disks) > 0 {
			stor = gs.Disks[0].Storage
		}
		if r := storageRefusal(snap, node, stor, ""); r != "" {
			return r
		}
	}
	if gs.ISOVolume != "" {
		// A CD-ROM's storage is activated at start: enabled on the node.
		return storageRefusal(snap, node, pvefields.StorageOf(gs.ISOVolume), "")
	}
	return ""
}

// cloneRefusal is clone_vm's checks in its order: the target storage
// enabled here and accepting images, then on the target node and shared,
// then every volume of the template shared when the clone goes to another
// node. volumes lists the template's volume ids (nil: unknown).
func cloneRefusal(snap *Observation, tplNode, node, storage string, volumes []string) string {
	if storage != "" {
		if r := storageRefusal(snap, tplNode, storage, "images"); r != "" {
			return r
		}
		if node != tplNode {
			if r := storageRefusal(snap, node, storage, ""); r != "" {
				return r
			}
			if !sharedOn(snap, node, storage) {
				return fmt.Sprintf("can't clone to non-shared storage '%s'", storage)
			}
		}
	}
	if node == tplNode {
		return ""
	}
	for _, v := range volumes {
		if !sharedOn(snap, tplNode, pvefields.StorageOf(v)) {
			return fmt.Sprintf("can't clone VM to node '%s' (VM uses local storage)", node)
		}
	}
	return ""
}

// guestVolumes lists the volumes of a configuration's drives (CD-ROMs and
// the cloud-init drive included, as clone_vm's check counts them).
func guestVolumeIDs(cfg map[string]string) []string {
	var out []string
	for k, v := range cfg {
		if !pvefields.IsDiskKey(k) {
			continue
		}
		f := pvefields.ParseDisk(v).File
		if f == "" || f == "none" || f == "cdrom" || !strings.Contains(f, ":") {
			continue
		}
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// specVolumes lists the storages a declared template's volumes will be on,
// as volume ids on those storages.
func specVolumes(gs *pvefields.GuestSpec) []string {
	var out []string
	for _, d := range gs.Disks {
		out = append(out, d.Storage+":")
	}
	if gs.CloudInit != nil && gs.CloudInit.Storage != "" {
		out = append(out, gs.CloudInit.Storage+":")
	}
	if gs.ISOVolume != "" {
		out = append(out, gs.ISOVolume)
	}
	return out
}

// diffRefusal checks the volumes an update allocates (new disks, a
// cloud-init drive) on the guest's node.
func diffRefusal(snap *Observation, node string, d *pvefields.Diff) string {
	for _, c := range d.Config {
		if !c.Async || c.Del {
			continue
		}
		content := "images"
		if strings.HasSuffix(c.Value, ":cloudinit") {
			content = ""
		}
		if r := storageRefusal(snap, node, pvefields.StorageOf(c.Value), content); r != "" {
			return r
		}
	}
	return ""
}
