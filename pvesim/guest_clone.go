package pvesim

// Templates and clones (POST .../template and .../clone) for VMs then
// containers.

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

func (s *Server) qemuTemplate(r *route.Request, g *Guest) (any, error) {
	only := r.Str("disk")
	// load_and_check runs before the worker forks and again under the
	// config lock. qemu-server sets no "lock: template": it writes
	// template: 1 first, then turns the disks into base volumes one by one.
	loadAndCheck := func() error {
		if err := s.configGone(g, g.Node); err != nil {
			return err
		}
		if err := checkLock(g); err != nil {
			return err
		}
		if len(g.Snapshots) > 0 {
			return route.Fail("unable to create template, because VM contains snapshots")
		}
		if g.IsTemplate() && only == "" {
			return route.Fail("you can't convert a template to a template")
		}
		if g.Running {
			return route.Fail("you can't convert a VM to template if VM is running")
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

// qemuCloneJob is one POST .../clone of a VM: its parameters and what
// clone_vm's $load_and_check found.
type qemuCloneJob struct {
	g                                 *Guest
	newid                             int
	storage, format, target, snapname string
	pool, name, desc                  string
	full, running                     bool
	src                               map[string]string // the config or snapshot cloned
}

// qemuClone is qemu-server API2/Qemu.pm clone_vm: $load_and_check before
// forking, then the worker under the source's and the target's locks.
func (s *Server) qemuClone(r *route.Request, g *Guest) (any, error) {
	j := &qemuCloneJob{g: g, storage: r.Str("storage"), format: r.Str("format"), target: r.Str("target"), snapname: r.Str("snapname")}
	j.newid, _ = r.Int("newid")
	if j.target == g.Node || j.target == "localhost" {
		j.target = ""
	}
	if err := s.qemuCloneChecks(r, j); err != nil {
		return nil, err
	}
	if err := s.qemuCloneDrivePlan(j); err != nil {
		return nil, err
	}
	if _, exists := s.state.Guests[j.newid]; exists {
		return nil, route.Fail("unable to create VM %d: config file already exists", j.newid)
	}
	ng := &Guest{VMID: j.newid, Node: g.Node, Type: "qemu", Conf: map[string]string{"lock": "clone"}}
	ng.ensureMaps()
	s.state.Guests[j.newid] = ng
	j.name, j.desc = r.Str("name"), r.Str("description")
	upid := s.startTask(r, g.Node, "qmclone", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		return s.qemuCloneWorker(tc, j, ng)
	})
	s.setTaskTarget(upid, j.newid)
	return upid, nil
}

// qemuCloneChecks is the first half of clone_vm's $load_and_check: pool,
// target node and storage, then the source's lock, snapshot and clone
// mode, and the caller's access to the storages and bridges it uses.
func (s *Server) qemuCloneChecks(r *route.Request, j *qemuCloneJob) error {
	g, storage, target := j.g, j.storage, j.target
	// clone_vm's $load_and_check: the pool first.
	if err := s.checkPoolExist(r); err != nil {
		return err
	}
	j.pool = r.Str("pool")
	if target != "" && s.state.node(target) == nil {
		return route.Fail("no such cluster node '%s'", target)
	}
	if storage != "" {
		// clone_vm: enabled on this node, images, then enabled on the
		// target and shared.
		st, err := s.storageCheckEnabled(storage, g.Node)
		if err != nil {
			return err
		}
		if !st.allows("images") {
			return route.ParamErr("storage", fmt.Sprintf("storage '%s' does not support vm images", storage))
		}
		if target != "" {
			if _, err := s.storageCheckEnabled(storage, target); err != nil {
				return err
			}
			if !st.Shared {
				return route.Fail("can't clone to non-shared storage '%s'", storage)
			}
		}
	}
	if err := checkLock(g); err != nil {
		return err
	}
	if j.snapname != "" && g.Snapshots[j.snapname] == nil {
		return route.Fail("snapshot '%s' does not exist", j.snapname)
	}
	j.full = r.BoolOr("full", !g.IsTemplate())
	if storage != "" && !j.full {
		return route.Fail("parameter 'storage' not allowed for linked clones")
	}
	if j.format != "" && !j.full {
		return route.Fail("parameter 'format' not allowed for linked clones")
	}
	j.src = g.Conf
	if j.snapname != "" {
		j.src = g.Snapshots[j.snapname].Conf
	}
	j.running = g.Running
	if _, tpm := j.src["tpmstate0"]; tpm && j.full && j.running && j.snapname == "" {
		return route.Fail("cannot clone TPM state while VM is running")
	}
	if err := s.qemuCloneStorageAccess(r.User, j.src, storage); err != nil {
		return err
	}
	return s.qemuBridgeAccess(r.User, j.src)
}

// qemuCloneDrivePlan is $load_and_check's walk over the drives: each must
// parse and support the clone mode, and a clone to another node needs
// every volume on shared storage.
func (s *Server) qemuCloneDrivePlan(j *qemuCloneJob) error {
	shared := true
	for _, k := range sortedKeys(j.src) {
		if !isQemuDiskKey(k) {
			continue
		}
		d, err := parseDrive(k, j.src[k])
		if err != nil {
			return route.Fail("unable to parse drive options for '%s'", k)
		}
		if st := s.state.storage(strings.SplitN(d["file"], ":", 2)[0]); st != nil && !st.Shared {
			shared = false
		}
		if driveIsCdrom(d) && !driveIsCloudinit(d) {
			continue
		}
		v := s.state.volume(j.g.Node, d["file"])
		isBase := v != nil && isBaseVolume(v.Name)
		if !j.full && !driveIsCloudinit(d) && k != "tpmstate0" && !isBase {
			return route.Fail("Linked clone feature is not supported for '%s' (%s)", d["file"], k)
		}
	}
	if j.target != "" && !shared {
		return route.Fail("can't clone VM to node '%s' (VM uses local storage)", j.target)
	}
	return nil
}

// qemuCloneWorker is clone_vm's worker: $lock_source_vm and
// $lock_target_vm, $load_and_check again under the locks, then $clonefn.
func (s *Server) qemuCloneWorker(tc *taskCtx, j *qemuCloneJob, ng *Guest) error {
	g, newid := j.g, j.newid
	// Proxmox locks the source shared (exclusive if it ran when the
	// call came in) and the target exclusively, each waiting 1 second,
	// then repeats the early checks under the locks.
	if err := tc.lock(g.VMID, "qemu", !j.running, time.Second); err != nil {
		delete(s.state.Guests, newid)
		return err
	}
	if err := tc.lock(newid, "qemu", false, time.Second); err != nil {
		delete(s.state.Guests, newid)
		return err
	}
	if err := s.qemuCloneRecheck(j); err != nil {
		delete(s.state.Guests, newid)
		return err
	}
	// clone_vm's $clonefn: the only place naming the new VMID, as the
	// task's id is the source's.
	tc.Log("creating a clone of VM %d with ID %d", g.VMID, newid)
	if j.full {
		tc.Log("create full clone of drives")
	} else {
		tc.Log("create linked clone of drives")
	}
	conf, bytes, err := s.qemuCloneConfig(j)
	if err != nil {
		return err
	}
	s.qemuCloneIdentity(j, conf)
	conf["lock"] = "clone"
	ng.Conf = conf
	// A full clone copies each drive: qemu-img convert for a stopped
	// source, a block mirror (drive-<key>: …) for a running one.
	drive := ""
	if g.Running && j.full {
		drive = "drive-" + firstDisk(j.src)
	}
	if j.full && bytes > 0 {
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
		return fmt.Errorf("clone failed: %s", strings.TrimRight(route.AsAPIError(err).Message, "\n"))
	}
	delete(conf, "lock")
	if j.target != "" && j.target != g.Node {
		ng.Node = j.target
	}
	s.state.addVMToPool(newid, j.pool)
	// clone_vmfw_conf copies the firewall file when the worker starts
	// and remove_vmfw_conf drops it on failure: after the task, only
	// a finished clone has it.
	s.state.cloneFirewall(g.VMID, newid)
	return nil
}

// qemuCloneRecheck is $load_and_check's second run, under the locks.
func (s *Server) qemuCloneRecheck(j *qemuCloneJob) error {
	g := j.g
	if err := s.configGone(g, g.Node); err != nil {
		return err
	}
	if err := checkLock(g); err != nil {
		return err
	}
	if g.Running != j.running {
		return route.Fail("unexpected state change")
	}
	if j.snapname != "" && g.Snapshots[j.snapname] == nil {
		return route.Fail("snapshot '%s' does not exist", j.snapname)
	}
	return nil
}

// qemuCloneConfig is the new config of $load_and_check and $clonefn's
// clone_disk per drive: snapshot state and unused volumes dropped, new
// MAC addresses, each drive copied, linked or (cloud-init) allocated
// afresh. It returns the bytes a full clone copies; on failure the new
// volumes and the placeholder guest are gone.
func (s *Server) qemuCloneConfig(j *qemuCloneJob) (map[string]string, int64, error) {
	g, newid := j.g, j.newid
	conf := map[string]string{}
	var bytes int64
	for _, k := range sortedKeys(j.src) {
		v := j.src[k]
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
				return nil, 0, route.Fail("clone failed: volume '%s' does not exist", d["file"])
			}
			nv, err := s.qemuCloneDisk(j, d, sv)
			if err == nil && j.full && !driveIsCloudinit(d) {
				bytes += sv.Size
			}
			if err != nil {
				for _, volid := range guestVolumes(conf) {
					s.state.removeVolume(g.Node, volid)
				}
				delete(s.state.Guests, newid)
				return nil, 0, fmt.Errorf("clone failed: %s", strings.TrimRight(err.Error(), "\n"))
			}
			d["file"] = nv.VolID()
			conf[k] = printDrive(k, d)
		default:
			conf[k] = v
		}
	}
	return conf, bytes, nil
}

// qemuCloneDisk is QemuServer.pm clone_disk for one drive: a new
// cloud-init volume, a full copy in the resolved format, or a linked
// clone of a base volume.
func (s *Server) qemuCloneDisk(j *qemuCloneJob, d map[string]string, sv *Volume) (*Volume, error) {
	node, newid := j.g.Node, j.newid
	dstStorage := sv.Storage
	if j.storage != "" && j.full {
		dstStorage = j.storage
	}
	switch {
	case driveIsCloudinit(d):
		st, _ := s.storageConfig(dstStorage)
		name, fmtName := fmt.Sprintf("vm-%d-cloudinit", newid), ""
		if st != nil && st.fileBased() {
			fmtName = "qcow2"
			name += ".qcow2"
		}
		return s.allocImage(node, dstStorage, newid, sv.Size, fmtName, name)
	case j.full:
		return s.allocImage(node, dstStorage, newid, sv.Size, s.resolveDstDiskFormat(dstStorage, sv, j.format), "")
	default:
		return s.linkedCloneImage(node, sv, newid)
	}
}

// qemuCloneIdentity is $clonefn's new identity: a fresh SMBIOS UUID, a
// fresh vmgenid where the source had one, the name and description.
func (s *Server) qemuCloneIdentity(j *qemuCloneJob, conf map[string]string) {
	sm, _ := parsePropString(route.NamedProps("pve-qm-smbios1"), conf["smbios1"], "")
	if sm == nil {
		sm = map[string]string{}
	}
	sm["uuid"] = s.randomUUID()
	conf["smbios1"] = printPropString(route.NamedProps("pve-qm-smbios1"), sm)
	if conf["vmgenid"] != "" {
		conf["vmgenid"] = s.randomUUID()
	}
	if j.name != "" {
		conf["name"] = j.name
	} else {
		base := j.src["name"]
		if base == "" {
			base = strconv.Itoa(j.g.VMID)
		}
		conf["name"] = "Copy-of-VM-" + base
	}
	if j.desc != "" {
		conf["description"] = j.desc
	}
}

func (s *Server) lxcTemplate(r *route.Request, g *Guest) (any, error) {
	_, err := s.withGuestLock(g.VMID, "lxc", func() (any, error) {
		if err := checkLock(g); err != nil {
			return nil, err
		}
		if len(g.Snapshots) > 0 {
			return nil, route.Fail("unable to create template, because CT contains snapshots")
		}
		if g.IsTemplate() {
			return nil, route.Fail("you can't convert a template to a template")
		}
		if g.Running {
			return nil, route.Fail("you can't convert a CT to template if the CT is running")
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

// lxcCloneJob is one POST .../clone of a container: its parameters and
// the mount points clone_vm found to copy.
type lxcCloneJob struct {
	g                               *Guest
	newid                           int
	storage, target, snapname, pool string
	full                            bool
	mounts                          map[string]map[string]string
}

// lxcClone is pve-container API2/LXC.pm clone_vm: the checks and the new
// config before forking, then $realcmd copies the mount points.
func (s *Server) lxcClone(r *route.Request) (any, error) {
	// pve-container API2/LXC.pm clone_vm checks the pool before reading
	// the source's config.
	if err := s.checkPoolExist(r); err != nil {
		return nil, err
	}
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	j := &lxcCloneJob{g: g, storage: r.Str("storage"), target: r.Str("target"), snapname: r.Str("snapname"), pool: r.Str("pool")}
	j.newid, _ = r.Int("newid")
	if j.target == g.Node || j.target == "localhost" {
		j.target = ""
	}
	if err := s.lxcCloneChecks(r, j); err != nil {
		return nil, err
	}
	newConf, err := s.lxcCloneConfig(r, j)
	if err != nil {
		return nil, err
	}
	if h := r.Str("hostname"); h != "" {
		newConf["hostname"] = h
	}
	if d := r.Str("description"); d != "" {
		newConf["description"] = d
	}
	newConf["lock"] = "create"
	ng := &Guest{VMID: j.newid, Node: g.Node, Type: "lxc", Conf: newConf, RootSSHKeys: g.RootSSHKeys}
	ng.ensureMaps()
	s.state.Guests[j.newid] = ng
	g.Conf["lock"] = "disk"
	upid := s.startTask(r, g.Node, "vzclone", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		return s.lxcCloneWorker(tc, j, ng)
	})
	s.setTaskTarget(upid, j.newid)
	return upid, nil
}

// lxcCloneChecks is clone_vm's checks before the config is read: target
// node and storage, then the source's lock, the new id and the clone mode.
func (s *Server) lxcCloneChecks(r *route.Request, j *lxcCloneJob) error {
	if j.target != "" && s.state.node(j.target) == nil {
		return route.Fail("no such cluster node '%s'", j.target)
	}
	if j.storage != "" {
		st, err := s.storageConfig(j.storage)
		if err != nil {
			return err
		}
		if j.target != "" && !st.Shared {
			return route.Fail("can't clone to non-shared storage '%s'", j.storage)
		}
	}
	if err := checkLock(j.g); err != nil {
		return err
	}
	if err := s.vmidUnusedErr(j.newid); err != nil {
		return err
	}
	j.full = r.BoolOr("full", !j.g.IsTemplate())
	if j.storage != "" && !j.full {
		return route.Fail("parameter 'storage' not allowed for linked clones")
	}
	if j.snapname != "" && j.g.Snapshots[j.snapname] == nil {
		return route.Fail("snapshot '%s' does not exist", j.snapname)
	}
	return nil
}

// lxcCloneConfig is clone_vm's walk over the source's config: each mount
// point must be a volume the caller may allocate on and that supports
// the clone mode, networks get new MAC addresses (and a bridge check),
// snapshot state is dropped. It fills j.mounts.
func (s *Server) lxcCloneConfig(r *route.Request, j *lxcCloneJob) (map[string]string, error) {
	g := j.g
	src := g.Conf
	if j.snapname != "" {
		src = g.Snapshots[j.snapname].Conf
	}
	shared := true
	newConf := map[string]string{}
	j.mounts = map[string]map[string]string{}
	for _, k := range sortedKeys(src) {
		v := src[k]
		switch {
		case strings.HasPrefix(k, "unused"):
		case isLxcVolumeKey(k):
			mp, err := parseLxcVolume(k, v)
			if err != nil {
				return nil, route.Fail("unable to parse mount point '%s'", k)
			}
			if t := mountPointType(mp["volume"]); t != "volume" {
				return nil, route.Fail("unable to clone mountpoint '%s' (type %s)", k, t)
			}
			sid, _, _ := strings.Cut(mp["volume"], ":")
			if j.storage != "" {
				sid = j.storage
			}
			if st := s.state.storage(sid); st == nil || !st.Shared {
				shared = false
			}
			if err := s.check(r.User, "/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
				return nil, err
			}
			if j.full {
				if g.Running && j.snapname == "" {
					return nil, route.Fail("Full clone of a running container is only possible from a snapshot")
				}
			} else if sv := s.state.volume(g.Node, mp["volume"]); sv == nil || !isBaseVolume(sv.Name) {
				return nil, route.Fail("Linked clone feature for '%s' is not available", mp["volume"])
			}
			j.mounts[k] = mp
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
	if j.target != "" && !shared {
		return nil, route.Fail("can't clone CT to node '%s' (CT uses local storage)", j.target)
	}
	return newConf, nil
}

// lxcCloneWorker is clone_vm's $realcmd: each mount point copied or
// linked, then the pool, the firewall file and the move to the target.
// On failure the new volumes and the new config are gone.
func (s *Server) lxcCloneWorker(tc *taskCtx, j *lxcCloneJob, ng *Guest) error {
	g, newid := j.g, j.newid
	tc.Log("creating a clone of container %d with ID %d", g.VMID, newid)
	var created []string
	cleanup := func(err error) error {
		delete(g.Conf, "lock")
		for _, volid := range created {
			s.state.removeVolume(g.Node, volid)
		}
		delete(s.state.Guests, newid)
		return fmt.Errorf("clone failed: %s", strings.TrimRight(route.AsAPIError(err).Message, "\n"))
	}
	var bytes int64
	for _, k := range sortedKeys(j.mounts) {
		mp := j.mounts[k]
		sv := s.state.volume(g.Node, mp["volume"])
		if sv == nil {
			return cleanup(route.Fail("volume '%s' does not exist", mp["volume"]))
		}
		dst := sv.Storage
		if j.storage != "" {
			dst = j.storage
		}
		var nv *Volume
		var err error
		if j.full {
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
	s.state.addVMToPool(newid, j.pool)
	// clone_vmfw_conf copies the firewall file when the worker starts
	// and remove_vmfw_conf drops it on failure: after the task, only
	// a finished clone has it.
	s.state.cloneFirewall(g.VMID, newid)
	delete(g.Conf, "lock")
	delete(ng.Conf, "lock")
	if j.target != "" {
		ng.Node = j.target
	}
	return nil
}

// cloneFirewall is clone_vmfw_conf: the new guest's file, if any, is
// removed and it gets a copy of the source's (options, rules, aliases and
// IP sets).
func (cs *clusterState) cloneFirewall(from, to int) {
	delete(cs.Firewall, to)
	delete(cs.FirewallFiles, fwGuestFile(to))
	if raw, ok := cs.FirewallFiles[fwGuestFile(from)]; ok {
		cs.FirewallFiles[fwGuestFile(to)] = raw
	}
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
