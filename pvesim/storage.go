package pvesim

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Storage content: listing, info, notes, deletion, download-url and upload.

var (
	reISOExt       = regexp.MustCompile(`(?i)[^/]+\.(?:iso|img)$`)
	reVztmplExt    = regexp.MustCompile(`(?i)[^/]+\.(?:tar|tar\.(?:gz|xz|zst|bz2))$`)
	reUploadImport = regexp.MustCompile(`[a-zA-Z0-9\-.+=_]+\.(ova|qcow2|raw|vmdk)$`)
	reUnsafeChars  = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)
)

// normalizeContentFilename is PVE::Storage::normalize_content_filename.
func normalizeContentFilename(name string) string {
	name = strings.TrimSuffix(name, "\n")
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	return reUnsafeChars.ReplaceAllString(name, "_")
}

// contentDir is where a storage keeps a content type.
func (st *Storage) contentDir(content string) string {
	switch content {
	case "iso":
		return st.Path + "/template/iso"
	case "vztmpl":
		return st.Path + "/template/cache"
	case "import":
		return st.Path + "/import"
	case "snippets":
		return st.Path + "/snippets"
	case "backup":
		return st.Path + "/dump"
	}
	return st.Path + "/images"
}

func contentPrefix(content string) string {
	switch content {
	case "iso":
		return "iso/"
	case "vztmpl":
		return "vztmpl/"
	case "import":
		return "import/"
	case "snippets":
		return "snippets/"
	case "backup":
		return "backup/"
	}
	return ""
}

func (s *Server) volumePath(st *Storage, v *Volume) string {
	if !st.fileBased() {
		return "/dev/pve/" + v.Name
	}
	if v.Content == "images" || v.Content == "rootdir" {
		return st.Path + "/images/" + v.Name
	}
	return st.contentDir(v.Content) + "/" + strings.TrimPrefix(v.Name, contentPrefix(v.Content))
}

func init() {
	registerRoutes(func(s *Server) {
		ns := func(extra ...*Param) *Params {
			return NewParams(append([]*Param{pNode(), Str("storage").Fmt("pve-storage-id")}, extra...)...)
		}
		volParams := func(extra ...*Param) *Params {
			return NewParams(append([]*Param{pNode(), Str("storage").Opt().Fmt("pve-storage-id"), Str("volume")}, extra...)...)
		}
		checksum := []*Param{
			Str("checksum").Opt().Requires("checksum-algorithm"),
			Str("checksum-algorithm").Opt().Enum("md5", "sha1", "sha224", "sha256", "sha384", "sha512").Requires("checksum"),
		}
		s.Handle(&Route{Method: "GET", Path: "/storage", Perm: PermUser(), Params: NewParams(Str("type").Opt().Enum("btrfs", "cephfs", "cifs", "dir", "esxi", "iscsi", "iscsidirect", "lvm", "lvmthin", "nfs", "pbs", "rbd", "zfs", "zfspool")),
			Handler: s.storageConfigList})
		s.Handle(&Route{Method: "GET", Path: "/storage/{storage}", Perm: PermCheck("/storage/{storage}", "Datastore.Allocate"), Params: NewParams(Str("storage").Fmt("pve-storage-id")),
			Handler: func(r *Request) (any, error) {
				st, err := s.storageConfig(r.Str("storage"))
				if err != nil {
					return nil, err
				}
				return storageConfigJSON(st), nil
			}})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/storage", Perm: PermUser(), ProxyTo: "node",
			Params: NewParams(pNode(),
				Str("content").Opt().Fmt("pve-storage-content-list"),
				Bool("enabled").Opt().Default("0"),
				Bool("format").Opt().Default("0"),
				Str("storage").Opt().Fmt("pve-storage-id"),
				Str("target").Opt().Fmt("pve-node"),
			),
			Handler: s.nodeStorageList})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/storage/{storage}", Perm: PermAny("/storage/{storage}", "Datastore.Audit", "Datastore.AllocateSpace"), ProxyTo: "node", Params: ns(),
			Handler: func(r *Request) (any, error) {
				if _, err := s.storageConfig(r.Str("storage")); err != nil {
					return nil, err
				}
				return subdirs("content", "download-url", "file-restore", "import-metadata", "prunebackups", "rrd", "rrddata", "status", "upload"), nil
			}})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/storage/{storage}/status", Perm: PermAny("/storage/{storage}", "Datastore.Audit", "Datastore.AllocateSpace"), ProxyTo: "node", Params: ns(),
			Handler: func(r *Request) (any, error) {
				st, err := s.storageConfig(r.Str("storage"))
				if err != nil {
					return nil, err
				}
				return s.storageStatusJSON(r.Str("node"), st), nil
			}})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/storage/{storage}/content", Perm: PermAny("/storage/{storage}", "Datastore.Audit", "Datastore.AllocateSpace"), ProxyTo: "node",
			Params: ns(Str("content").Opt().Fmt("pve-storage-content"), pVMID().Opt()), Handler: s.contentList})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/storage/{storage}/content", Perm: PermCheck("/storage/{storage}", "Datastore.AllocateSpace"), ProxyTo: "node",
			Params: ns(Str("filename"), Str("format").Opt().Enum("raw", "qcow2", "subvol", "vmdk").Requires("size"),
				Str("size").Pattern(`\d+[MG]?`), pVMID()),
			Handler: s.contentAlloc})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/storage/{storage}/content/{volume*}", Perm: PermUser(), ProxyTo: "node",
			Params: volParams(), Handler: s.contentInfo})
		s.Handle(&Route{Method: "PUT", Path: "/nodes/{node}/storage/{storage}/content/{volume*}", Perm: PermUser(), ProxyTo: "node",
			Params: volParams(Str("notes").Opt(), Bool("protected").Opt()), Handler: s.contentUpdate})
		s.Handle(&Route{Method: "DELETE", Path: "/nodes/{node}/storage/{storage}/content/{volume*}", Perm: PermUser(), ProxyTo: "node",
			Params: volParams(Int("delay").Opt().Min(1).Max(30)), Handler: s.contentDelete})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/storage/{storage}/download-url", Perm: PermAnd(PermCheck("/storage/{storage}", "Datastore.AllocateTemplate"), PermOr(PermCheck("/", "Sys.Audit", "Sys.Modify"), PermCheck("/nodes/{node}", "Sys.AccessNetwork"))), ProxyTo: "node",
			Params: ns(append(checksum,
				Str("compression").Opt(),
				Str("content").Enum("iso", "vztmpl", "import").Fmt("pve-storage-content"),
				Str("filename").MaxLen(255),
				Str("url").Pattern(`https?://.*`),
				Bool("verify-certificates").Opt().Default("1"),
			)...),
			Handler: s.downloadURL})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/storage/{storage}/upload", Perm: PermCheck("/storage/{storage}", "Datastore.AllocateTemplate"), ProxyTo: "node",
			Params: ns(append(checksum,
				Str("content").Enum("iso", "vztmpl", "import").Fmt("pve-storage-content"),
				Str("filename").MaxLen(255),
				Str("tmpfilename").Opt().Pattern(`/var/tmp/pveupload-[0-9a-f]+`),
			)...),
			Handler: s.upload})
	})
}

func storageConfigJSON(st *Storage) map[string]any {
	m := map[string]any{"storage": st.ID, "type": st.Type, "content": strings.Join(st.Content, ","), "digest": "0000000000000000000000000000000000000000"}
	if st.Path != "" {
		m["path"] = st.Path
	}
	if st.Shared {
		m["shared"] = 1
	}
	if st.Type == "lvmthin" {
		m["thinpool"] = "data"
		m["vgname"] = "pve"
	}
	if st.Type == "nfs" {
		m["server"] = "192.0.2.200"
		m["export"] = "/export/pve"
	}
	return m
}

func (s *Server) storageConfigList(r *Request) (any, error) {
	out := []map[string]any{}
	for _, st := range s.state.Storages {
		if t := r.Str("type"); t != "" && st.Type != t {
			continue
		}
		// Config.pm index lists what the caller may audit or allocate on.
		if s.checkAny(r.User, "/storage/"+st.ID, "Datastore.Audit", "Datastore.AllocateSpace") != nil {
			continue
		}
		out = append(out, storageConfigJSON(st))
	}
	return out, nil
}

func (s *Server) storageStatusJSON(node string, st *Storage) map[string]any {
	used := s.state.usedBytes(node, st.ID)
	shared, enabled := 0, 1
	if st.Shared {
		shared = 1
	}
	if st.Disable {
		enabled = 0
	}
	return map[string]any{
		"storage": st.ID, "type": st.Type, "content": strings.Join(st.Content, ","), "active": enabled, "enabled": enabled,
		"shared": shared, "total": st.Total, "used": used, "avail": st.Total - used,
		"used_fraction": float64(used) / float64(st.Total),
	}
}

func (s *Server) nodeStorageList(r *Request) (any, error) {
	node := r.Str("node")
	want := splitList(r.Str("content"))
	out := []map[string]any{}
	for _, st := range s.state.Storages {
		if id := r.Str("storage"); id != "" && st.ID != id {
			continue
		}
		// storage_info lists only storages available on the node.
		if !st.availableOn(node) {
			continue
		}
		// Status.pm index lists what the caller may audit or allocate on.
		if s.checkAny(r.User, "/storage/"+st.ID, "Datastore.Audit", "Datastore.AllocateSpace") != nil {
			continue
		}
		ok := len(want) == 0
		for _, c := range want {
			ok = ok || st.allows(c)
		}
		if !ok {
			continue
		}
		out = append(out, s.storageStatusJSON(node, st))
	}
	return out, nil
}

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
	if v.Used > 0 {
		m["used"] = v.Used
	} else if v.Content == "images" || v.Content == "rootdir" {
		m["used"] = v.Size
	}
	if v.Parent != "" {
		m["parent"] = v.Parent
	}
	return m
}

func (s *Server) contentList(r *Request) (any, error) {
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
			return "", "", ParamErr("volume", fmt.Sprintf("unable to parse volume ID '%s'\n", volume))
		}
		if storage != "" && sid != storage {
			return "", "", ParamErr("volume", fmt.Sprintf("storage ID mismatch (%s != %s)\n", sid, storage))
		}
		return volume, sid, nil
	}
	if storage == "" {
		return "", "", ParamErr("volume", "no storage specified - incomplete volume ID")
	}
	return storage + ":" + volume, storage, nil
}

func (s *Server) findVolume(r *Request) (*Storage, *Volume, error) {
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
			return st, nil, Fail("volume '%s' does not exist", volid)
		}
		return st, nil, Fail("no such logical volume pve/%s", name)
	}
	return st, v, nil
}

func (s *Server) contentInfo(r *Request) (any, error) {
	if err := s.contentVolumeAccess(r); err != nil {
		return nil, err
	}
	st, v, err := s.findVolume(r)
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

func (s *Server) contentUpdate(r *Request) (any, error) {
	if err := s.contentVolumeAccess(r); err != nil {
		return nil, err
	}
	st, v, err := s.findVolume(r)
	if err != nil {
		return nil, err
	}
	if r.Has("notes") {
		// update_volume_attribute: Plugin.pm's update_volume_notes dies
		// (a die without newline, so Perl adds where), DirPlugin.pm's (dir,
		// nfs, cifs, cephfs) refuses anything but backups.
		if !st.fileBased() {
			return nil, Fail("volume notes are not supported for %s at /usr/share/perl5/PVE/Storage/Plugin.pm line 1300.", pluginClass(st.Type))
		}
		if v.Content != "backup" {
			return nil, Fail("only backups can have notes")
		}
		v.Notes = r.Str("notes")
	}
	if r.Has("protected") {
		// update_volume_attribute: the directory plugins protect backups
		// only; the others know no protection.
		if !st.fileBased() {
			return nil, Fail("attribute 'protected' is not supported for storage type '%s'", st.Type)
		}
		if v.Content != "backup" {
			return nil, Fail("only backups support attribute 'protected'")
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
			return "", 0, Fail("unable to parse lvm volume name '%s'", volname)
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
	return "", 0, Fail("unable to parse directory volume name '%s'", volname)
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
func (s *Server) contentDelete(r *Request) (any, error) {
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
			return Fail("base volume '%s' is still in use by linked clones", volname)
		}
		v := s.state.volume(node, volid)
		if st.fileBased() {
			if v != nil && v.Protected {
				return Fail("cannot remove protected volume '%s' on '%s'", volname, st.ID)
			}
			if v == nil {
				// Plugin::free_image only warns (not counted as a task warning).
				path := st.contentDir(vtype) + "/" + strings.TrimPrefix(volname, contentPrefix(vtype))
				tc.Log("disk image '%s' does not exist", path)
			}
		} else if v != nil && s.volumeInUse(node, volid) {
			lv := "pve/" + volname
			return Fail("lvremove '%s' error:   Logical volume %s in use.", lv, lv)
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
	return nil, Fail("%s", t.ExitStatus)
}

func (s *Server) contentAlloc(r *Request) (any, error) {
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
		return nil, Fail("illegal name '%s' - should be 'vm-%d-*'", name, vmid)
	}
	v, err := s.allocImage(r.Str("node"), st.ID, vmid, size, r.Str("format"), strings.TrimSuffix(name, "."+r.Str("format")))
	if err != nil {
		return nil, err
	}
	return v.VolID(), nil
}

// checkContentFilename applies download-url's and upload's extension rules.
func checkContentFilename(content, filename string) (string, error) {
	switch content {
	case "iso":
		if !reISOExt.MatchString(filename) {
			return "", ParamErr("filename", "wrong file extension")
		}
		return "", nil
	case "vztmpl":
		if !reVztmplExt.MatchString(filename) {
			return "", ParamErr("filename", "wrong file extension")
		}
		return "", nil
	case "import":
		m := reUploadImport.FindStringSubmatch(filename)
		if m == nil {
			return "", ParamErr("filename", "invalid filename or wrong extension")
		}
		return m[1], nil
	}
	return "", ParamErr("content", fmt.Sprintf("upload content-type '%s' is not allowed", content))
}

// ChecksumHash returns a new hash for one of Proxmox's checksum-algorithm
// values (md5, sha1, sha224, sha256, sha384, sha512), or nil for another
// name. Callers that serve files to the simulator use it to compute the
// checksums download-url will verify.
func ChecksumHash(alg string) hash.Hash {
	switch alg {
	case "md5":
		return md5.New()
	case "sha1":
		return sha1.New()
	case "sha224":
		return sha256.New224()
	case "sha256":
		return sha256.New()
	case "sha384":
		return sha512.New384()
	case "sha512":
		return sha512.New()
	}
	return nil
}

// fileCheck inspects the start of a downloaded or uploaded import image
// the way pve-storage's file_size_info (Plugin.pm) does with `qemu-img info
// -f FORMAT`, FORMAT being what the file name implies: a qcow2 must start
// with the qcow2 magic, a vmdk with a sparse extent header ("KDMV"; a
// descriptor's extents are other files, which an untrusted image may not
// have), and any file is raw.
type fileCheck struct {
	head []byte
}

func (f *fileCheck) Write(p []byte) (int, error) {
	if need := 512 - len(f.head); need > 0 {
		if len(p) < need {
			need = len(p)
		}
		f.head = append(f.head, p[:need]...)
	}
	return len(p), nil
}

// qcow2VirtualSize reads the size field of a qcow2 header (8 bytes at offset 24, big-endian).
func qcow2VirtualSize(head []byte) (int64, bool) {
	if len(head) < 32 || string(head[:4]) != "QFI\xfb" {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(head[24:32])), true
}

// vmdkVirtualSize reads the capacity of a VMDK sparse extent header (8
// bytes at offset 12, little-endian, in 512-byte sectors).
func vmdkVirtualSize(head []byte) (int64, bool) {
	if len(head) < 20 || string(head[:4]) != "KDMV" {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(head[12:20])) * 512, true
}

// errQemuImgInfo is file_size_info's error for an untrusted file qemu-img
// cannot read in the given format.
const errQemuImgInfo = "failed to query file information with qemu-img"

func (f *fileCheck) verify(format string, fileSize int64) (virtual int64, err error) {
	var ok bool
	switch format {
	case "qcow2":
		virtual, ok = qcow2VirtualSize(f.head)
	case "vmdk":
		virtual, ok = vmdkVirtualSize(f.head)
	default:
		virtual, ok = fileSize, true
	}
	if !ok {
		return 0, Fail("%s", errQemuImgInfo)
	}
	return virtual, nil
}

// storedFile describes where a download or upload lands.
type storedFile struct {
	st       *Storage
	node     string
	content  string
	filename string
	format   string // image format for import content
}

func (f storedFile) volname() string { return contentPrefix(f.content) + f.filename }
func (f storedFile) dest() string    { return f.st.contentDir(f.content) + "/" + f.filename }

func (s *Server) prepareStoredFile(r *Request, allowed func(*Storage) error) (storedFile, error) {
	// upload and download_url (API2/Storage/Status.pm) start with
	// storage_check_enabled on the node.
	st, err := s.storageCheckEnabled(r.Str("storage"), r.Str("node"))
	if err != nil {
		return storedFile{}, err
	}
	if st.Path == "" {
		return storedFile{}, Fail("can't upload to storage type '%s', not a file based storage!", st.Type)
	}
	content := r.Str("content")
	if err := allowed(st); err != nil {
		return storedFile{}, err
	}
	filename := normalizeContentFilename(r.Str("filename"))
	imgFormat, err := checkContentFilename(content, filename)
	if err != nil {
		return storedFile{}, err
	}
	return storedFile{st: st, node: r.Str("node"), content: content, filename: filename, format: imgFormat}, nil
}

func (s *Server) storeVolume(f storedFile, size, used int64) {
	format := f.format
	if format == "" {
		format = formatFromName(f.filename)
		if f.content == "vztmpl" {
			format = strings.TrimPrefix(f.filename[strings.Index(strings.ToLower(f.filename), ".tar"):], ".")
		}
	}
	s.state.addVolume(&Volume{Node: f.node, Storage: f.st.ID, Name: f.volname(), Content: f.content, Format: format,
		Size: size, Used: used, CTime: s.clock.Now().Unix()})
}

func (s *Server) downloadURL(r *Request) (any, error) {
	f, err := s.prepareStoredFile(r, func(st *Storage) error {
		if !st.allows(r.Str("content")) {
			return Fail("storage '%s' is not configured for content-type '%s'", st.ID, r.Str("content"))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if c := r.Str("compression"); c != "" && f.content != "iso" {
		// Proxmox fails this inside the worker.
		return s.startTask(r, f.node, "download", encodeText(f.filename), func(*taskCtx) error {
			return Fail("decompression not supported for %s", f.content)
		}), nil
	}
	url, alg, want := r.Str("url"), r.Str("checksum-algorithm"), strings.ToLower(r.Str("checksum"))
	verify := r.BoolOr("verify-certificates", true)
	return s.startTask(r, f.node, "download", encodeText(f.filename), func(tc *taskCtx) error {
		dest := f.dest()
		tc.Log("downloading %s to %s", url, dest)
		if err := tc.failPoint(); err != nil {
			return Fail("download failed: %s", strings.TrimRight(asAPIError(err).Message, "\n"))
		}
		if existing := s.state.volume(f.node, f.st.ID+":"+f.volname()); existing != nil {
			if alg == "" {
				return Fail("refusing to override existing file '%s'", dest)
			}
			tc.Log("calculating checksum of existing file...")
			if existing.Checksums[alg] == want {
				tc.Log("OK, got correct file already, no need to download")
				return nil
			}
			return Fail("checksum mismatch: got '%s' != expect '%s', aborting", existing.Checksums[alg], want)
		}
		var (
			n       int64
			sums    map[string]string
			check   fileCheck
			dlErr   error
			started = time.Now()
		)
		tc.unlocked(func() {
			n, sums, dlErr = fetchURL(url, verify, s.opts.AllowRemoteDownloads, &check, func(done, total int64) {
				s.mu.Lock()
				tc.Log("%s", wgetProgress(done, total, time.Since(started)))
				s.mu.Unlock()
			})
		})
		if dlErr != nil {
			return Fail("download failed: %v", dlErr)
		}
		if alg != "" {
			got := sums[alg]
			if got != want {
				tc.Log("calculating checksum...")
				return Fail("checksum mismatch: got '%s' != expect '%s'", got, want)
			}
			tc.Log("calculating checksum...OK, checksum verified")
		}
		virtual, err := check.verify(f.format, n)
		if err != nil {
			// download_file_from_url's assert_file_validity wrapper.
			return Fail("failed to verify file: %s", errQemuImgInfo)
		}
		s.storeVolume(f, virtual, n)
		if v := s.state.volume(f.node, f.st.ID+":"+f.volname()); v != nil {
			v.Checksums = sums
		}
		tc.Log("download of '%s' to '%s' finished", url, dest)
		return nil
	}), nil
}

// fetchURL downloads url, hashing with every algorithm and reporting
// progress; the content itself is not kept.
func fetchURL(url string, verify, anyAddress bool, check io.Writer, progress func(done, total int64)) (int64, map[string]string, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: !verify} //nolint:gosec // the API's verify-certificates=0
	client := &http.Client{Transport: tr, Timeout: 30 * time.Minute}
	if !anyAddress {
		if err := loopbackOnly(url); err != nil {
			return 0, nil, err
		}
		// Every connection, redirects included, must end on loopback.
		dialer := &net.Dialer{Timeout: 30 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
				return fmt.Errorf("pvesim: refusing to connect to %s: downloads are limited to loopback addresses", address)
			}
			return nil
		}}
		tr.DialContext = dialer.DialContext
		tr.Proxy = nil
		client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return loopbackOnly(req.URL.String())
		}
	}
	resp, err := client.Get(url)
	if err != nil {
		var refused *remoteDownloadError
		if errors.As(err, &refused) {
			return 0, nil, refused
		}
		return 0, nil, fmt.Errorf("command 'wget --progress=dot:giga -O <tmpfile> %s' failed: exit code 4", url)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, nil, fmt.Errorf("command 'wget --progress=dot:giga -O <tmpfile> %s' failed: exit code 8", url)
	}
	algs := []string{"md5", "sha1", "sha224", "sha256", "sha384", "sha512"}
	hashes := map[string]hash.Hash{}
	writers := []io.Writer{check}
	for _, a := range algs {
		hashes[a] = ChecksumHash(a)
		writers = append(writers, hashes[a])
	}
	w := io.MultiWriter(writers...)
	buf := make([]byte, 256<<10)
	var n, lastReport int64
	const step = 32 << 20
	for {
		k, rerr := resp.Body.Read(buf)
		if k > 0 {
			w.Write(buf[:k])
			n += int64(k)
			if n-lastReport >= step {
				lastReport = n
				progress(n, resp.ContentLength)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return n, nil, fmt.Errorf("command 'wget --progress=dot:giga -O <tmpfile> %s' failed: exit code 4", url)
		}
	}
	progress(n, resp.ContentLength)
	sums := map[string]string{}
	for a, h := range hashes {
		sums[a] = hex.EncodeToString(h.Sum(nil))
	}
	return n, sums, nil
}

// remoteDownloadError is a download the simulator refused to make because
// its address is not on loopback (see Options.AllowRemoteDownloads).
type remoteDownloadError struct{ url string }

func (e *remoteDownloadError) Error() string {
	return fmt.Sprintf("pvesim downloads only from loopback addresses (127.0.0.0/8, ::1, localhost), not %s; "+
		"serve the file locally or start the simulator with --allow-remote-downloads", e.url)
}

// loopbackOnly refuses a URL whose host is not a loopback address, without
// resolving any name: only IP literals and "localhost" pass.
func loopbackOnly(raw string) error {
	u, err := neturl.Parse(raw)
	if err != nil {
		return &remoteDownloadError{url: raw}
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return &remoteDownloadError{url: raw}
}

// wgetProgress is one line of wget --progress=dot:giga.
func wgetProgress(done, total int64, elapsed time.Duration) string {
	pct := ""
	if total > 0 {
		pct = fmt.Sprintf("%3d%%", done*100/total)
	}
	rate := float64(done) / (1 << 20) / max(elapsed.Seconds(), 0.001)
	return fmt.Sprintf("%8dK ........ ........ ........ ........ %s %.1fM", done>>10, pct, rate)
}

// encodeText is PVE::Tools::encode_text, used for task ids.
func encodeText(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c < 0x20 || c > 0x7e || c == ':' || c == '%' {
			fmt.Fprintf(&b, "%%%02x", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func (s *Server) upload(r *Request) (any, error) {
	if r.upload == nil {
		return nil, Fail("upload without file")
	}
	content := r.Str("content")
	if content != "iso" && content != "vztmpl" && content != "import" {
		return nil, ParamErr("content", fmt.Sprintf("upload content type '%s' not allowed", content))
	}
	f, err := s.prepareStoredFile(r, func(st *Storage) error {
		if !st.allows(content) {
			return Fail("storage '%s' does not support '%s' content", st.ID, content)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	alg, want := r.Str("checksum-algorithm"), strings.ToLower(r.Str("checksum"))
	// The request's temporary file goes away when the request ends: read it now.
	tmp, err := os.Open(r.upload.path)
	if err != nil {
		return nil, err
	}
	var check fileCheck
	hashes := map[string]hash.Hash{}
	ws := []io.Writer{&check}
	for _, a := range []string{"md5", "sha1", "sha224", "sha256", "sha384", "sha512"} {
		hashes[a] = ChecksumHash(a)
		ws = append(ws, hashes[a])
	}
	n, err := io.Copy(io.MultiWriter(ws...), tmp)
	tmp.Close()
	if err != nil {
		return nil, err
	}
	sums := map[string]string{}
	for a, h := range hashes {
		sums[a] = hex.EncodeToString(h.Sum(nil))
	}
	tmpName := fmt.Sprintf("/var/tmp/pveupload-%x", sums["md5"][:16])
	return s.startTask(r, f.node, "imgcopy", "", func(tc *taskCtx) error {
		tc.Log("starting file import from: %s", tmpName)
		if err := tc.failPoint(); err != nil {
			return err
		}
		if alg != "" {
			if sums[alg] != want {
				tc.Log("calculating checksum...")
				return Fail("checksum mismatch: got '%s' != expect '%s'", sums[alg], want)
			}
			tc.Log("calculating checksum...OK, checksum verified")
		}
		virtual, err := check.verify(f.format, n)
		if err != nil {
			return err
		}
		tc.Log("target node: %s", f.node)
		tc.Log("target file: %s", f.dest())
		tc.Log("file size is: %d", n)
		tc.Log("command: cp -- %s %s", tmpName, f.dest())
		s.storeVolume(f, virtual, n)
		if v := s.state.volume(f.node, f.st.ID+":"+f.volname()); v != nil {
			v.Checksums = sums
		}
		tc.Log("finished file import successfully")
		return nil
	}), nil
}

// contentVolumeAccess is the check_volume_access Content.pm's info and
// updateattributes make before reading the volume.
func (s *Server) contentVolumeAccess(r *Request) error {
	volid, _, err := realVolumeID(r.Str("storage"), r.Str("volume"))
	if err != nil {
		return err
	}
	return s.checkVolumeAccess(r.User, 0, volid, "")
}
