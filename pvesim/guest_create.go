package pvesim

// Creating guests (POST /nodes/{node}/qemu and /nodes/{node}/lxc): parameter
// checks, disk allocation and the create task, for VMs then containers.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

// checkDriveParams runs check_drive_param and check_storage_access: the
// checks Proxmox makes before it forks a worker (400 or 500 answers).
func (s *Server) checkDriveParams(node string, params map[string]string, defaultStorage string) ([]drivePlan, error) {
	var plans []drivePlan
	for _, key := range sortedKeys(params) {
		if !isQemuDiskKey(key) {
			continue
		}
		d, err := parseDrive(key, params[key])
		if err != nil {
			return nil, route.ParamErr(key, "unable to parse drive options")
		}
		file := d["file"]
		m := reNewDisk.FindStringSubmatch(file)
		if src := d["import-from"]; src != "" {
			if m == nil || m[3] != "0" {
				return nil, route.ParamErr(key, "'import-from' requires special syntax - use <storage ID>:0,import-from=<source>")
			}
			if key == "efidisk0" {
				for _, req := range []string{"efitype", "pre-enrolled-keys"} {
					if _, ok := d[req]; !ok {
						return nil, route.ParamErr(key, fmt.Sprintf("need to specify '%s' when using 'import-from'", req))
					}
				}
			} else if key == "tpmstate0" {
				if _, ok := d["version"]; !ok {
					return nil, route.ParamErr(key, "need to specify 'version' when using 'import-from'")
				}
			}
		}
		storage, volname, isVolume := strings.Cut(file, ":")
		if isVolume && m == nil && volname != "cloudinit" {
			vtype, _, err := s.volumeContentType(node, file)
			if err != nil {
				return nil, err
			}
			if vtype == "iso" && !driveIsCdrom(d) {
				return nil, route.ParamErr(key, "explicit 'media=cdrom' is required for iso images")
			}
		}
		switch {
		case file == "" || file == "none" || file == "cloudinit" || volname == "cloudinit":
		case driveIsCdrom(d) && file == "cdrom":
		case !driveIsCdrom(d) && m != nil:
			sid := m[2]
			if sid == "" {
				sid = defaultStorage
			}
			if sid == "" {
				return nil, route.Fail("no storage ID specified (and no default storage)")
			}
			st, err := s.storageConfig(sid)
			if err != nil {
				return nil, err
			}
			if !st.allows("images") {
				return nil, route.ParamErr("storage", fmt.Sprintf("storage '%s' does not support vm images", sid))
			}
		default:
			if strings.HasPrefix(file, "/") {
				return nil, route.Fail("only root can pass arbitrary filesystem paths")
			}
			if isVolume {
				vtype, _, err := s.volumeContentType(node, file)
				if err != nil {
					return nil, err
				}
				if vtype != "images" && vtype != "iso" {
					return nil, route.ParamErr(key, "content type needs to be 'images' or 'iso'")
				}
				_ = storage
			}
		}
		if src := d["import-from"]; src != "" {
			if strings.HasPrefix(src, "/") {
				return nil, route.Fail("only root can pass arbitrary filesystem paths")
			}
			vtype, _, err := s.volumeContentType(node, src)
			if err != nil {
				return nil, err
			}
			if vtype != "images" && vtype != "import" {
				return nil, route.ParamErr(key, fmt.Sprintf("%s has wrong type '%s' - needs to be 'images' or 'import'", src, vtype))
			}
		}
		plans = append(plans, drivePlan{key: key, drive: d})
	}
	return plans, nil
}

// createDisks is create_disks: allocate new disks and cloud-init drives,
// import images, and size existing volumes. It returns the drives in their
// live form and the number of bytes copied (for the task's duration).
func (s *Server) createDisks(tc *taskCtx, g *Guest, plans []drivePlan, defaultStorage string, template bool) (map[string]string, int64, error) {
	res := map[string]string{}
	var copied int64
	var allocated []string
	fail := func(err error) (map[string]string, int64, error) {
		for _, volid := range allocated {
			s.state.removeVolume(g.Node, volid)
		}
		return nil, 0, err
	}
	for _, p := range plans {
		d := copyConf(p.drive)
		file := d["file"]
		storage, volname, _ := strings.Cut(file, ":")
		m := reNewDisk.FindStringSubmatch(file)
		switch {
		case file == "" || file == "none" || file == "cdrom":
			delete(d, "size")
		case volname == "cloudinit" || file == "cloudinit":
			if volname == "" {
				storage = defaultStorage
			}
			if storage == "" {
				return fail(route.Fail("no storage ID specified (and no default storage)"))
			}
			for _, conf := range []map[string]string{g.Conf, g.Pending, res} {
				for k, v := range conf {
					if !isQemuDiskKey(k) || k == p.key {
						continue
					}
					if od, err := parseDrive(k, v); err == nil && driveIsCloudinit(od) {
						return fail(route.Fail("%s - cloud-init drive is already attached at '%s'", p.key, k))
					}
				}
			}
			st, err := s.storageConfig(storage)
			if err != nil {
				return fail(err)
			}
			format := ""
			name := fmt.Sprintf("vm-%d-cloudinit", g.VMID)
			if st.fileBased() {
				format = d["format"]
				if format == "" {
					format = "qcow2"
				}
				name += "." + format
			}
			v, err := s.allocImage(g.Node, storage, g.VMID, 4<<20, format, name)
			if err != nil {
				return fail(err)
			}
			allocated = append(allocated, v.VolID())
			d["file"] = v.VolID()
			d["media"] = "cdrom"
			delete(d, "format")
			tc.Log("%s: successfully created disk '%s'", p.key, printDrive(p.key, d))
		case m != nil:
			sid := m[2]
			if sid == "" {
				sid = defaultStorage
			}
			gb, _ := strconv.ParseFloat(m[3], 64)
			size := int64(gb * float64(gib))
			if src := d["import-from"]; src != "" {
				// The source storage is activated before it is read.
				if _, err := s.storageCheckEnabled(strings.SplitN(src, ":", 2)[0], g.Node); err != nil {
					return fail(err)
				}
				sv := s.state.volume(g.Node, src)
				if sv == nil {
					return fail(route.Fail("cannot import from '%s' - could not get size of %s", src, src))
				}
				size = roundUp(sv.Size, 4<<20)
				copied += sv.Size
				tc.Log("importing disk '%s' to VM %d ...", src, g.VMID)
				delete(d, "import-from")
			}
			switch p.key {
			case "efidisk0":
				size = 528 << 10
				if d["efitype"] != "4m" {
					size = 128 << 10
				}
			case "tpmstate0":
				size = 4 << 20
			}
			v, err := s.allocImage(g.Node, sid, g.VMID, size, d["format"], "")
			if err != nil {
				return fail(err)
			}
			if template {
				s.renameToBase(g.Node, v)
			}
			allocated = append(allocated, v.VolID())
			d["file"] = v.VolID()
			d["size"] = FormatSize(size)
			delete(d, "format")
			tc.Log("%s: successfully created disk '%s'", p.key, printDrive(p.key, d))
		default:
			v := s.state.volume(g.Node, file)
			if v == nil {
				return fail(route.Fail("volume %s does not exist", file))
			}
			if d["format"] != "" && d["format"] != v.Format {
				return fail(route.Fail("drive '%s' - volume '%s' - 'format=%s' option different from storage format '%s'", p.key, file, d["format"], v.Format))
			}
			d["size"] = FormatSize(v.Size)
		}
		res[p.key] = printDrive(p.key, d)
	}
	return res, copied, nil
}

func roundUp(n, to int64) int64 {
	if n <= 0 {
		return to
	}
	return (n + to - 1) / to * to
}

// qemuCreateJob is one POST .../qemu: what create_vm checked and the
// worker needs.
type qemuCreateJob struct {
	g             *Guest
	vmid          int
	node, storage string
	pool          string
	start, haAdd  bool
	params        map[string]string // the config options given
	plans         []drivePlan
}

// qemuCreate is qemu-server API2/Qemu.pm create_vm: the checks, then
// create_and_lock_config, then $createfn in a worker.
func (s *Server) qemuCreate(r *route.Request) (any, error) {
	vmid, _ := r.Int("vmid")
	node := r.Str("node")
	if r.Has("archive") {
		return nil, route.Fail("unable to restore VM %d - restoring backups is not supported by the simulator", vmid)
	}
	storage := r.Str("storage")
	params := paramsExcept(r, "node", "vmid", "storage", "start", "pool", "bwlimit", "unique", "force", "archive",
		"ha-managed", "live-restore", "import-working-storage")
	plans, err := s.qemuCreateChecks(r, vmid, node, storage, params)
	if err != nil {
		return nil, err
	}
	if old := s.state.Guests[vmid]; old != nil {
		kind := "VM"
		if old.Type == "lxc" {
			kind = "CT"
		}
		return nil, route.Fail("unable to create VM %d - %s %d already exists on node '%s'", vmid, kind, vmid, old.Node)
	}
	g := &Guest{VMID: vmid, Node: node, Type: "qemu", Conf: map[string]string{"lock": "create"}}
	g.ensureMaps()
	s.state.Guests[vmid] = g
	j := &qemuCreateJob{g: g, vmid: vmid, node: node, storage: storage, params: params, plans: plans,
		start: r.Bool("start"), pool: r.Str("pool"), haAdd: r.Bool("ha-managed")}

	upid := s.startTask(r, node, "qmcreate", strconv.Itoa(vmid), func(tc *taskCtx) error {
		return s.qemuCreateWorker(r, tc, j)
	})
	return upid, nil
}

// qemuCreateChecks is create_vm's checks before the config exists: the
// SSH keys, the pool, the caller's rights, then the parameters (cdrom
// alias, storage access, modify rights, bridges, drives, MAC addresses).
func (s *Server) qemuCreateChecks(r *route.Request, vmid int, node, storage string, params map[string]string) ([]drivePlan, error) {
	if err := checkSSHKeysParam(params); err != nil {
		return nil, err
	}
	// qemu-server API2/Qemu.pm create_vm: check_pool_exist after the keys.
	if err := s.checkPoolExist(r); err != nil {
		return nil, err
	}
	if err := s.qemuCreateAccess(r, vmid); err != nil {
		return nil, err
	}
	resolveCdromAlias(params)
	if err := s.qemuStorageAccess(r.User, vmid, params, storage); err != nil {
		return nil, err
	}
	if storage != "" {
		if _, err := s.storageConfig(storage); err != nil {
			return nil, err
		}
	}
	if err := s.qemuModifyConfigPerm(r.User, vmid, sortedKeys(params)); err != nil {
		return nil, err
	}
	if err := s.qemuBridgeAccess(r.User, params); err != nil {
		return nil, err
	}
	plans, err := s.checkDriveParams(node, params, storage)
	if err != nil {
		return nil, err
	}
	for k, v := range params {
		if _, ok := route.IndexOf(k, "net"); ok {
			params[k] = s.normaliseNet(v)
		}
	}
	return plans, nil
}

// qemuCreateWorker is $createfn: $realcmd under the config lock, then the
// HA resource and the autostart.
func (s *Server) qemuCreateWorker(r *route.Request, tc *taskCtx, j *qemuCreateJob) error {
	g, vmid := j.g, j.vmid
	// create_and_lock_config wrote a config holding only "lock: create"
	// before the worker forked. The worker takes the config flock
	// (waiting 1 s) and keeps both while it allocates disks and imports
	// images; only the final write_config replaces the lock line with
	// the whole config. On failure the volumes are freed and the config
	// file is unlinked: the half-created guest is gone.
	var created map[string]string
	fail := func(err error) error {
		for _, volid := range guestVolumes(created) {
			s.state.removeVolume(j.node, volid)
		}
		if s.state.Guests[vmid] == g {
			delete(s.state.Guests, vmid)
		}
		return err
	}
	if err := tc.lock(vmid, "qemu", false, time.Second); err != nil {
		return fail(err)
	}
	if err := tc.Sleep(durCreate); err != nil {
		return fail(fmt.Errorf("unable to create VM %d - %s", vmid, strings.TrimRight(route.AsAPIError(err).Message, "\n")))
	}
	conf := map[string]string{}
	for k, v := range j.params {
		if !isQemuDiskKey(k) {
			conf[k] = v
		}
	}
	var copied int64
	var err error
	created, copied, err = s.createDisks(tc, g, j.plans, j.storage, conf["template"] == "1")
	if err != nil {
		return fail(fmt.Errorf("unable to create VM %d - %s", vmid, strings.TrimRight(route.AsAPIError(err).Message, "\n")))
	}
	g.Creating = guestVolumes(created)
	if copied > 0 {
		if err := tc.copyWithProgress(copied, time.Duration(float64(copied)/importRate*float64(time.Second)), "", 0); err != nil {
			return fail(fmt.Errorf("unable to create VM %d - %s", vmid, strings.TrimRight(route.AsAPIError(err).Message, "\n")))
		}
	}
	for k, v := range created {
		conf[k] = v
	}
	if err := s.qemuCreateDefaults(r, conf); err != nil {
		return err
	}
	g.Conf = conf
	g.Creating = nil
	// create_vm adds the guest to its pool once the config is written.
	s.state.addVMToPool(vmid, j.pool)
	tc.unlock(vmid)
	if j.haAdd {
		s.haAddAfterCreate(tc, g, j.start, !j.start)
	}
	if j.start && s.haManaged(g) {
		// vm_start of an HA-managed VM only asks the HA stack, in a task of its own.
		tc.Log("Execute autostart")
		s.haPowerRequest(r, g, false, 0)
	} else if j.start {
		// vm_start runs after the create lock is released; its errors
		// are only warnings of the create task.
		tc.Log("Execute autostart")
		if err := s.qemuStartGuest(tc, g, false); err != nil {
			tc.Log("%s", strings.TrimRight(route.AsAPIError(err).Message, "\n"))
		}
	}
	return nil
}

// qemuCreateDefaults is $realcmd after create_disks: the boot order,
// SMBIOS UUID and vmgenid when not given, the tags (checked, then made
// unique), the hashed cloud-init password and the meta line.
func (s *Server) qemuCreateDefaults(r *route.Request, conf map[string]string) error {
	if conf["boot"] == "" {
		if b := defaultBootOrder(conf); b != "" {
			conf["boot"] = b
		} else {
			delete(conf, "boot")
		}
	}
	if conf["smbios1"] == "" {
		conf["smbios1"] = "uuid=" + s.randomUUID()
	}
	if v, ok := conf["vmgenid"]; (!ok || v == "1") && conf["arch"] != "aarch64" {
		conf["vmgenid"] = s.randomUUID()
	}
	if v, ok := conf["tags"]; ok {
		// create_vm's worker: assert_tag_permissions, then get_unique_tags.
		if err := s.assertTagPermissions(r.User, "", v); err != nil {
			return err
		}
		conf["tags"] = s.uniqueTags(v)
	}
	if pw, ok := conf["cipassword"]; ok {
		conf["cipassword"] = s.hashPassword(pw)
	}
	conf["meta"] = fmt.Sprintf("creation-qemu=10.1.2,ctime=%d", s.clock.Now().Unix())
	return nil
}

// lxcCreateJob is one POST .../lxc: what create_vm checked and $code
// needs.
type lxcCreateJob struct {
	g                         *Guest
	vmid                      int
	node, ostemplate, storage string
	sshKeys, pool             string
	start, haAdd, storageOnly bool
	mpParams, conf            map[string]string
}

// lxcCreate is pve-container API2/LXC.pm create_vm: the checks, the mount
// point plan and update_pct_config, create_and_lock_config, then $code
// in a worker.
func (s *Server) lxcCreate(r *route.Request) (any, error) {
	vmid, _ := r.Int("vmid")
	node := r.Str("node")
	if r.Bool("restore") {
		return nil, route.Fail("unable to restore CT %d - restoring backups is not supported by the simulator", vmid)
	}
	unprivileged := r.BoolOr("unprivileged", true)
	if err := s.lxcCreateChecks(r, vmid, unprivileged); err != nil {
		return nil, err
	}
	ostemplate := r.Str("ostemplate")
	storage := r.Str("storage")
	if storage == "" {
		storage = "local"
	}
	params := paramsExcept(r, "node", "vmid", "ignore-unpack-errors", "bwlimit", "start", "ha-managed", "unprivileged", "restore",
		"unique", "force", "password", "ssh-public-keys", "pool", "ostemplate", "storage")
	if err := s.checkCTModifyPerm(r.User, vmid, nil, params, nil, unprivileged); err != nil {
		return nil, err
	}
	if err := s.lxcCreateTemplateAccess(r, vmid, node, ostemplate); err != nil {
		return nil, err
	}
	mpParams, other, err := s.lxcCreateMountPlan(r, storage, params)
	if err != nil {
		return nil, err
	}
	prepared, err := s.lxcPrepareOptions(&Guest{VMID: vmid, Node: node}, other)
	if err != nil {
		return nil, err
	}
	conf := map[string]string{}
	for k, v := range prepared {
		if strings.HasPrefix(k, "net") {
			v = s.normaliseLxcNet(v)
		}
		conf[k] = v
	}
	if unprivileged {
		conf["unprivileged"] = "1"
	}
	g := &Guest{VMID: vmid, Node: node, Type: "lxc", Conf: map[string]string{"lock": "create"}}
	g.ensureMaps()
	j := &lxcCreateJob{g: g, vmid: vmid, node: node, ostemplate: ostemplate, storage: storage,
		sshKeys: r.Str("ssh-public-keys"), mpParams: mpParams, conf: conf}
	s.state.Guests[vmid] = g
	j.start, j.pool, j.haAdd = r.Bool("start"), r.Str("pool"), r.Bool("ha-managed")
	j.storageOnly = len(mpParams) == 0

	return s.startTask(r, node, "vzcreate", strconv.Itoa(vmid), func(tc *taskCtx) error {
		return s.lxcCreateWorker(tc, j)
	}), nil
}

// lxcCreateChecks is create_vm's checks of the caller: Sys.Modify for a
// privileged container, Sys.Console for an HA resource, an unused id,
// the SSH keys, the pool, then VM.Allocate on the guest or its pool.
func (s *Server) lxcCreateChecks(r *route.Request, vmid int, unprivileged bool) error {
	if !unprivileged {
		if err := s.check(r.User, "/", "Sys.Modify"); err != nil {
			return err
		}
	}
	if r.Bool("ha-managed") {
		if err := s.check(r.User, "/", "Sys.Console"); err != nil {
			return err
		}
	}
	if err := s.vmidUnusedErr(vmid); err != nil {
		return err
	}
	if keys, ok := r.Params["ssh-public-keys"]; ok {
		if err := validateSSHKeys(keys); err != nil {
			return err
		}
	}
	// pve-container API2/LXC.pm create_vm: check_pool_exist after the keys.
	if err := s.checkPoolExist(r); err != nil {
		return err
	}
	if pool := r.Str("pool"); !s.can(r.User, "/vms/"+strconv.Itoa(vmid), "VM.Allocate") && !(pool != "" && s.can(r.User, "/pool/"+pool, "VM.Allocate")) {
		return permErr("")
	}
	return nil
}

// lxcCreateTemplateAccess is create_vm's check of the ostemplate: no
// pipe, a volume of content vztmpl the caller may read, or a path only
// root may pass.
func (s *Server) lxcCreateTemplateAccess(r *route.Request, vmid int, node, ostemplate string) error {
	if ostemplate == "-" {
		return route.Fail("pipe requires cli environment")
	}
	storageID, _, isVolume := strings.Cut(ostemplate, ":")
	if !isVolume {
		if r.User != "root@pam" {
			return route.Fail("Only root can pass arbitrary filesystem paths.")
		}
		return nil
	}
	if _, err := s.storageConfig(storageID); err != nil {
		return err
	}
	vtype, _, err := s.volumeContentType(node, ostemplate)
	if err != nil {
		return err
	}
	if vtype != "vztmpl" {
		return route.Fail("unable to use volume %s - content type needs to be 'vztmpl'", ostemplate)
	}
	return s.checkVolumeAccess(r.User, vmid, ostemplate, "vztmpl")
}

// lxcCreateMountPlan is create_vm's split of the parameters into mount
// points (a bare size taking the default storage) and the rest, then
// $check_and_activate_storage on each volume's storage (or the default
// storage when none is given). Unused volumes are ignored, as Proxmox
// warns and drops them on create.
func (s *Server) lxcCreateMountPlan(r *route.Request, storage string, params map[string]string) (mpParams, other map[string]string, err error) {
	checkStorage := func(sid string) error {
		st, err := s.storageConfig(sid)
		if err != nil {
			return err
		}
		if !st.allows("rootdir") {
			return route.ParamErr("storage", fmt.Sprintf("storage '%s' does not support container directories", sid))
		}
		return s.check(r.User, "/storage/"+sid, "Datastore.AllocateSpace")
	}
	mpParams, other = map[string]string{}, map[string]string{}
	for _, k := range sortedKeys(params) {
		v := params[k]
		switch {
		case k == "rootfs" || isLxcVolumeKey(k):
			if regexp.MustCompile(`^\d+(\.\d+)?$`).MatchString(v) {
				v = storage + ":" + v
			} else if mp, err := parseLxcVolume(k, v); err == nil && regexp.MustCompile(`^\d+(\.\d+)?$`).MatchString(mp["volume"]) {
				mp["volume"] = storage + ":" + mp["volume"]
				v = printLxcVolume(k, mp)
			}
			mpParams[k] = v
		case strings.HasPrefix(k, "unused"):
		default:
			other[k] = v
		}
	}
	if len(mpParams) > 0 && mpParams["rootfs"] == "" {
		return nil, nil, route.Fail("mount points configured, but 'rootfs' not set - aborting")
	}
	for _, k := range sortedKeys(mpParams) {
		mp, err := parseLxcVolume(k, mpParams[k])
		if err != nil {
			return nil, nil, route.ParamErr(k, "invalid format - "+err.Error())
		}
		if mountPointType(mp["volume"]) != "volume" {
			if r.User != "root@pam" {
				return nil, nil, route.Fail("Only root can pass arbitrary filesystem paths.")
			}
			continue
		}
		sid, _, _ := strings.Cut(mp["volume"], ":")
		if err := checkStorage(sid); err != nil {
			return nil, nil, err
		}
	}
	if len(mpParams) == 0 {
		if err := checkStorage(storage); err != nil {
			return nil, nil, err
		}
	}
	return mpParams, other, nil
}

// lxcCreateWorker is create_vm's $code under the config lock: the disks,
// the archive extracted, the defaults it detects, the root SSH keys, the
// pool; then the start and the HA resource.
func (s *Server) lxcCreateWorker(tc *taskCtx, j *lxcCreateJob) error {
	g, vmid, node, ostemplate, conf := j.g, j.vmid, j.node, j.ostemplate, j.conf
	fail := func(err error) error {
		delete(s.state.Guests, vmid)
		return fmt.Errorf("unable to create CT %d - %s", vmid, strings.TrimRight(route.AsAPIError(err).Message, "\n"))
	}
	if err := tc.LockGuest(vmid, "lxc"); err != nil {
		delete(s.state.Guests, vmid)
		return err
	}
	if j.storageOnly {
		j.mpParams["rootfs"] = j.storage + ":4"
	}
	created, err := s.lxcCreateDisks(g, j.mpParams, conf)
	if err != nil {
		return fail(err)
	}
	g.Creating = created
	removeCreated := func() {
		for _, volid := range created {
			s.state.removeVolume(node, volid)
		}
	}
	if tv := s.state.volume(node, ostemplate); tv == nil && strings.Contains(ostemplate, ":") {
		removeCreated()
		return fail(route.Fail("can't find file '%s'", ostemplate))
	}
	tc.Log("extracting archive '%s'", ostemplate)
	if err := tc.Sleep(durCTCreate); err != nil {
		removeCreated()
		return fail(err)
	}
	tc.Log("Total bytes read: %d (%s)", 150<<20, "150MiB")
	if conf["ostype"] == "" {
		conf["ostype"] = lxcOSType(ostemplate)
	}
	if conf["arch"] == "" {
		conf["arch"] = lxcArch(ostemplate)
	}
	tc.Log("Detected container architecture: %s", conf["arch"])
	if conf["hostname"] == "" {
		conf["hostname"] = "CT" + strconv.Itoa(vmid)
	}
	if conf["memory"] == "" || conf["memory"] == "0" {
		conf["memory"] = "512"
	}
	if _, ok := conf["swap"]; !ok {
		conf["swap"] = "512"
	}
	g.Conf = conf
	g.Creating = nil
	// post_create_hook: set_user_authorized_ssh_keys for root.
	g.RootSSHKeys = j.sshKeys
	s.state.addVMToPool(vmid, j.pool)
	if j.start {
		// Proxmox starts the container through the start API, in a
		// task of its own: the create itself succeeds.
		if err := s.lxcCheckBridges(tc, g); err != nil {
			tc.Log("%s", route.AsAPIError(err).Message)
		} else {
			g.Running = true
			g.StartedAt = s.clock.Now()
		}
	}
	if j.haAdd {
		s.haAddAfterCreate(tc, g, j.start, true)
	}
	return nil
}

// lxcCreateDisks is create_disks: new volumes for "storage:size" mount
// points; existing volumes and bind mounts are recorded as given. It
// writes the mount points into conf and returns the new volume ids.
func (s *Server) lxcCreateDisks(g *Guest, mps map[string]string, conf map[string]string) ([]string, error) {
	var created []string
	for _, k := range lxcVolumeKeys() {
		if _, ok := mps[k]; !ok {
			continue
		}
		mp, err := parseLxcVolume(k, mps[k])
		if err != nil {
			return created, err
		}
		if m := reLxcNewDisk.FindStringSubmatch(mp["volume"]); m != nil && mountPointType(mp["volume"]) == "volume" {
			gb, _ := strconv.ParseFloat(m[2], 64)
			sizeKB := int64(gb*1024) * 1024
			v, err := s.lxcAllocDisk(g.Node, m[1], g.VMID, sizeKB*1024)
			if err != nil {
				for _, volid := range created {
					s.state.removeVolume(g.Node, volid)
				}
				return nil, err
			}
			created = append(created, v.VolID())
			mp["volume"] = v.VolID()
			mp["size"] = FormatSize(sizeKB * 1024)
		}
		conf[k] = printLxcVolume(k, mp)
	}
	return created, nil
}

// lxcAllocDisk is alloc_disk: a raw image, or a subvolume for size 0 on
// a directory storage.
func (s *Server) lxcAllocDisk(node, storage string, vmid int, size int64) (*Volume, error) {
	st, err := s.storageConfig(storage)
	if err != nil {
		return nil, err
	}
	if !st.allows("rootdir") {
		return nil, route.Fail("content type 'rootdir' is not available or configured on storage '%s'", storage)
	}
	if size == 0 {
		if !st.fileBased() {
			return nil, route.Fail("unable to allocate an empty volume on storage '%s' (type %s)", storage, st.Type)
		}
		name := fmt.Sprintf("subvol-%d-disk-%d", vmid, s.lxcFreeIndex(node, st, vmid))
		v, err := s.allocImage(node, storage, vmid, 0, "subvol", name+".subvol")
		if v != nil {
			v.Content = "rootdir"
		}
		return v, err
	}
	v, err := s.allocImage(node, storage, vmid, size, "raw", "")
	if v != nil {
		v.Content = "rootdir"
	}
	return v, err
}

func (s *Server) lxcFreeIndex(node string, st *Storage, vmid int) int {
	used := map[string]bool{}
	for _, v := range s.state.volumesOn(node, st.ID) {
		used[v.Name] = true
	}
	for i := 0; ; i++ {
		if !used[fmt.Sprintf("%d/subvol-%d-disk-%d.subvol", vmid, vmid, i)] && !used[fmt.Sprintf("%d/vm-%d-disk-%d.raw", vmid, vmid, i)] {
			return i
		}
	}
}
