package pvesim

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Disk images: naming follows the storage type, as Proxmox's plugins do:
// LVM-thin volumes are "vm-100-disk-0" (raw), file storages
// "100/vm-100-disk-0.qcow2".

func (st *Storage) fileBased() bool { return st.Type == "dir" || st.Type == "nfs" || st.Type == "cifs" }

// defaultFormat is get_formats' default (pve-storage Plugin.pm
// get_formats: storage.cfg "format", else the plugin's, raw; LVMPlugin.pm
// get_formats: qcow2 with snapshot-as-volume-chain, else raw).
func (st *Storage) defaultFormat() string {
	switch {
	case st.Type == "lvm" && st.VolumeChain:
		return "qcow2"
	case st.fileBased() && st.Format != "":
		return st.Format
	}
	return "raw"
}

// validFormat is whether the storage plugin's plugindata lists f as a
// valid format: raw, qcow2 and vmdk for NFS (NFSPlugin.pm), subvol too
// for a directory (DirPlugin.pm) and raw and subvol for ZFS
// (ZFSPoolPlugin.pm); LVM takes raw and, with volume chains, qcow2
// (LVMPlugin.pm); the others raw.
func (st *Storage) validFormat(f string) bool {
	switch {
	case st.Type == "dir":
		return f == "raw" || f == "qcow2" || f == "vmdk" || f == "subvol"
	case st.fileBased():
		return f == "raw" || f == "qcow2" || f == "vmdk"
	case st.Type == "zfspool":
		return f == "raw" || f == "subvol"
	case st.Type == "lvm" && st.VolumeChain:
		return f == "raw" || f == "qcow2"
	}
	return f == "raw"
}

var reImageFile = regexp.MustCompile(`^[^/\s]+\.(raw|qcow2|vmdk|subvol)$`)

var reDiskName = regexp.MustCompile(`(?:^|/)(?:vm|base)-(\d+)-disk-(\d+)(?:\.[a-z0-9]+)?$`)

// storageConfig is PVE::Storage::storage_config.
func (s *Server) storageConfig(id string) (*Storage, error) {
	st := s.state.storage(id)
	if st == nil {
		return nil, route.Fail("storage '%s' does not exist", id)
	}
	return st, nil
}

// storageCheckEnabled is storage_check_enabled (pve-storage Storage.pm):
// the storage exists, is not disabled and is available on the node, checked
// in that order.
func (s *Server) storageCheckEnabled(id, node string) (*Storage, error) {
	st, err := s.storageConfig(id)
	if err != nil {
		return nil, err
	}
	if st.Disable {
		return nil, route.Fail("storage '%s' is disabled", id)
	}
	if !st.availableOn(node) {
		return nil, route.Fail("storage '%s' is not available on node '%s'", id, node)
	}
	return st, nil
}

// freeDiskName finds the next unused "vm-<vmid>-disk-<n>" on a storage.
func (s *Server) freeDiskName(node string, st *Storage, vmid int, prefix string) string {
	used := map[int]bool{}
	for _, v := range s.state.volumesOn(node, st.ID) {
		if m := reDiskName.FindStringSubmatch(v.Name); m != nil && m[1] == strconv.Itoa(vmid) {
			n, _ := strconv.Atoi(m[2])
			used[n] = true
		}
	}
	n := 0
	for used[n] {
		n++
	}
	return fmt.Sprintf("%s-%d-disk-%d", prefix, vmid, n)
}

// allocImage creates a disk image volume of size bytes for a guest.
func (s *Server) allocImage(node, storage string, vmid int, size int64, format, name string) (*Volume, error) {
	// vdisk_alloc activates the storage: activate_storage checks it is
	// enabled on the node.
	st, err := s.storageCheckEnabled(storage, node)
	if err != nil {
		return nil, err
	}
	if !st.allows("images") && !st.allows("rootdir") {
		return nil, route.Fail("storage '%s' does not support vm images", storage)
	}
	if format == "" {
		format = st.defaultFormat()
	}
	// LvmThinPlugin alloc_image: raw only; LVMPlugin.pm alloc_lvm_image:
	// raw, and qcow2 with snapshot-as-volume-chain, named with ".qcow2"
	// (find_free_diskname).
	lvmQcow2 := st.Type == "lvm" && format == "qcow2"
	if !st.fileBased() && format != "raw" && !lvmQcow2 {
		return nil, route.Fail("unsupported format '%s'", format)
	}
	if lvmQcow2 && !st.VolumeChain {
		return nil, route.Fail("snapshot-as-volume-chain option need to be enabled to use qcow2 format")
	}
	if name == "" {
		name = s.freeDiskName(node, st, vmid, "vm")
	}
	if (st.fileBased() || lvmQcow2) && !strings.Contains(name, ".") {
		name += "." + format
	}
	// Plugin.pm alloc_image reads the format back from the file name
	// (parse_name_dir), which knows raw, qcow2, vmdk and subvol only: a
	// drive's format=qed or cloop allocates nothing.
	if st.fileBased() && !reImageFile.MatchString(name) {
		return nil, route.Fail("unable to parse volume filename '%s'", name)
	}
	volname := name
	if st.fileBased() {
		volname = fmt.Sprintf("%d/%s", vmid, name)
	}
	if s.state.volume(node, storage+":"+volname) != nil {
		return nil, route.Fail("disk image '%s' already exists", volname)
	}
	v := &Volume{Node: node, Storage: storage, Name: volname, Content: "images", Format: format, Size: size, VMID: vmid, CTime: s.clock.Now().Unix()}
	s.state.addVolume(v)
	return v, nil
}

// volumeVMID is the owner vmid encoded in an image's name (0 for none).
func volumeVMID(volname string) int {
	if m := reDiskName.FindStringSubmatch(volname); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	if m := regexp.MustCompile(`(?:^|/)vm-(\d+)-cloudinit`).FindStringSubmatch(volname); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// volumeContentType is the "vtype" of parse_volname: images, iso, vztmpl, import, ...
func (s *Server) volumeContentType(node, volid string) (string, *Volume, error) {
	storage, name, ok := strings.Cut(volid, ":")
	if !ok {
		return "", nil, route.Fail("unable to parse volume ID '%s'", volid)
	}
	if _, err := s.storageConfig(storage); err != nil {
		return "", nil, err
	}
	v := s.state.volume(node, volid)
	if v != nil {
		return v.Content, v, nil
	}
	switch {
	case strings.HasPrefix(name, "iso/"):
		return "iso", nil, nil
	case strings.HasPrefix(name, "vztmpl/"):
		return "vztmpl", nil, nil
	case strings.HasPrefix(name, "import/"):
		return "import", nil, nil
	case strings.HasPrefix(name, "snippets/"):
		return "snippets", nil, nil
	case strings.HasPrefix(name, "backup/"):
		return "backup", nil, nil
	}
	return "images", nil, nil
}

// renameToBase turns a guest image into a template's base image.
func (s *Server) renameToBase(node string, v *Volume) string {
	oldID := v.VolID()
	key := s.state.volumeKey(v.Node, v.Storage, v.Name)
	delete(s.state.vols, key)
	v.Name = strings.Replace(v.Name, "vm-", "base-", 1)
	s.state.vols[s.state.volumeKey(v.Node, v.Storage, v.Name)] = v
	_ = oldID
	return v.VolID()
}

// linkedChildren counts volumes whose parent is the given base volume.
func (s *Server) linkedChildren(volid string) int {
	n := 0
	for _, v := range s.state.Volumes {
		if v.Parent == volid {
			n++
		}
	}
	return n
}

// isBaseVolume reports whether an image is a template's base image: its
// own name (the last part of a linked clone's volname) starts with base-
// (Plugin.pm parse_name_dir: isBase).
func isBaseVolume(volname string) bool {
	return strings.HasPrefix(path.Base(volname), "base-")
}

// linkedCloneImage allocates a linked clone of base for vmid, named as
// the storage plugin's clone_image names it, so that the volume says
// which base image it stands on where Proxmox's does:
//   - Plugin.pm clone_image (dir, nfs): always qcow2, backed by the base,
//     "BASEVMID/BASENAME/VMID/NAME" (9000/base-9000-disk-0.raw/130/vm-130-disk-0.qcow2);
//   - ZFSPoolPlugin.pm and RBDPlugin.pm clone_image: "BASENAME/NAME";
//   - LvmThinPlugin.pm clone_image: a thin snapshot named NAME alone.
func (s *Server) linkedCloneImage(node string, base *Volume, vmid int) (*Volume, error) {
	st, err := s.storageConfig(base.Storage)
	if err != nil {
		return nil, err
	}
	format := base.Format
	if st.fileBased() {
		format = "qcow2"
	}
	v, err := s.allocImage(node, base.Storage, vmid, base.Size, format, "")
	if err != nil {
		return nil, err
	}
	v.Parent = base.VolID()
	name := v.Name
	switch st.Type {
	case "dir", "nfs":
		name = fmt.Sprintf("%d/%s/%s", base.VMID, path.Base(base.Name), v.Name)
	case "zfspool", "rbd":
		name = path.Base(base.Name) + "/" + v.Name
	}
	if name != v.Name {
		delete(s.state.vols, s.state.volumeKey(v.Node, v.Storage, v.Name))
		v.Name = name
		s.state.vols[s.state.volumeKey(v.Node, v.Storage, v.Name)] = v
	}
	return v, nil
}
