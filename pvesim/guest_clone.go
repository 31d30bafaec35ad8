package pvesim

// Templates and clones (POST .../template and .../clone) for VMs then
// containers.

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

func (s *Server) qemuTemplate(r *Request) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	only := r.Str("disk")
	// load_and_check runs before the worker forks and again under the
	// config lock. qemu-server sets no "lock: template": it writes
	// template: 1 first, then turns the disks into base volumes one by one.
	loadAndCheck := func() error {
		if s.state.Guests[g.VMID] != g {
			return Fail("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", g.Node, g.VMID)
		}
		if err := checkLock(g); err != nil {
			return err
		}
		if len(g.Snapshots) > 0 {
			return Fail("unable to create template, because VM contains snapshots")
		}
		if g.IsTemplate() && only == "" {
			return Fail("you can't convert a template to a template")
		}
		if g.Running {
			return Fail("you can't convert a VM to template if VM is running")
		}
		return nil
	}
	if err := loadAndCheck(); err != nil {
		return nil, err
	}
	return s.startTask(r, g.Node, "qmtemplate", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.LockGuest(g.VMID, "qemu"); err != nil {
			return err
		}
		if err := loadAndCheck(); err != nil {
			return err
		}
		g.Conf["template"] = "1"
		if err := tc.Sleep(durTemplate); err != nil {
			return err
		}
		for _, k := range sortedKeys(g.Conf) {
			if !isQemuDiskKey(k) || (only != "" && k != only) {
				continue
			}
			d, err := parseDrive(k, g.Conf[k])
			if err != nil || driveIsCdrom(d) {
				continue
			}
			v := s.state.volume(g.Node, d["file"])
			if v == nil || !strings.Contains(v.Name, "vm-") {
				continue
			}
			d["file"] = s.renameToBase(g.Node, v)
			g.Conf[k] = printDrive(k, d)
		}
		return nil
	}), nil
}

func (s *Server) qemuClone(r *Request) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	newid, _ := r.Int("newid")
	storage, format, target, snapname := r.Str("storage"), r.Str("format"), r.Str("target"), r.Str("snapname")
	if target == g.Node || target == "localhost" {
		target = ""
	}
	// clone_vm's $load_and_check: the pool first.
	if err := s.checkPoolExist(r); err != nil {
		return nil, err
	}
	pool := r.Str("pool")
	if target != "" && s.state.node(target) == nil {
		return nil, Fail("no such cluster node '%s'", target)
	}
	if storage != "" {
		// clone_vm: enabled on this node, images, then enabled on the
		// target and shared.
		st, err := s.storageCheckEnabled(storage, g.Node)
		if err != nil {
			return nil, err
		}
		if !st.allows("images") {
			return nil, ParamErr("storage", fmt.Sprintf("storage '%s' does not support vm images", storage))
		}
		if target != "" {
			if _, err := s.storageCheckEnabled(storage, target); err != nil {
				return nil, err
			}
			if !st.Shared {
				return nil, Fail("can't clone to non-shared storage '%s'", storage)
			}
		}
	}
	if err := checkLock(g); err != nil {
		return nil, err
	}
	if snapname != "" && g.Snapshots[snapname] == nil {
		return nil, Fail("snapshot '%s' does not exist", snapname)
	}
	full := r.BoolOr("full", !g.IsTemplate())
	if storage != "" && !full {
		return nil, Fail("parameter 'storage' not allowed for linked clones")
	}
	if format != "" && !full {
		return nil, Fail("parameter 'format' not allowed for linked clones")
	}
	src := g.Conf
	if snapname != "" {
		src = g.Snapshots[snapname].Conf
	}
	running := g.Running
	if _, tpm := src["tpmstate0"]; tpm && full && running && snapname == "" {
		return nil, Fail("cannot clone TPM state while VM is running")
	}
	if err := s.qemuCloneStorageAccess(r.User, src, storage); err != nil {
		return nil, err
	}
	if err := s.qemuBridgeAccess(r.User, src); err != nil {
		return nil, err
	}
	shared := true
	var diskKeys []string
	for _, k := range sortedKeys(src) {
		if !isQemuDiskKey(k) {
			continue
		}
		d, err := parseDrive(k, src[k])
		if err != nil {
			return nil, Fail("unable to parse drive options for '%s'", k)
		}
		if st := s.state.storage(strings.SplitN(d["file"], ":", 2)[0]); st != nil && !st.Shared {
			shared = false
		}
		if driveIsCdrom(d) && !driveIsCloudinit(d) {
			continue
		}
		v := s.state.volume(g.Node, d["file"])
		isBase := v != nil && isBaseVolume(v.Name)
		if !full && !driveIsCloudinit(d) && k != "tpmstate0" && !isBase {
			return nil, Fail("Linked clone feature is not supported for '%s' (%s)", d["file"], k)
		}
		diskKeys = append(diskKeys, k)
	}
	if target != "" && !shared {
		return nil, Fail("can't clone VM to node '%s' (VM uses local storage)", target)
	}
	if _, exists := s.state.Guests[newid]; exists {
		return nil, Fail("unable to create VM %d: config file already exists", newid)
	}
	newNode := g.Node
	if target != "" {
		newNode = target
	}
	ng := &Guest{VMID: newid, Node: g.Node, Type: "qemu", Conf: map[string]string{"lock": "clone"}}
	ng.ensureMaps()
	s.state.Guests[newid] = ng
	name, desc := r.Str("name"), r.Str("description")
	upid := s.startTask(r, g.Node, "qmclone", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		// Proxmox locks the source shared (exclusive if it ran when the
		// call came in) and the target exclusively, each waiting 1 second,
		// then repeats the early checks under the locks.
		if err := tc.lock(g.VMID, "qemu", !running, time.Second); err != nil {
			delete(s.state.Guests, newid)
			return err
		}
		if err := tc.lock(newid, "qemu", false, time.Second); err != nil {
			delete(s.state.Guests, newid)
			return err
		}
		recheck := func() error {
			if s.state.Guests[g.VMID] != g {
				return Fail("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", g.Node, g.VMID)
			}
			if err := checkLock(g); err != nil {
				return err
			}
			if g.Running != running {
				return Fail("unexpected state change")
			}
			if snapname != "" && g.Snapshots[snapname] == nil {
				return Fail("snapshot '%s' does not exist", snapname)
			}
			return nil
		}
		if err := recheck(); err != nil {
			delete(s.state.Guests, newid)
			return err
		}
		// clone_vm's $clonefn: the only place naming the new VMID, as the
		// task's id is the source's.
		tc.Log("creating a clone of VM %d with ID %d", g.VMID, newid)
		if full {
			tc.Log("create full clone of drives")
		} else {
			tc.Log("create linked clone of drives")
		}
		conf := map[string]string{}
		var bytes int64
		for _, k := range sortedKeys(src) {
			v := src[k]
			switch {
			case k == "lock" || k == "template" || k == "parent" || k == "snaptime" || k == "vmstate" || strings.HasPrefix(k, "unused"):
			case strings.HasPrefix(k, "net"):
				if n, err := parsePropString(qemuNetFormat, v, ""); err == nil {
					n["macaddr"] = s.randomMAC()
					conf[k] = printNet(n)
				}
			case isQemuDiskKey(k):
				d, _ := parseDrive(k, v)
				if driveIsCdrom(d) && !driveIsCloudinit(d) {
					conf[k] = v
					continue
				}
				sv := s.state.volume(g.Node, d["file"])
				if sv == nil {
					delete(s.state.Guests, newid)
					return Fail("clone failed: volume '%s' does not exist", d["file"])
				}
				dstStorage := sv.Storage
				if storage != "" && full {
					dstStorage = storage
				}
				var nv *Volume
				var err error
				if driveIsCloudinit(d) {
					st, _ := s.storageConfig(dstStorage)
					name, fmtName := fmt.Sprintf("vm-%d-cloudinit", newid), ""
					if st != nil && st.fileBased() {
						fmtName = "qcow2"
						name += ".qcow2"
					}
					nv, err = s.allocImage(g.Node, dstStorage, newid, sv.Size, fmtName, name)
				} else if full {
					bytes += sv.Size
					nv, err = s.allocImage(g.Node, dstStorage, newid, sv.Size, s.resolveDstDiskFormat(dstStorage, sv, format), "")
				} else {
					nv, err = s.linkedCloneImage(g.Node, sv, newid)
				}
				if err != nil {
					for _, volid := range guestVolumes(conf) {
						s.state.removeVolume(g.Node, volid)
					}
					delete(s.state.Guests, newid)
					return fmt.Errorf("clone failed: %s", strings.TrimRight(err.Error(), "\n"))
				}
				d["file"] = nv.VolID()
				conf[k] = printDrive(k, d)
			default:
				conf[k] = v
			}
		}
		sm, _ := parsePropString(namedFormats["pve-qm-smbios1"].props, conf["smbios1"], "")
		if sm == nil {
			sm = map[string]string{}
		}
		sm["uuid"] = s.randomUUID()
		conf["smbios1"] = printPropString(namedFormats["pve-qm-smbios1"].props, sm)
		if conf["vmgenid"] != "" {
			conf["vmgenid"] = s.randomUUID()
		}
		if name != "" {
			conf["name"] = name
		} else {
			base := src["name"]
			if base == "" {
				base = strconv.Itoa(g.VMID)
			}
			conf["name"] = "Copy-of-VM-" + base
		}
		if desc != "" {
			conf["description"] = desc
		}
		conf["lock"] = "clone"
		ng.Conf = conf
		// A full clone copies each drive: qemu-img convert for a stopped
		// source, a block mirror (drive-<key>: …) for a running one.
		drive := ""
		if g.Running && full {
			drive = "drive-" + firstDisk(src)
		}
		var err error
		if full && bytes > 0 {
			err = tc.copyWithProgress(bytes, time.Duration(float64(bytes)/importRate*float64(time.Second)), drive, durClone)
		} else {
			err = tc.Sleep(durClone)
		}
		if err != nil {
			for _, volid := range guestVolumes(conf) {
				s.state.removeVolume(g.Node, volid)
			}
			delete(s.state.Guests, newid)
			if err == errInterrupted {
				// clone_vm's own signal handler.
				return fmt.Errorf("clone failed: interrupted by signal")
			}
			return fmt.Errorf("clone failed: %s", strings.TrimRight(asAPIError(err).Message, "\n"))
		}
		delete(conf, "lock")
		if newNode != g.Node {
			ng.Node = newNode
		}
		s.state.addVMToPool(newid, pool)
		// clone_vmfw_conf copies the firewall file when the worker starts
		// and remove_vmfw_conf drops it on failure: after the task, only
		// a finished clone has it.
		s.state.cloneFirewall(g.VMID, newid)
		return nil
	})
	s.setTaskTarget(upid, newid)
	return upid, nil
}

func (s *Server) lxcTemplate(r *Request) (any, error) {
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	_, err = s.withGuestLock(g.VMID, "lxc", func() (any, error) {
		if err := checkLock(g); err != nil {
			return nil, err
		}
		if len(g.Snapshots) > 0 {
			return nil, Fail("unable to create template, because CT contains snapshots")
		}
		if g.IsTemplate() {
			return nil, Fail("you can't convert a template to a template")
		}
		if g.Running {
			return nil, Fail("you can't convert a CT to template if the CT is running")
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	// Proxmox forks the worker but answers null, not its UPID.
	s.startTask(r, g.Node, "vztemplate", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.LockGuest(g.VMID, "lxc"); err != nil {
			return err
		}
		if err := tc.Sleep(durCTTemplate); err != nil {
			return err
		}
		for _, k := range sortedKeys(g.Conf) {
			if !isLxcVolumeKey(k) {
				continue
			}
			mp, err := parseLxcVolume(k, g.Conf[k])
			if err != nil || mountPointType(mp["volume"]) != "volume" {
				continue
			}
			v := s.state.volume(g.Node, mp["volume"])
			if v == nil || !strings.Contains(v.Name, "vm-") {
				continue
			}
			mp["volume"] = s.renameToBase(g.Node, v)
			g.Conf[k] = printLxcVolume(k, mp)
		}
		g.Conf["template"] = "1"
		return nil
	})
	return nil, nil
}

func (s *Server) lxcClone(r *Request) (any, error) {
	// pve-container API2/LXC.pm clone_vm checks the pool before reading
	// the source's config.
	if err := s.checkPoolExist(r); err != nil {
		return nil, err
	}
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	newid, _ := r.Int("newid")
	storage, target, snapname, pool := r.Str("storage"), r.Str("target"), r.Str("snapname"), r.Str("pool")
	if target == g.Node || target == "localhost" {
		target = ""
	}
	if target != "" && s.state.node(target) == nil {
		return nil, Fail("no such cluster node '%s'", target)
	}
	if storage != "" {
		st, err := s.storageConfig(storage)
		if err != nil {
			return nil, err
		}
		if target != "" && !st.Shared {
			return nil, Fail("can't clone to non-shared storage '%s'", storage)
		}
	}
	if err := checkLock(g); err != nil {
		return nil, err
	}
	if err := s.vmidUnusedErr(newid); err != nil {
		return nil, err
	}
	full := r.BoolOr("full", !g.IsTemplate())
	if storage != "" && !full {
		return nil, Fail("parameter 'storage' not allowed for linked clones")
	}
	if snapname != "" && g.Snapshots[snapname] == nil {
		return nil, Fail("snapshot '%s' does not exist", snapname)
	}
	src := g.Conf
	if snapname != "" {
		src = g.Snapshots[snapname].Conf
	}
	shared := true
	newConf := map[string]string{}
	mounts := map[string]map[string]string{}
	for _, k := range sortedKeys(src) {
		v := src[k]
		switch {
		case strings.HasPrefix(k, "unused"):
		case isLxcVolumeKey(k):
			mp, err := parseLxcVolume(k, v)
			if err != nil {
				return nil, Fail("unable to parse mount point '%s'", k)
			}
			if t := mountPointType(mp["volume"]); t != "volume" {
				return nil, Fail("unable to clone mountpoint '%s' (type %s)", k, t)
			}
			sid, _, _ := strings.Cut(mp["volume"], ":")
			if storage != "" {
				sid = storage
			}
			if st := s.state.storage(sid); st == nil || !st.Shared {
				shared = false
			}
			if err := s.check(r.User, "/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
				return nil, err
			}
			if full {
				if g.Running && snapname == "" {
					return nil, Fail("Full clone of a running container is only possible from a snapshot")
				}
			} else if sv := s.state.volume(g.Node, mp["volume"]); sv == nil || !isBaseVolume(sv.Name) {
				return nil, Fail("Linked clone feature for '%s' is not available", mp["volume"])
			}
			mounts[k] = mp
		case strings.HasPrefix(k, "net"):
			if n, err := parsePropString(lxcNetFormat, v, ""); err == nil {
				n["hwaddr"] = s.randomMAC()
				newConf[k] = printPropStringOrdered(lxcNetFormat, n)
				if err := s.lxcBridgeAccess(r.User, newConf[k]); err != nil {
					return nil, err
				}
			}
		case k == "parent" || k == "snaptime" || k == "snapstate" || k == "template" || k == "lock":
		default:
			newConf[k] = v
		}
	}
	if target != "" && !shared {
		return nil, Fail("can't clone CT to node '%s' (CT uses local storage)", target)
	}
	if h := r.Str("hostname"); h != "" {
		newConf["hostname"] = h
	}
	if d := r.Str("description"); d != "" {
		newConf["description"] = d
	}
	newConf["lock"] = "create"
	ng := &Guest{VMID: newid, Node: g.Node, Type: "lxc", Conf: newConf, RootSSHKeys: g.RootSSHKeys}
	ng.ensureMaps()
	s.state.Guests[newid] = ng
	g.Conf["lock"] = "disk"
	upid := s.startTask(r, g.Node, "vzclone", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		tc.Log("creating a clone of container %d with ID %d", g.VMID, newid)
		var created []string
		cleanup := func(err error) error {
			delete(g.Conf, "lock")
			for _, volid := range created {
				s.state.removeVolume(g.Node, volid)
			}
			delete(s.state.Guests, newid)
			return fmt.Errorf("clone failed: %s", strings.TrimRight(asAPIError(err).Message, "\n"))
		}
		var bytes int64
		for _, k := range sortedKeys(mounts) {
			mp := mounts[k]
			sv := s.state.volume(g.Node, mp["volume"])
			if sv == nil {
				return cleanup(Fail("volume '%s' does not exist", mp["volume"]))
			}
			dst := sv.Storage
			if storage != "" {
				dst = storage
			}
			var nv *Volume
			var err error
			if full {
				tc.Log("create full clone of mountpoint %s (%s)", k, sv.VolID())
				bytes += sv.Size
				nv, err = s.lxcAllocDisk(g.Node, dst, newid, sv.Size)
			} else {
				tc.Log("create linked clone of mount point %s (%s)", k, sv.VolID())
				nv, err = s.allocImage(g.Node, dst, newid, sv.Size, sv.Format, "")
				if nv != nil {
					nv.Parent = sv.VolID()
					nv.Content = "rootdir"
				}
			}
			if err != nil {
				return cleanup(err)
			}
			created = append(created, nv.VolID())
			mp["volume"] = nv.VolID()
			ng.Conf[k] = printLxcVolume(k, mp)
		}
		if err := tc.Sleep(durCTClone + time.Duration(float64(bytes)/importRate*float64(time.Second))); err != nil {
			return cleanup(err)
		}
		s.state.addVMToPool(newid, pool)
		// clone_vmfw_conf copies the firewall file when the worker starts
		// and remove_vmfw_conf drops it on failure: after the task, only
		// a finished clone has it.
		s.state.cloneFirewall(g.VMID, newid)
		delete(g.Conf, "lock")
		delete(ng.Conf, "lock")
		if target != "" {
			ng.Node = target
		}
		return nil
	})
	s.setTaskTarget(upid, newid)
	return upid, nil
}

// cloneFirewall is clone_vmfw_conf: the new guest gets a copy of the
// source's firewall options.
func (cs *clusterState) cloneFirewall(from, to int) {
	src, ok := cs.Firewall[from]
	if !ok {
		return
	}
	dst := map[string]string{}
	for k, v := range src {
		dst[k] = v
	}
	cs.Firewall[to] = dst
}

// resolveDstDiskFormat is QemuServer.pm resolve_dst_disk_format: without a
// format parameter the source volume's format is the hint, taken when the
// target storage supports it (Storage.pm resolve_format_hint), else the
// storage's default.
func (s *Server) resolveDstDiskFormat(storage string, src *Volume, format string) string {
	if format != "" {
		return format
	}
	st, err := s.storageConfig(storage)
	if err != nil || src == nil {
		return ""
	}
	if st.validFormat(src.Format) {
		return src.Format
	}
	return st.defaultFormat()
}
