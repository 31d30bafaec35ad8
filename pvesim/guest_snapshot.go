package pvesim

// Snapshots (list, create, delete, rollback) for VMs then containers.

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

// qemuSnapshotList is snapshot_list (qemu-server API2/Qemu.pm): every
// snapshot with vmstate 0 or 1, then "current", whose parent is the
// config's parent only.
func (s *Server) qemuSnapshotList(r *route.Request, g *Guest) (any, error) {
	return snapshotListJSON(g), nil
}

func (s *Server) qemuSnapshotCreate(r *route.Request, g *Guest) (any, error) {
	// API2/Qemu.pm snapshot: reserved names, before anything is locked.
	name := r.Str("snapname")
	if name == "current" {
		return nil, route.Fail("unable to use snapshot name 'current' (reserved name)")
	}
	if strings.ToLower(name) == "pending" {
		return nil, route.Fail("unable to use snapshot name 'pending' (reserved name)")
	}
	desc, vmstate := r.Str("description"), r.Bool("vmstate")
	return s.startTask(r, g.Node, "qmsnapshot", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		// AbstractConfig.pm __snapshot_prepare: lock_config, then
		// load_config (a destroy that held the lock took the file away).
		if err := tc.lockConfig(g); err != nil {
			return err
		}
		return s.takeSnapshot(tc, g, name, desc, vmstate, durSnapshot)
	}), nil
}

func (s *Server) qemuSnapshotDelete(r *route.Request, g *Guest) (any, error) {
	return s.snapshotDeleteTask(r, g, "qmdelsnapshot", durSnapshot), nil
}

// qemuSnapshotRollback is rollback (API2/Qemu.pm): start=1 needs
// VM.PowerMgmt as well; the worker is snapshot_rollback, then vm_start when
// asked and the VM does not run (a snapshot with RAM starts it anyway).
func (s *Server) qemuSnapshotRollback(r *route.Request, g *Guest) (any, error) {
	name := r.Str("snapname")
	start := r.Bool("start")
	if start {
		if err := s.check(r.User, "/vms/"+strconv.Itoa(g.VMID), "VM.PowerMgmt"); err != nil {
			return nil, err
		}
	}
	return s.startTask(r, g.Node, "qmrollback", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		sn, err := s.rollbackSnapshot(tc, g, "qemu", name)
		if err != nil {
			return err
		}
		if sn.VMState {
			// __snapshot_rollback_vm_start: QEMU resumes from the saved RAM.
			g.Running, g.StartedAt, g.KVM = true, s.clock.Now(), kvmCommand(g.Conf)
		}
		if start && !g.Running {
			return s.rollbackStart(tc, g)
		}
		return nil
	}), nil
}

// snapshotListJSON is the snapshot tree as GET .../snapshot lists it
// (snapshot_list of API2/Qemu.pm and API2/LXC/Snapshot.pm): QEMU entries
// carry vmstate 0 or 1, LXC entries none.
func snapshotListJSON(g *Guest) []map[string]any {
	out := []map[string]any{}
	for _, name := range sortedKeys(g.Snapshots) {
		sn := g.Snapshots[name]
		e := map[string]any{"name": name, "snaptime": sn.SnapTime, "description": sn.Description}
		if g.Type == "qemu" {
			e["vmstate"] = 0
			if sn.VMState {
				e["vmstate"] = 1
			}
		}
		if sn.Parent != "" {
			e["parent"] = sn.Parent
		}
		out = append(out, e)
	}
	cur := map[string]any{"name": "current", "description": "You are here!", "digest": g.Digest(), "running": 0}
	if g.Running {
		cur["running"] = 1
	}
	if p := g.Conf["parent"]; p != "" {
		cur["parent"] = p
	}
	return append(out, cur)
}

func (s *Server) lxcSnapshotCreate(r *route.Request, g *Guest) (any, error) {
	name := r.Str("snapname")
	if name == "current" || name == "vzdump" {
		return nil, route.Fail("unable to use snapshot name '%s' (reserved name)", name)
	}
	desc := r.Str("description")
	return s.startTask(r, g.Node, "vzsnapshot", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.lockConfig(g); err != nil {
			return err
		}
		return s.takeSnapshot(tc, g, name, desc, false, durCTSnapshot)
	}), nil
}

func (s *Server) lxcSnapshotDelete(r *route.Request, g *Guest) (any, error) {
	return s.snapshotDeleteTask(r, g, "vzdelsnapshot", durCTSnapshot), nil
}

// lxcSnapshotRollback is rollback (pve-container API2/LXC/Snapshot.pm):
// snapshot_rollback, then vm_start when asked.
func (s *Server) lxcSnapshotRollback(r *route.Request, g *Guest) (any, error) {
	name := r.Str("snapname")
	start := r.Bool("start")
	return s.startTask(r, g.Node, "vzrollback", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if _, err := s.rollbackSnapshot(tc, g, "lxc", name); err != nil {
			return err
		}
		if start {
			return s.rollbackStart(tc, g)
		}
		return nil
	}), nil
}

// rollbackSnapshot is snapshot_rollback (pve-guest-common
// AbstractConfig.pm) for QEMU and LXC alike, in its order: a template is
// refused, the snapshot must exist, every volume must be able to roll back
// (volume_rollback_is_possible), the guest must not be locked; then the
// guest is stopped hard (__snapshot_rollback_vm_stop), holds lock
// "rollback" while the volumes roll back, and gets the snapshot's config
// (keeping its own description and unused volumes) with the snapshot as
// parent.
func (s *Server) rollbackSnapshot(tc *taskCtx, g *Guest, kind, name string) (*Snapshot, error) {
	if err := tc.LockGuest(g.VMID, kind); err != nil {
		return nil, err
	}
	if g.IsTemplate() {
		return nil, route.Fail("you can't rollback if vm is a template")
	}
	sn := g.Snapshots[name]
	if sn == nil {
		return nil, route.Fail("snapshot '%s' does not exist", name)
	}
	if err := s.rollbackPossible(g, sn); err != nil {
		return nil, err
	}
	if err := checkLock(g); err != nil {
		return nil, err
	}
	g.Running, g.StartedAt = false, time.Time{}
	g.Conf["lock"] = "rollback"
	// The volumes roll back outside the config file lock, under lock
	// "rollback" alone. The HA stack's LRM, polling, finds a started
	// service's guest stopped and starts it (LRM.pm exec_resource_agent);
	// the simulator lets that round come now, while the start must fail on
	// the lock.
	tc.unlock(g.VMID)
	s.haRound()
	d := durSnapshot
	if kind == "lxc" {
		d = durCTSnapshot
	}
	if err := tc.Sleep(d); err != nil {
		return nil, err
	}
	if err := tc.LockGuest(g.VMID, kind); err != nil {
		return nil, err
	}
	restoreSnapshot(g, sn)
	return sn, nil
}

// rollbackStart is the start after a rollback (API2/Qemu.pm and
// API2/LXC/Snapshot.pm rollback call the API's vm_start): for a guest under
// HA that is a request to the HA stack, else a start in the same worker.
func (s *Server) rollbackStart(tc *taskCtx, g *Guest) error {
	tc.unlock(g.VMID)
	if s.haManaged(g) {
		return s.haStartRequest(tc, g)
	}
	if g.Type == "lxc" {
		return s.lxcStartGuest(tc, g, false)
	}
	return s.qemuStartGuest(tc, g, false)
}

// snapshotDeleteTask starts the delsnapshot worker of either guest type
// (API2/Qemu.pm and API2/LXC/Snapshot.pm delsnapshot run the same
// snapshot_delete of AbstractConfig.pm).
func (s *Server) snapshotDeleteTask(r *route.Request, g *Guest, typ string, d time.Duration) string {
	name := r.Str("snapname")
	return s.startTask(r, g.Node, typ, strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		sn, err := lockedSnapshot(tc, g, g.Type, name, d)
		if err != nil {
			return err
		}
		removeSnapshot(g, sn)
		return nil
	})
}

// lockedSnapshot is the start of snapshot_delete (AbstractConfig.pm) for
// QEMU and LXC alike: take the guest's lock, find the snapshot, set lock
// "snapshot-delete" (refused when another lock is set), refuse a template,
// and spend the operation's duration under that lock.
func lockedSnapshot(tc *taskCtx, g *Guest, kind, name string, d time.Duration) (*Snapshot, error) {
	if err := tc.LockGuest(g.VMID, kind); err != nil {
		return nil, err
	}
	sn := g.Snapshots[name]
	if sn == nil {
		return nil, route.Fail("snapshot '%s' does not exist", name)
	}
	if err := checkLock(g); err != nil {
		return nil, err
	}
	if g.IsTemplate() {
		return nil, route.Fail("you can't delete a snapshot if vm is a template")
	}
	g.Conf["lock"] = "snapshot-delete"
	err := tc.Sleep(d)
	delete(g.Conf, "lock")
	if err != nil {
		return nil, err
	}
	return sn, nil
}

// snapshotFeature is has_feature('snapshot') as __snapshot_prepare asks it
// (QemuConfig.pm and LXC/Config.pm has_feature): every volume of the
// current config must have the feature on its storage (QEMU skips CD-ROM
// drives, cloud-init included); an LXC bind or device mount point is no
// storage volume and never has it (Storage.pm volume_has_feature).
func (s *Server) snapshotFeature(g *Guest) error {
	for _, k := range sortedKeys(g.Conf) {
		var volid string
		switch {
		case g.Type == "qemu" && isQemuDiskKey(k):
			d, err := parseDrive(k, g.Conf[k])
			if err != nil || driveIsCdrom(d) {
				continue
			}
			volid = d["file"]
		case g.Type == "lxc" && isLxcVolumeKey(k):
			mp, err := parseLxcVolume(k, g.Conf[k])
			if err != nil {
				continue
			}
			volid = mp["volume"]
		default:
			continue
		}
		ok, err := s.volumeHasSnapshot(volid)
		if err != nil {
			return err
		}
		if !ok {
			return route.Fail("snapshot feature is not available")
		}
	}
	return nil
}

// volumeHasSnapshot is volume_has_feature(snapshot) for the current state
// of a volume (Storage.pm, then the plugin's volume_has_feature): a path is
// no storage volume; LVM-thin, ZFS and RBD snapshot anything; BTRFS qcow2,
// raw and subvol; the file plugins (Plugin.pm: dir, NFS, CIFS, CephFS) and
// LVM qcow2 only; iSCSI, PBS and ESXi nothing.
func (s *Server) volumeHasSnapshot(volid string) (bool, error) {
	sid, volname, ok := strings.Cut(volid, ":")
	if !ok || strings.HasPrefix(volid, "/") {
		return false, nil
	}
	st, err := s.storageConfig(sid)
	if err != nil {
		return false, err
	}
	format := volumeFormat(volname)
	switch st.Type {
	case "lvmthin", "zfspool", "zfs", "rbd":
		return true, nil
	case "btrfs":
		return format == "qcow2" || format == "raw" || format == "subvol", nil
	case "dir", "nfs", "cifs", "cephfs", "glusterfs", "lvm":
		return format == "qcow2", nil
	}
	return false, nil
}

// volumeFormat is the format parse_volname reads from a volume name: the
// file extension on file storages, subvol for "subvol-" datasets, raw for
// block devices.
func volumeFormat(volname string) string {
	base := volname[strings.LastIndex(volname, "/")+1:]
	if i := strings.LastIndex(base, "."); i >= 0 {
		switch ext := base[i+1:]; ext {
		case "raw", "qcow2", "vmdk", "subvol":
			return ext
		}
	}
	if strings.HasPrefix(base, "subvol-") {
		return "subvol"
	}
	return "raw"
}

// rollbackPossible is __snapshot_rollback_vol_possible for each volume of
// the snapshot (Storage.pm volume_rollback_is_possible, then the plugin's):
// a volume whose storage rolls back only to its most recent snapshot is
// blocked by a later snapshot holding it. Those are ZFS datasets
// (ZFSPoolPlugin.pm, naming the volume id), LVM volumes (LVMPlugin.pm:
// qcow2 chains only, "can't rollback snapshot for 'raw' volume") and file
// storages with snapshot-as-volume-chain (Plugin.pm), both naming the
// volume name; the other simulated storages always can.
func (s *Server) rollbackPossible(g *Guest, sn *Snapshot) error {
	for _, volid := range snapshotVolumes(g.Type, sn.Conf) {
		sid, volname, _ := strings.Cut(volid, ":")
		st := s.state.storage(sid)
		if st == nil {
			continue
		}
		named := volname
		switch {
		case st.Type == "zfspool" || st.Type == "zfs":
			named = volid
		case st.Type == "lvm":
			if f := volumeFormat(volname); f != "qcow2" {
				return route.Fail("can't rollback snapshot for '%s' volume", f)
			}
		case st.fileBased() && st.VolumeChain:
		default:
			continue
		}
		for _, other := range g.Snapshots {
			if other == sn || other.SnapTime < sn.SnapTime || (other.SnapTime == sn.SnapTime && other.Name <= sn.Name) {
				continue
			}
			if slices.Contains(snapshotVolumes(g.Type, other.Conf), volid) {
				return route.Fail("can't rollback, '%s' is not most recent snapshot on '%s'", sn.Name, named)
			}
		}
	}
	return nil
}

// snapshotVolumes lists the storage volumes of a snapshot's config.
func snapshotVolumes(typ string, conf map[string]string) []string {
	if typ == "lxc" {
		return lxcVolumes(conf)
	}
	return guestVolumes(conf)
}

// removeSnapshot drops sn and hands its children, and the current state if
// it was based on sn, to sn's parent, as Proxmox's snapshot_delete does.
func removeSnapshot(g *Guest, sn *Snapshot) {
	for _, other := range g.Snapshots {
		if other.Parent == sn.Name {
			other.Parent = sn.Parent
		}
	}
	if g.Conf["parent"] == sn.Name {
		if sn.Parent != "" {
			g.Conf["parent"] = sn.Parent
		} else {
			delete(g.Conf, "parent")
		}
	}
	delete(g.Snapshots, sn.Name)
}

// takeSnapshot is the common body of a snapshot task once the guest's lock
// is held, for QEMU and LXC alike: refuse templates, locked guests and a
// used name, hold lock "snapshot" for the operation's duration, then record
// the config (without parent) as the new snapshot and make it the parent of
// the current state. vmstate counts only for a running VM.
func (s *Server) takeSnapshot(tc *taskCtx, g *Guest, name, desc string, vmstate bool, d time.Duration) error {
	if g.IsTemplate() {
		return route.Fail("you can't take a snapshot if it's a template")
	}
	if err := checkLock(g); err != nil {
		return err
	}
	if g.Snapshots[name] != nil {
		return route.Fail("snapshot name '%s' already used", name)
	}
	if err := s.snapshotFeature(g); err != nil {
		return err
	}
	g.Conf["lock"] = "snapshot"
	if err := tc.Sleep(d); err != nil {
		delete(g.Conf, "lock")
		return err
	}
	delete(g.Conf, "lock")
	conf := snapshotCopyConf(g.Conf)
	delete(conf, "parent")
	g.Snapshots[name] = &Snapshot{Name: name, Description: desc, Parent: g.Conf["parent"], SnapTime: s.clock.Now().Unix(), VMState: vmstate && g.Running, Conf: conf}
	g.Conf["parent"] = name
	return nil
}

// restoreSnapshot makes sn's config the current one, with sn as parent and
// no pending changes, as __snapshot_apply_config does for QEMU and LXC
// alike: the guest keeps its description and its unusedN volumes.
func restoreSnapshot(g *Guest, sn *Snapshot) {
	conf := snapshotCopyConf(sn.Conf)
	for k, v := range g.Conf {
		if _, unused := route.IndexOf(k, "unused"); unused || k == "description" {
			conf[k] = v
		}
	}
	conf["parent"] = sn.Name
	g.Conf = conf
	g.Pending = map[string]string{}
	g.PendingDelete = map[string]bool{}
}

// snapshotCopyConf is __snapshot_copy_config: the config without the keys
// a snapshot never holds (lock, digest, description, unusedN, ...).
func snapshotCopyConf(src map[string]string) map[string]string {
	out := make(map[string]string, len(src))
	for k, v := range src {
		switch k {
		case "snapshots", "snapstate", "snaptime", "vmstate", "lock", "digest", "description":
			continue
		}
		if _, unused := route.IndexOf(k, "unused"); unused {
			continue
		}
		out[k] = v
	}
	return out
}

// snapshotIndex serves GET .../snapshot/{snapname}: the subdirectories of an
// existing snapshot.
func (s *Server) snapshotIndex(load func(*route.Request) (*Guest, error)) route.HandlerFunc {
	return func(r *route.Request) (any, error) {
		g, err := load(r)
		if err != nil {
			return nil, err
		}
		if g.Snapshots[r.Str("snapname")] == nil {
			return nil, route.Fail("snapshot '%s' does not exist", r.Str("snapname"))
		}
		return subdirs("rollback", "config"), nil
	}
}

// snapshotConfig serves GET .../snapshot/{snapname}/config: the snapshot's
// config typed by the guest type's keys, with snaptime, description and
// parent.
func (s *Server) snapshotConfig(load func(*route.Request) (*Guest, error), keyType func(string) route.Type) route.HandlerFunc {
	return func(r *route.Request) (any, error) {
		g, err := load(r)
		if err != nil {
			return nil, err
		}
		sn := g.Snapshots[r.Str("snapname")]
		if sn == nil {
			return nil, route.Fail("snapshot '%s' does not exist", r.Str("snapname"))
		}
		out := map[string]any{}
		for k, v := range sn.Conf {
			out[k] = typedValue(keyType(k), v)
		}
		out["snaptime"] = sn.SnapTime
		if sn.Description != "" {
			out["description"] = sn.Description
		}
		if sn.Parent != "" {
			out["parent"] = sn.Parent
		}
		return out, nil
	}
}

// snapshotUpdate serves PUT .../snapshot/{snapname}/config: it changes the
// description under the guest's config lock.
func (s *Server) snapshotUpdate(load func(*route.Request) (*Guest, error), kind string) route.HandlerFunc {
	return func(r *route.Request) (any, error) {
		g, err := load(r)
		if err != nil {
			return nil, err
		}
		return s.withGuestLock(g.VMID, kind, func() (any, error) {
			sn := g.Snapshots[r.Str("snapname")]
			if sn == nil {
				return nil, route.Fail("snapshot '%s' does not exist", r.Str("snapname"))
			}
			if r.Has("description") {
				sn.Description = r.Str("description")
			}
			return nil, nil
		})
	}
}
