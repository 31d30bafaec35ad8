package pvesim

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Storage content: listing, info, notes, protection, deletion and allocation
// (pve-storage API2/Storage/Content.pm and the plugins' parse_volname).

func (s *Server) volumeJSON(v *Volume) map[string]any {
	m := map[string]any{"volid": v.VolID(), "content": v.Content, "format": v.Format, "size": v.Size, "ctime": v.CTime}
	if v.VMID != 0 {
		m["vmid"] = v.VMID
	}
	if v.Notes != "" && v.Content == "backup" {
		// Plugin.pm list_volumes reads a notes file for backups only.
		m["notes"], _, _ = strings.Cut(v.Notes, "\n")
	}
	if v.Protected {
		m["protected"] = 1
	}
	// Only the file plugins' list_images (Plugin.pm, BTRFSPlugin.pm) read
	// the space an image uses; LVM(-thin), ZFS and RBD list none, nor does
	// $get_subdir_files for other content.
	if st := s.state.storage(v.Storage); (v.Content == "images" || v.Content == "rootdir") && st != nil && st.fileBased() {
		m["used"] = v.Size
		if v.Used > 0 {
			m["used"] = v.Used
		}
	}
	if v.Parent != "" {
		m["parent"] = v.Parent
	}
	return m
}

func (s *Server) contentList(r *route.Request) (any, error) {
	st, err := s.storageConfig(r.Str("storage"))
	if err != nil {
		return nil, err
	}
	content := r.Str("content")
	vmid, hasVMID := r.Int("vmid")
	out := []map[string]any{}
	for _, v := range s.state.volumesOn(r.Str("node"), st.ID) {
		if content != "" && v.Content != content {
			continue
		}
		if hasVMID && v.VMID != vmid {
			continue
		}
		// Content.pm index skips volumes check_volume_access refuses.
		if s.checkVolumeAccess(r.User, 0, v.VolID(), "") != nil {
			continue
		}
		out = append(out, s.volumeJSON(v))
	}
	return out, nil
}

// realVolumeID is Content.pm's real_volume_id: "storage:name" or a name
// relative to the storage in the path.
func realVolumeID(storage, volume string) (string, string, error) {
	if strings.Contains(volume, ":") {
		sid, _, _ := strings.Cut(volume, ":")
		if !reVolumeID.MatchString(volume) {
			return "", "", route.ParamErr("volume", fmt.Sprintf("unable to parse volume ID '%s'\n", volume))
		}
		if storage != "" && sid != storage {
			return "", "", route.ParamErr("volume", fmt.Sprintf("storage ID mismatch (%s != %s)\n", sid, storage))
		}
		return volume, sid, nil
	}
	if storage == "" {
		return "", "", route.ParamErr("volume", "no storage specified - incomplete volume ID")
	}
	return storage + ":" + volume, storage, nil
}

func (s *Server) findVolume(r *route.Request) (*Storage, *Volume, error) {
	volid, sid, err := realVolumeID(r.Str("storage"), r.Str("volume"))
	if err != nil {
		return nil, nil, err
	}
	st, err := s.storageConfig(sid)
	if err != nil {
		return nil, nil, err
	}
	v := s.state.volume(r.Str("node"), volid)
	if v == nil {
		_, name, _ := strings.Cut(volid, ":")
		if st.fileBased() {
			return st, nil, route.Fail("volume '%s' does not exist", volid)
		}
		return st, nil, route.Fail("no such logical volume pve/%s", name)
	}
	return st, v, nil
}

func (s *Server) contentInfo(r *route.Request) (any, error) {
	st, v, err := s.contentVolume(r)
	if err != nil {
		return nil, err
	}
	used := v.Used
	if used == 0 {
		used = v.Size
	}
	m := map[string]any{"path": s.volumePath(st, v), "size": v.Size, "used": used, "format": v.Format}
	// get_volume_attribute: the directory plugins (DirPlugin.pm) answer
	// notes and protection for backups only, the others know neither.
	if st.fileBased() && v.Content == "backup" {
		m["notes"] = v.Notes
		m["protected"] = 0
		if v.Protected {
			m["protected"] = 1
		}
	}
	return m, nil
}

func (s *Server) contentUpdate(r *route.Request) (any, error) {
	st, v, err := s.contentVolume(r)
	if err != nil {
		return nil, err
	}
	if r.Has("notes") {
		// update_volume_attribute: Plugin.pm's update_volume_notes dies
		// (a die without newline, so Perl adds where), DirPlugin.pm's (dir,
		// nfs, cifs, cephfs) refuses anything but backups.
		if !st.fileBased() {
			return nil, route.Fail("volume notes are not supported for %s at /usr/share/perl5/PVE/Storage/Plugin.pm line 1300.", pluginClass(st.Type))
		}
		if v.Content != "backup" {
			return nil, route.Fail("only backups can have notes")
		}
		v.Notes = r.Str("notes")
	}
	if r.Has("protected") {
		// update_volume_attribute: the directory plugins protect backups
		// only; the others know no protection.
		if !st.fileBased() {
			return nil, route.Fail("attribute 'protected' is not supported for storage type '%s'", st.Type)
		}
		if v.Content != "backup" {
			return nil, route.Fail("only backups support attribute 'protected'")
		}
		v.Protected = r.Bool("protected")
	}
	return nil, nil
}

// pluginClass names a storage type's pve-storage plugin, as Perl's
// messages do.
func pluginClass(typ string) string {
	switch typ {
	case "lvmthin":
		return "PVE::Storage::LvmThinPlugin"
	case "lvm":
		return "PVE::Storage::LVMPlugin"
	case "nfs":
		return "PVE::Storage::NFSPlugin"
	}
	return "PVE::Storage::DirPlugin"
}

var (
	reLvmVolname     = regexp.MustCompile(`^(vm|base)-(\d+)-\S+$`)
	reDirLinkedImage = regexp.MustCompile(`^(\d+)/(\S+)/(\d+)/(\S+)$`)
	reDirImage       = regexp.MustCompile(`^(\d+)/(\S+)$`)
	reDirBackup      = regexp.MustCompile(`^backup/([^/]+)$`)
	reVzdumpOwner    = regexp.MustCompile(`^vzdump-(?:openvz|lxc|qemu)-(\d+)-`)
)

// parseVolname is the storage plugin's parse_volname: the volume type and
// the owning guest (0 for none), or Proxmox's error for a name it cannot read.
func parseVolname(st *Storage, volname string) (vtype string, owner int, err error) {
	if !st.fileBased() {
		m := reLvmVolname.FindStringSubmatch(volname)
		if m == nil {
			return "", 0, route.Fail("unable to parse lvm volume name '%s'", volname)
		}
		owner, _ = strconv.Atoi(m[2])
		return "images", owner, nil
	}
	if m := reDirLinkedImage.FindStringSubmatch(volname); m != nil {
		owner, _ = strconv.Atoi(m[3])
		return "images", owner, nil
	}
	if m := reDirImage.FindStringSubmatch(volname); m != nil {
		owner, _ = strconv.Atoi(m[1])
		return "images", owner, nil
	}
	switch {
	case strings.HasPrefix(volname, "iso/") && !strings.Contains(volname[4:], "/") && reISOExt.MatchString(volname):
		return "iso", 0, nil
	case strings.HasPrefix(volname, "vztmpl/") && !strings.Contains(volname[7:], "/") && reVztmplExt.MatchString(volname):
		return "vztmpl", 0, nil
	case strings.HasPrefix(volname, "import/") && !strings.Contains(volname[7:], "/"):
		return "import", 0, nil
	case strings.HasPrefix(volname, "snippets/") && !strings.Contains(volname[9:], "/"):
		return "snippets", 0, nil
	}
	if m := reDirBackup.FindStringSubmatch(volname); m != nil {
		if o := reVzdumpOwner.FindStringSubmatch(m[1]); o != nil {
			owner, _ = strconv.Atoi(o[1])
		}
		return "backup", owner, nil
	}
	return "", 0, route.Fail("unable to parse directory volume name '%s'", volname)
}

// volumeInUse names the running guest that has a volume open (attached),
// for the LVM-thin plugin's lvremove, which refuses an open volume.
func (s *Server) volumeInUse(node, volid string) bool {
	for _, g := range s.state.Guests {
		if !g.Running || g.Node != node {
			continue
		}
		for k, v := range g.Conf {
			switch {
			case g.Type == "qemu" && isQemuDiskKey(k):
				if d, err := parseDrive(k, v); err == nil && d["file"] == volid {
					return true
				}
			case g.Type == "lxc" && isLxcVolumeKey(k):
				if mp, err := parseLxcVolume(k, v); err == nil && mp["volume"] == volid {
					return true
				}
			}
		}
	}
	return false
}

// contentDelete is the storage content DELETE: the volume ID is checked at
// once, the removal (vdisk_free) runs as an imgdel task. As in Proxmox, a
// missing volume is no error, and a volume attached to a guest is removed
// unless the storage refuses (an open LVM volume of a running guest).
func (s *Server) contentDelete(r *route.Request) (any, error) {
	volid, sid, err := realVolumeID(r.Str("storage"), r.Str("volume"))
	if err != nil {
		return nil, err
	}
	st, err := s.storageConfig(sid)
	if err != nil {
		return nil, err
	}
	_, volname, _ := strings.Cut(volid, ":")
	vtype, owner, err := parseVolname(st, volname)
	if err != nil {
		return nil, err
	}
	// Content.pm delete: a backup needs space on the storage and VM.Backup
	// on its guest, anything else Datastore.Allocate on the storage.
	if vtype == "backup" && owner != 0 {
		if err := s.check(r.User, "/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
			return nil, err
		}
		if err := s.check(r.User, "/vms/"+strconv.Itoa(owner), "VM.Backup"); err != nil {
			return nil, err
		}
	} else if err := s.check(r.User, "/storage/"+sid, "Datastore.Allocate"); err != nil {
		return nil, err
	}
	node := r.Str("node")
	id := st.ID
	if owner != 0 {
		id = strconv.Itoa(owner) + "@" + st.ID
	}
	upid := s.startTask(r, node, "imgdel", id, func(tc *taskCtx) error {
		if err := tc.failPoint(); err != nil {
			return err
		}
		if n := s.linkedChildren(volid); n > 0 {
			return route.Fail("base volume '%s' is still in use by linked clones", volname)
		}
		v := s.state.volume(node, volid)
		if st.fileBased() {
			if v != nil && v.Protected {
				return route.Fail("cannot remove protected volume '%s' on '%s'", volname, st.ID)
			}
			if v == nil {
				// Plugin::free_image only warns (not counted as a task warning).
				path := st.contentDir(vtype) + "/" + strings.TrimPrefix(volname, contentPrefix(vtype))
				tc.Log("disk image '%s' does not exist", path)
			}
		} else if v != nil && s.volumeInUse(node, volid) {
			lv := "pve/" + volname
			return route.Fail("lvremove '%s' error:   Logical volume %s in use.", lv, lv)
		}
		if v != nil {
			s.state.removeVolume(node, volid)
		}
		tc.Log("Removed volume '%s'", volid)
		return nil
	})
	delay, ok := r.Int("delay")
	if !ok {
		return upid, nil
	}
	// With delay, the call waits up to that many seconds for the task and
	// answers null on success or fails with the task's exit status.
	t := s.tasks.byUPID[upid]
	if t.Running {
		if wait := s.scale(time.Duration(delay) * time.Second); wait > 0 {
			timer := s.clock.After(wait)
			s.mu.Unlock()
			select {
			case <-t.done:
			case <-timer:
			case <-s.closed:
			}
			s.mu.Lock()
		}
	}
	if t.Running {
		return upid, nil
	}
	if t.ExitStatus == "OK" || strings.HasPrefix(t.ExitStatus, "WARNINGS: ") {
		return nil, nil
	}
	return nil, route.Fail("%s", t.ExitStatus)
}

func (s *Server) contentAlloc(r *route.Request) (any, error) {
	st, err := s.storageConfig(r.Str("storage"))
	if err != nil {
		return nil, err
	}
	vmid, _ := r.Int("vmid")
	sizeStr := r.Str("size")
	size, _ := ParseSize(sizeStr)
	if !strings.HasSuffix(sizeStr, "M") && !strings.HasSuffix(sizeStr, "G") {
		size *= 1024 // KiB by default
	}
	name := r.Str("filename")
	if m := reDiskName.FindStringSubmatch(name); m == nil || m[1] != strconv.Itoa(vmid) {
		return nil, route.Fail("illegal name '%s' - should be 'vm-%d-*'", name, vmid)
	}
	v, err := s.allocImage(r.Str("node"), st.ID, vmid, size, r.Str("format"), strings.TrimSuffix(name, "."+r.Str("format")))
	if err != nil {
		return nil, err
	}
	return v.VolID(), nil
}

// contentVolume is how Content.pm's info and updateattributes begin:
// check_volume_access, then the volume itself.
func (s *Server) contentVolume(r *route.Request) (*Storage, *Volume, error) {
	volid, _, err := realVolumeID(r.Str("storage"), r.Str("volume"))
	if err != nil {
		return nil, nil, err
	}
	if err := s.checkVolumeAccess(r.User, 0, volid, ""); err != nil {
		return nil, nil, err
	}
	return s.findVolume(r)
}
