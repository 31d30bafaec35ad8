package pvesim

import (
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// The privilege checks guest methods make inside their handlers, after the
// route's own check (qemu-server PVE/API2/Qemu.pm, pve-container
// PVE/LXC.pm and API2/LXC.pm, pve-storage PVE/Storage.pm,
// pve-guest-common PVE/GuestHelpers.pm). Only root@pam skips them: a token
// of root@pam passes the privilege checks but not the root-only rules.

// checkVolumeAccess is PVE::Storage::check_volume_access.
func (s *Server) checkVolumeAccess(user string, vmid int, volid, wantType string) error {
	sid, volname, ok := strings.Cut(volid, ":")
	if !ok {
		if user != "root@pam" {
			return route.Fail("Only root can pass arbitrary filesystem paths.")
		}
		return nil
	}
	st, err := s.storageConfig(sid)
	if err != nil {
		return err
	}
	vtype, owner, err := parseVolname(st, volname)
	if err != nil {
		return err
	}
	if wantType != "" && vtype != wantType && (wantType != "rootdir" || vtype != "images") {
		return route.Fail("unable to use volume %s - content type needs to be '%s'", volid, wantType)
	}
	if s.can(user, "/storage/"+sid, "Datastore.Allocate") {
		return nil
	}
	switch {
	case vtype == "iso" || vtype == "vztmpl" || vtype == "import":
		// Templates and ISOs can be sensitive: at least read access.
		return s.checkAny(user, "/storage/"+sid, "Datastore.AllocateSpace", "Datastore.Audit")
	case owner != 0 && vmid != 0 && owner == vmid:
		return nil
	case vtype == "backup" && owner != 0:
		if err := s.check(user, "/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
			return err
		}
		return s.check(user, "/vms/"+strconv.Itoa(owner), "VM.Backup")
	case (vtype == "images" || vtype == "rootdir") && owner != 0:
		if err := s.check(user, "/storage/"+sid, "Datastore.Audit"); err != nil {
			return err
		}
		return s.check(user, "/vms/"+strconv.Itoa(owner), "VM.Config.Disk")
	}
	return route.Fail("missing privileges to access %s", volid)
}

// checkVnetAccess is GuestHelpers::check_vnet_access: SDN.Use on the
// bridge's (or VNet's) path in its zone, or on each VLAN used.
func (s *Server) checkVnetAccess(user, bridge, tag, trunks string) error {
	zone := "localnetwork"
	if v, ok := s.sdn().Vnets[bridge]; ok && v["zone"] != "" {
		zone = v["zone"]
	}
	path := "/sdn/zones/" + zone + "/" + bridge
	if tag != "" {
		if err := s.check(user, path+"/"+tag, "SDN.Use"); err != nil {
			return err
		}
	}
	if trunks != "" {
		for _, t := range trunkTags(trunks) {
			if err := s.check(user, path+"/"+strconv.Itoa(t), "SDN.Use"); err != nil {
				return err
			}
		}
	}
	if tag == "" && trunks == "" {
		return s.check(user, path, "SDN.Use")
	}
	return nil
}

// trunkTags is get_tags_from_trunk: "10;20-22" is 10, 20, 21, 22, sorted
// as Perl sorts hash keys (as strings).
func trunkTags(trunks string) []int {
	seen := map[string]bool{}
	for _, part := range strings.Split(trunks, ";") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil {
				continue
			}
		}
		for i := a; i <= b && i-a < 4096; i++ {
			seen[strconv.Itoa(i)] = true
		}
	}
	var out []int
	for _, k := range sortedKeys(seen) {
		n, _ := strconv.Atoi(k)
		out = append(out, n)
	}
	return out
}

// qemuBridgeAccess is QemuServer::check_bridge_access for the netN keys.
func (s *Server) qemuBridgeAccess(user string, conf map[string]string) error {
	if user == "root@pam" {
		return nil
	}
	for _, k := range sortedKeys(conf) {
		if _, ok := route.IndexOf(k, "net"); !ok {
			continue
		}
		n, err := parsePropString(qemuNetFormat, conf[k], "")
		if err != nil || n["bridge"] == "" {
			continue
		}
		if err := s.checkVnetAccess(user, n["bridge"], n["tag"], n["trunks"]); err != nil {
			return err
		}
	}
	return nil
}

// lxcBridgeAccess is PVE::LXC::check_bridge_access for one netN value.
func (s *Server) lxcBridgeAccess(user, raw string) error {
	if user == "root@pam" {
		return nil
	}
	n, err := parsePropString(lxcNetFormat, raw, "")
	if err != nil || n["bridge"] == "" {
		return nil
	}
	return s.checkVnetAccess(user, n["bridge"], n["tag"], n["trunks"])
}

// Qemu.pm's option groups for check_vm_modify_config_perm.
var (
	qemuCPUOptions    = setOf("cores", "cpu", "runningcpu", "cpulimit", "cpuunits", "numa", "smp", "sockets", "vcpus")
	qemuMemoryOptions = setOf("memory", "balloon", "shares", "allow-ksm")
	qemuHWTypeOptions = setOf("acpi", "hotplug", "kvm", "machine", "runningmachine", "scsihw", "smbios1", "tablet", "vga", "watchdog", "audio0", "rng0")
	qemuGeneralOpts   = setOf("agent", "autostart", "bios", "description", "keyboard", "localtime", "migrate_downtime", "migrate_speed",
		"name", "onboot", "ostype", "protection", "reboot", "startdate", "startup", "tdf", "template")
	qemuDiskOptions       = setOf("boot", "bootdisk", "vmstatestorage")
	qemuCloudinitOptions  = setOf("cicustom", "cipassword", "citype", "ciuser", "ciupgrade", "nameserver", "searchdomain", "sshkeys")
	reQemuValueDependents = []string{"unused", "serial", "usb", "hostpci", "virtiofs"}
)

func setOf(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// qemuModifyConfigPerm is Qemu.pm's check_vm_modify_config_perm: the
// privilege each key needs; drives and devices are checked elsewhere, keys
// outside every group are for root@pam only.
func (s *Server) qemuModifyConfigPerm(user string, vmid int, keys []string) error {
	if user == "root@pam" {
		return nil
	}
	vm := "/vms/" + strconv.Itoa(vmid)
	for _, opt := range keys {
		if isQemuDiskKey(opt) || opt == "cdrom" || opt == "tags" {
			continue
		}
		if base, ok := splitIndexed(opt); ok && slices.Contains(reQemuValueDependents, base) {
			continue
		}
		base, _ := splitIndexed(opt)
		var err error
		switch {
		case qemuCPUOptions[opt] || base == "numa":
			err = s.check(user, vm, "VM.Config.CPU")
		case qemuMemoryOptions[opt]:
			err = s.check(user, vm, "VM.Config.Memory")
		case qemuHWTypeOptions[opt]:
			err = s.check(user, vm, "VM.Config.HWType")
		case qemuGeneralOpts[opt]:
			err = s.check(user, vm, "VM.Config.Options")
			if err == nil && opt == "startup" {
				err = s.check(user, "/", "Sys.Modify")
			}
		case opt == "freeze":
			err = s.check(user, vm, "VM.PowerMgmt")
		case qemuDiskOptions[opt]:
			err = s.check(user, vm, "VM.Config.Disk")
		case base == "net" || opt == "running-nets-host-mtu":
			err = s.check(user, vm, "VM.Config.Network")
		case qemuCloudinitOptions[opt] || base == "ipconfig":
			err = s.checkAny(user, vm, "VM.Config.Cloudinit", "VM.Config.Network")
		case opt == "vmstate":
			err = s.check(user, vm, "VM.Config.Disk", "VM.PowerMgmt")
		default:
			return route.Fail("only root can set '%s' config", opt)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// splitIndexed splits "net0" into "net"; ok is false without an index.
func splitIndexed(key string) (string, bool) {
	i := len(key)
	for i > 0 && key[i-1] >= '0' && key[i-1] <= '9' {
		i--
	}
	if i == len(key) || i == 0 {
		return key, false
	}
	return key[:i], true
}

// qemuStorageAccess is Qemu.pm's check_storage_access: per drive, space on
// the storage a new disk is allocated on, or access to the volume used;
// the source of an import; unused volumes; the vmstate storage.
func (s *Server) qemuStorageAccess(user string, vmid int, settings map[string]string, defStorage string) error {
	if user == "root@pam" {
		return nil
	}
	for _, k := range sortedKeys(settings) {
		if !isQemuDiskKey(k) {
			continue
		}
		d, err := parseDrive(k, settings[k])
		if err != nil {
			continue
		}
		volid := d["file"]
		sid, volname, hasStorage := strings.Cut(volid, ":")
		switch {
		case volid == "" || volid == "none" || volid == "cloudinit" || volname == "cloudinit" || driveIsCloudinit(d):
		case driveIsCdrom(d) && volid == "cdrom":
			err = s.check(user, "/", "Sys.Console")
		case !driveIsCdrom(d) && reNewDisk.MatchString(volid):
			if !hasStorage {
				sid = defStorage
			}
			if sid == "" {
				return route.Fail("no storage ID specified (and no default storage)")
			}
			err = s.check(user, "/storage/"+sid, "Datastore.AllocateSpace")
		default:
			err = s.checkVolumeAccess(user, vmid, volid, "")
		}
		if err != nil {
			return err
		}
		if src := d["import-from"]; src != "" {
			if srcSid, srcName, ok := strings.Cut(src, ":"); ok {
				if st, e := s.storageConfig(srcSid); e == nil {
					if _, owner, e := parseVolname(st, srcName); e == nil && owner != 0 {
						if err := s.check(user, "/vms/"+strconv.Itoa(owner), "VM.Clone"); err != nil {
							return err
						}
						continue
					}
				}
			}
			if err := s.checkVolumeAccess(user, vmid, src, ""); err != nil {
				return err
			}
		}
	}
	for _, k := range sortedKeys(settings) {
		if base, ok := splitIndexed(k); !ok || base != "unused" {
			continue
		}
		d, err := parseDrive(k, settings[k])
		if err != nil || d["file"] == "" {
			continue
		}
		if err := s.checkVolumeAccess(user, vmid, d["file"], "images"); err != nil {
			return err
		}
	}
	if v, ok := settings["vmstatestorage"]; ok {
		return s.check(user, "/storage/"+v, "Datastore.AllocateSpace")
	}
	return nil
}

// qemuDrivePerm is update_vm's check_drive_perms: the privilege a drive
// change needs by its kind.
func (s *Server) qemuDrivePerm(user string, vmid int, key, val string) error {
	if user == "root@pam" {
		return nil
	}
	vm := "/vms/" + strconv.Itoa(vmid)
	d, err := parseDrive(key, val)
	if err != nil {
		return nil
	}
	switch {
	case driveIsCloudinit(d):
		return s.check(user, vm, "VM.Config.Cloudinit", "VM.Config.CDROM")
	case driveIsCdrom(d) || d["file"] == "cdrom" || d["file"] == "none":
		return s.check(user, vm, "VM.Config.CDROM")
	}
	return s.check(user, vm, "VM.Config.Disk")
}

// qemuCreateAccess is create_vm's first checks: space on the default
// storage, Sys.Console for an HA-managed guest, VM.PowerMgmt to start it,
// and VM.Allocate on the new VMID or its pool.
func (s *Server) qemuCreateAccess(r *route.Request, vmid int) error {
	vm := "/vms/" + strconv.Itoa(vmid)
	if r.Has("storage") {
		if err := s.check(r.User, "/storage/"+r.Str("storage"), "Datastore.AllocateSpace"); err != nil {
			return err
		}
	}
	if r.Bool("ha-managed") {
		if err := s.check(r.User, "/", "Sys.Console"); err != nil {
			return err
		}
	}
	pool := r.Str("pool")
	if r.Bool("start") && !(pool != "" && s.can(r.User, "/pool/"+pool, "VM.PowerMgmt")) {
		if err := s.check(r.User, vm, "VM.PowerMgmt"); err != nil {
			return err
		}
	}
	if !s.can(r.User, vm, "VM.Allocate") && !(pool != "" && s.can(r.User, "/pool/"+pool, "VM.Allocate")) {
		return permErr("")
	}
	return nil
}

// qemuUpdateValuePerms is the part of update_vm_api's updatefn that
// depends on the values: the old and new drive of each changed slot
// (CD-ROM, cloud-init or disk), unused disks removed, tags, and the bridge
// of a NIC being replaced or removed.
func (s *Server) qemuUpdateValuePerms(user string, g *Guest, params map[string]string, deletes []string) error {
	if user == "root@pam" {
		return nil
	}
	vm := "/vms/" + strconv.Itoa(g.VMID)
	current := func(k string) string {
		if v, ok := g.Conf[k]; ok {
			return v
		}
		return g.Pending[k]
	}
	for _, opt := range deletes {
		val := current(opt)
		if val == "" {
			continue
		}
		base, _ := splitIndexed(opt)
		var err error
		switch {
		case base == "unused":
			err = s.check(user, vm, "VM.Config.Disk")
		case isQemuDiskKey(opt):
			err = s.qemuDrivePerm(user, g.VMID, opt, val)
		case opt == "tags":
			// update_vm_api: assert_tag_permissions(old, '').
			if err = s.check(user, vm, "VM.Config.Options"); err == nil {
				err = s.assertTagPermissions(user, val, "")
			}
		case base == "net" && g.Conf[opt] != "":
			err = s.qemuBridgeAccess(user, map[string]string{opt: g.Conf[opt]})
		}
		if err != nil {
			return err
		}
	}
	for _, opt := range sortedKeys(params) {
		base, _ := splitIndexed(opt)
		var err error
		switch {
		case isQemuDiskKey(opt):
			if old := g.Conf[opt]; old != "" {
				if err = s.qemuDrivePerm(user, g.VMID, opt, old); err != nil {
					return err
				}
			}
			err = s.qemuDrivePerm(user, g.VMID, opt, params[opt])
		case opt == "tags":
			// update_vm_api: assert_tag_permissions(current, new).
			if err = s.check(user, vm, "VM.Config.Options"); err == nil {
				err = s.assertTagPermissions(user, g.Conf[opt], params[opt])
			}
		case base == "net" && g.Conf[opt] != "":
			err = s.qemuBridgeAccess(user, map[string]string{opt: g.Conf[opt]})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// qemuCloneStorageAccess is Qemu.pm's check_storage_access_clone: space on
// the storage each disk is copied to (the target storage, or its own).
func (s *Server) qemuCloneStorageAccess(user string, conf map[string]string, storage string) error {
	if user == "root@pam" {
		return nil
	}
	for _, k := range sortedKeys(conf) {
		if !isQemuDiskKey(k) {
			continue
		}
		d, err := parseDrive(k, conf[k])
		if err != nil || d["file"] == "" || d["file"] == "none" {
			continue
		}
		if driveIsCdrom(d) {
			if d["file"] == "cdrom" {
				if err := s.check(user, "/", "Sys.Console"); err != nil {
					return err
				}
			}
			continue
		}
		sid, _, _ := strings.Cut(d["file"], ":")
		if storage != "" {
			sid = storage
		}
		if err := s.check(user, "/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
			return err
		}
	}
	if v, ok := conf["vmstatestorage"]; ok {
		return s.check(user, "/storage/"+v, "Datastore.AllocateSpace")
	}
	return nil
}

// storageOfVolume is the storage part of a volume id.
func storageOfVolume(volid string) string {
	sid, _, _ := strings.Cut(volid, ":")
	return sid
}
