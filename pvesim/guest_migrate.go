package pvesim

// Migration of guests between the nodes of the cluster (POST and GET
// .../migrate), for VMs then containers, as qemu-server's API2/Qemu.pm
// migrate_vm, migrate_vm_precondition and QemuMigrate.pm (prepare,
// scan_local_volumes, phase1..3), pve-container's API2/LXC.pm migrate_vm
// and LXC/Migrate.pm (prepare, phase1, final_cleanup), and
// pve-guest-common's AbstractMigrate.pm migrate (the task's frame and its
// "migration aborted" ending) do it.

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Simulated durations of a migration: the prepare and the config move,
// and the copy of one GiB of a local disk.
const (
	durMigrate       = 2 * time.Second
	durMigrateGiB    = time.Second
	migrateTimestamp = "2006-01-02 15:04:05"
)

func init() {
	registerRoutes(func(s *Server) {
		nv := func(extra ...*route.Param) *route.Params {
			return route.NewParams(append([]*route.Param{pNode(), pVMID()}, extra...)...)
		}
		perm := route.PermCheck("/vms/{vmid}", "VM.Migrate")
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/migrate", Perm: perm, ProxyTo: "node",
			Params: nv(route.Str("target").Opt().Fmt("pve-node")), Handler: s.onGuest(s.qemuGuest, s.qemuMigratePrecondition)})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/migrate", Perm: perm, ProxyTo: "node",
			Params: nv(route.Str("target").Fmt("pve-node"),
				route.Int("bwlimit").Opt().Min(0),
				route.Bool("force").Opt(),
				route.Str("migration_network").Opt().Fmt("CIDR"),
				route.Str("migration_type").Opt().Enum("secure", "insecure"),
				route.Bool("online").Opt(),
				route.Str("targetstorage").Opt().Fmt("storage-pair-list"),
				route.Bool("with-conntrack-state").Opt().Default("0"),
				route.Bool("with-local-disks").Opt()),
			Handler: s.qemuMigrate})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/lxc/{vmid}/migrate", Perm: perm, ProxyTo: "node",
			Params: nv(route.Str("target").Fmt("pve-node"),
				route.Num("bwlimit").Opt().Min(0),
				route.Bool("online").Opt(),
				route.Bool("restart").Opt(),
				route.Str("target-storage").Opt().Fmt("storage-pair-list"),
				route.Int("timeout").Opt().Default("180")),
			Handler: s.lxcMigrate})
	})
}

// storageMap is parse_idmap's answer (pve-common JSONSchema.pm) for a
// storage-pair-list: identity ("1"), a default target, and source:target
// entries.
type storageMap struct {
	identity bool
	def      string
	entries  map[string]string
}

func parseStorageMap(param, v string) (*storageMap, error) {
	m := &storageMap{entries: map[string]string{}}
	bad := func(msg string) error { return route.ParamErr(param, "failed to parse storage map: "+msg) }
	for _, e := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\x00' }) {
		switch src, dst, pair := strings.Cut(e, ":"); {
		case e == "1":
			m.identity = true
		case pair:
			if _, dup := m.entries[src]; dup {
				return nil, bad(fmt.Sprintf("duplicate mapping for source '%s'\n", src))
			}
			m.entries[src] = dst
		case m.def != "":
			return nil, bad("default target ID can only be provided once\n")
		default:
			m.def = e
		}
	}
	if m.identity && (m.def != "" || len(m.entries) > 0) {
		return nil, bad("identity mapping cannot be combined with other mappings\n")
	}
	return m, nil
}

// target is map_id: the entry, else the default, else the source.
func (m *storageMap) target(sid string) string {
	if m == nil {
		return sid
	}
	if t, ok := m.entries[sid]; ok {
		return t
	}
	if m.def != "" {
		return m.def
	}
	return sid
}

// migrateCommon is what both migrate_vm calls check before anything else:
// the target (not this node, a cluster member), then the guest.
func (s *Server) migrateTarget(r *route.Request) (string, error) {
	target := r.Str("target")
	if target == r.Str("node") {
		return "", route.ParamErr("target", "target is local node.")
	}
	if s.state.node(target) == nil {
		return "", route.Fail("no such cluster node '%s'", target)
	}
	return target, nil
}

// checkMigrateStorageMap is the API's storage map checks: VM.Config.Disk
// unless identity, and $check_storage_access_migrate for each target.
func (s *Server) checkMigrateStorageMap(r *route.Request, param, target string, vmid int) (*storageMap, error) {
	v := r.Str(param)
	if v == "" {
		return nil, nil
	}
	m, err := parseStorageMap(param, v)
	if err != nil {
		return nil, err
	}
	if !m.identity {
		if err := s.check(r.User, "/vms/"+strconv.Itoa(vmid), "VM.Config.Disk"); err != nil {
			return nil, err
		}
	}
	targets := make([]string, 0, len(m.entries)+1)
	for _, t := range m.entries {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	if m.def != "" {
		targets = append(targets, m.def)
	}
	for _, sid := range targets {
		st, err := s.storageCheckEnabled(sid, target)
		if err != nil {
			return nil, err
		}
		if err := s.check(r.User, "/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
			return nil, err
		}
		if !st.allows("images") {
			return nil, route.Fail("storage '%s' does not support vm images", sid)
		}
	}
	return m, nil
}

// qemuVolumeContent is the content type parse_volname gives a VM's volume.
func qemuVolumeContent(volid string) string {
	if _, name, _ := strings.Cut(volid, ":"); strings.HasPrefix(name, "iso/") {
		return "iso"
	}
	return "images"
}

// qemuCheckStorageAvailability is QemuServer.pm check_storage_availability:
// each drive's storage is enabled here and on the target and holds the
// drive's content type.
func (s *Server) qemuCheckStorageAvailability(g *Guest, target string) error {
	for _, k := range sortedKeys(g.Conf) {
		if !isQemuDiskKey(k) {
			continue
		}
		d, err := parseDrive(k, g.Conf[k])
		if err != nil {
			continue
		}
		sid, _, ok := strings.Cut(d["file"], ":")
		if !ok || strings.HasPrefix(d["file"], "/") {
			continue
		}
		st, err := s.storageCheckEnabled(sid, g.Node)
		if err != nil {
			return err
		}
		if _, err := s.storageCheckEnabled(sid, target); err != nil {
			return err
		}
		if vt := qemuVolumeContent(d["file"]); !st.allows(vt) {
			return route.Fail("%s: content type '%s' is not available on storage '%s'", d["file"], vt, sid)
		}
	}
	return nil
}

var reSocketSerial = regexp.MustCompile(`^serial\d+$`)

// qemuLocalResources is QemuMigrate/Helpers.pm check_local_resources
// without mappings (the simulator has no PCI/USB/dir mappings): host
// devices, serial and parallel ports (a socket serial is fine), ivshmem,
// and, for a running VM, the non-migratable amd-sev, intel-tdx, virtiofs.
func qemuLocalResources(conf map[string]string, running bool) []string {
	var out []string
	if running {
		for _, k := range []string{"amd-sev", "intel-tdx"} {
			if conf[k] != "" {
				out = append(out, k)
			}
		}
	}
	for _, k := range []string{"hostusb", "hostpci", "ivshmem"} {
		if conf[k] != "" {
			out = append(out, k)
		}
	}
	for _, k := range sortedKeys(conf) {
		if strings.HasPrefix(k, "usb") {
			host := strings.TrimPrefix(strings.SplitN(conf[k], ",", 2)[0], "host=")
			if strings.EqualFold(host, "spice") {
				continue
			}
		}
		if reSocketSerial.MatchString(k) && conf[k] == "socket" {
			continue
		}
		if ok, _ := regexp.MatchString(`^(usb|hostpci|serial|parallel|virtiofs)\d+$`, k); ok {
			out = append(out, k)
		}
	}
	return out
}

func (s *Server) qemuMigrate(r *route.Request) (any, error) {
	target, err := s.migrateTarget(r)
	if err != nil {
		return nil, err
	}
	for _, p := range []string{"force", "migration_type", "migration_network"} {
		if r.Str(p) != "" && r.Str(p) != "0" && r.User != "root@pam" {
			return nil, route.ParamErr(p, "Only root may use this option.")
		}
	}
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	if err := checkLock(g); err != nil {
		return nil, err
	}
	online := r.Bool("online")
	if g.Running && !online {
		return nil, route.Fail("can't migrate running VM without --online")
	}
	if !g.Running {
		online = false
	}
	smap, err := s.checkMigrateStorageMap(r, "targetstorage", target, g.VMID)
	if err != nil {
		return nil, err
	}
	if smap == nil || smap.identity {
		if err := s.qemuCheckStorageAvailability(g, target); err != nil {
			return nil, err
		}
	}
	opts := migrateOpts{target: target, online: online, force: r.Bool("force"), localDisks: r.Bool("with-local-disks"), smap: smap}
	if s.haManaged(g) {
		return s.haMigrateRequest(r, g, opts), nil
	}
	return s.startTask(r, g.Node, "qmigrate", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		return s.migrateFrame(tc, g, func(ml *migrateLog) error { return s.qemuMigrateWorker(tc, ml, g, opts) })
	}), nil
}

// migrateOpts are a migration's parameters once the API checked them.
type migrateOpts struct {
	target                    string
	online, force, localDisks bool
	restart                   bool
	timeout                   int
	smap                      *storageMap
}

// migrateLog writes AbstractMigrate's log lines: a timestamp, and
// "ERROR:" for errors.
type migrateLog struct {
	tc  *taskCtx
	now func() time.Time
}

func (ml *migrateLog) info(format string, args ...any) {
	ml.tc.Log("%s %s", ml.now().Format(migrateTimestamp), fmt.Sprintf(format, args...))
}

func (ml *migrateLog) warn(format string, args ...any) { ml.info(format, args...) }

func (ml *migrateLog) err(format string, args ...any) {
	ml.tc.Log("%s ERROR: %s", ml.now().Format(migrateTimestamp), fmt.Sprintf(format, args...))
}

// migrateFrame is AbstractMigrate.pm migrate: the worker under the
// guest's config lock, then "migration finished successfully" or the
// error logged as "migration aborted (duration ...): ..." and the task
// failing with "migration aborted".
func (s *Server) migrateFrame(tc *taskCtx, g *Guest, work func(ml *migrateLog) error) error {
	ml := &migrateLog{tc: tc, now: s.clock.Now}
	start := s.clock.Now()
	kind := "qemu"
	if g.Type == "lxc" {
		kind = "lxc"
	}
	err := tc.LockGuest(g.VMID, kind)
	if err == nil {
		err = work(ml)
	}
	d := s.clock.Now().Sub(start).Truncate(time.Second)
	dur := fmt.Sprintf("%02d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
	if err != nil {
		ml.err("migration aborted (duration %s): %s", dur, strings.TrimRight(route.AsAPIError(err).Message, "\n"))
		return route.Fail("migration aborted")
	}
	ml.info("migration finished successfully (duration %s)", dur)
	return nil
}

// migrateGoneOrLocked is how both prepare steps begin: the guest still
// on the source, then check_lock.
func (s *Server) migrateGoneOrLocked(g *Guest, source string) error {
	if err := s.configGone(g, source); err != nil {
		return err
	}
	return checkLock(g)
}

// qemuMigrateWorker is QemuMigrate.pm prepare, phase1 (scan and copy of
// local volumes), phase2 (the live transfer of a running VM) and phase3
// (the config moves to the target).
func (s *Server) qemuMigrateWorker(tc *taskCtx, ml *migrateLog, g *Guest, o migrateOpts) error {
	source := g.Node
	if err := s.migrateGoneOrLocked(g, source); err != nil {
		return err
	}
	running := g.Running
	if running && !o.online {
		return route.Fail("can't migrate running VM without --online")
	}
	// prepare tests $self->{running}, which is still 0 while it runs:
	// force lets root migrate a running VM with local devices too.
	if res := qemuLocalResources(g.Conf, running); len(res) > 0 {
		if !o.force {
			return route.Fail("can't migrate VM which uses local devices: %s", strings.Join(res, ", "))
		}
		ml.info("migrating VM which uses local devices")
	}
	_, vols := qemuVolumeRefs(g) // get_vm_volumes: CD images, pending and snapshot volumes too
	for _, volid := range vols {
		if err := s.migrateTargetStorageCheck(g, volid, o); err != nil {
			return err
		}
	}
	if s.faults.nodeOffline(o.target) {
		return route.Fail("Can't connect to destination address using public key")
	}
	// phase1
	ml.info("starting migration of VM %d to node '%s' (%s)", g.VMID, o.target, s.state.node(o.target).IP)
	g.Conf["lock"] = "migrate"
	moves, err := s.qemuScanLocalVolumes(ml, g, running, o)
	if err == nil {
		err = s.migrateCopy(tc, ml, g, moves, running)
	}
	if err != nil {
		ml.err("%s", strings.TrimRight(route.AsAPIError(err).Message, "\n"))
		delete(g.Conf, "lock") // phase1_cleanup
		return err
	}
	if running {
		// phase2: the live transfer, then the VM resumes on the target.
		ml.info("starting online/live migration on unix:/run/qemu-server/%d.migrate", g.VMID)
		if err := tc.Sleep(durMigrate); err != nil {
			delete(g.Conf, "lock")
			return err
		}
		ml.info("migration status: completed")
	}
	// phase3_cleanup: move_config_to_node, then the lock is cleared.
	s.finishMove(g, moves, o.target)
	return nil
}

// volumeMove is one local volume a migration copies to the target node.
type volumeMove struct {
	vol       *Volume
	targetSID string
}

// migrateTargetStorageCheck is target_storage_check_available for one
// volume (its storage mapped when it is not shared).
func (s *Server) migrateTargetStorageCheck(g *Guest, volid string, o migrateOpts) error {
	sid, _, ok := strings.Cut(volid, ":")
	if !ok || strings.HasPrefix(volid, "/") {
		return nil
	}
	st, err := s.storageCheckEnabled(sid, g.Node)
	if err != nil {
		return err
	}
	return s.migrateTargetAllows(volid, sid, st, o, qemuVolumeContent(volid))
}

// migrateTargetAllows checks the storage a volume on sid goes to (sid
// itself when shared, else the target storage map's) is enabled on the
// target node and takes content.
func (s *Server) migrateTargetAllows(volid, sid string, st *Storage, o migrateOpts, content string) error {
	targetSID := sid
	if !st.Shared {
		targetSID = o.smap.target(sid)
	}
	tst, err := s.storageCheckEnabled(targetSID, o.target)
	if err != nil {
		return err
	}
	if !tst.allows(content) {
		return route.Fail("%s: content type '%s' is not available on storage '%s'", volid, content, targetSID)
	}
	return nil
}

// qemuVolumeRefs walks the drives of a VM's config, pending changes and
// snapshots as foreach_volid does: where each volume is referenced.
type volumeRef struct {
	attached, unused, inSnapshot, pending, cdrom, cloudinit bool
	snapshots                                               []string
}

func qemuVolumeRefs(g *Guest) (map[string]*volumeRef, []string) {
	refs := map[string]*volumeRef{}
	var order []string
	add := func(volid string) *volumeRef {
		if refs[volid] == nil {
			refs[volid] = &volumeRef{}
			order = append(order, volid)
		}
		return refs[volid]
	}
	walk := func(conf map[string]string, f func(r *volumeRef)) {
		for _, k := range sortedKeys(conf) {
			if _, ok := route.IndexOf(k, "unused"); ok {
				f(add(conf[k]))
				refs[conf[k]].unused = true
				continue
			}
			if !isQemuDiskKey(k) {
				continue
			}
			d, err := parseDrive(k, conf[k])
			if err != nil || d["file"] == "" {
				continue
			}
			ref := add(d["file"])
			ref.cdrom = ref.cdrom || driveIsCdrom(d)
			ref.cloudinit = ref.cloudinit || driveIsCloudinit(d)
			f(ref)
		}
	}
	walk(g.Conf, func(r *volumeRef) { r.attached = true })
	walk(g.Pending, func(r *volumeRef) { r.pending = true })
	for _, name := range sortedKeys(g.Snapshots) {
		walk(g.Snapshots[name].Conf, func(r *volumeRef) { r.inSnapshot = true; r.snapshots = append(r.snapshots, name) })
	}
	sort.Strings(order)
	return refs, order
}

// qemuScanLocalVolumes is scan_local_volumes: it finds what must be
// copied and refuses what cannot move, logging each local volume and each
// problem (as a warning) before failing with "can't migrate VM - check
// log".
func (s *Server) qemuScanLocalVolumes(ml *migrateLog, g *Guest, running bool, o migrateOpts) ([]volumeMove, error) {
	refs, order := qemuVolumeRefs(g)
	var local []string // the volumes past the shared-storage check, in order
	volErrs := map[string]string{}
	var other []string
	for _, volid := range order {
		ref := refs[volid]
		if strings.HasPrefix(volid, "/") {
			local = append(local, volid)
			volErrs[volid] = "local file/device"
			continue
		}
		if ref.cdrom && volid == "cdrom" {
			msg := "can't migrate local cdrom drive"
			if ref.inSnapshot && !ref.attached {
				msg += " (referenced in snapshot - " + strings.Join(ref.snapshots, ", ") + ")"
			}
			other = append(other, msg)
			continue
		}
		if volid == "none" {
			continue
		}
		sid, _, _ := strings.Cut(volid, ":")
		st := s.state.storage(sid)
		if st == nil || st.Shared {
			continue
		}
		local = append(local, volid)
		if why := s.qemuVolumeBlocker(g, volid, ref, st, running); why != "" {
			volErrs[volid] = why
		}
	}
	for _, volid := range local {
		ref := refs[volid]
		switch {
		case ref.cloudinit:
			ml.info("found generated disk '%s' (in current VM config)", volid)
		case ref.attached:
			if running && !o.localDisks {
				volErrs[volid] = "can't live migrate attached local disks without with-local-disks option"
			}
			ml.info("found local disk '%s' (attached)", volid)
		case ref.unused:
			ml.info("found local disk '%s' (unused)", volid)
		case ref.inSnapshot:
			ml.info("found local disk '%s' (referenced by snapshot(s))", volid)
		case ref.pending:
			ml.info("found local disk '%s' (pending change)", volid)
		default:
			ml.info("found local disk '%s'", volid)
		}
	}
	for _, volid := range sortedKeys(volErrs) {
		ml.warn("can't migrate local disk '%s': %s", volid, volErrs[volid])
	}
	for _, e := range other {
		ml.warn("%s", e)
	}
	if len(volErrs)+len(other) > 0 {
		return nil, route.Fail("Problem found while scanning volumes - can't migrate VM - check log")
	}
	var moves []volumeMove
	for _, volid := range local {
		v := s.state.volume(g.Node, volid)
		st := s.state.storage(v.Storage)
		if !migratableStorageType(st.Type, "dir", "btrfs", "zfspool", "lvmthin", "lvm") {
			return nil, route.Fail("Problem found while scanning volumes - can't migrate '%s' - storage type '%s' not supported", volid, st.Type)
		}
		if v.Parent != "" {
			return nil, route.Fail("Problem found while scanning volumes - can't migrate '%s' as it's a clone of '%s'", volid, baseName(v.Parent))
		}
		moves = append(moves, volumeMove{vol: v, targetSID: o.smap.target(v.Storage)})
	}
	return moves, nil
}

// qemuVolumeBlocker is $test_volid's refusal of one local volume, in its
// order: its size, a CD image, its owner, a snapshot that cannot move, a
// base volume with linked clones.
func (s *Server) qemuVolumeBlocker(g *Guest, volid string, ref *volumeRef, st *Storage, running bool) string {
	v := s.state.volume(g.Node, volid)
	if v == nil {
		return fmt.Sprintf("unable to determine size for volume '%s'", volid)
	}
	if ref.cloudinit {
		return "" // generated: copied, or made again on the target
	}
	if ref.cdrom {
		return "local cdrom image"
	}
	if owner := volumeVMID(v.Name); owner != g.VMID {
		if owner == 0 {
			return "owned by other VM (owner = VM )"
		}
		return fmt.Sprintf("owned by other VM (owner = VM %d)", owner)
	}
	switch {
	case ref.inSnapshot && running:
		return "online storage migration not possible if non-replicated snapshot exists"
	case ref.inSnapshot && !(st.Type == "zfspool" || v.Format == "qcow2" || st.Type == "btrfs" && v.Format == "raw"):
		return "non-migratable snapshot exists"
	case s.linkedChildren(volid) > 0:
		return "referenced by linked clone(s)"
	}
	return ""
}

func migratableStorageType(typ string, types ...string) bool { return slices.Contains(types, typ) }

// baseName is the base volume's name within its storage.
func baseName(volid string) string {
	_, name, _ := strings.Cut(volid, ":")
	return name
}

// migrateCopy copies the local volumes to the target node
// (storage_migrate), one GiB per durMigrateGiB; a running VM's attached
// disks are mirrored by the live migration instead, in the same time.
func (s *Server) migrateCopy(tc *taskCtx, ml *migrateLog, g *Guest, moves []volumeMove, running bool) error {
	if len(moves) > 0 && !running {
		ml.info("copying local disk images")
	}
	total := time.Duration(0)
	for _, m := range moves {
		total += time.Duration(float64(m.vol.Size) / float64(gib) * float64(durMigrateGiB))
	}
	return tc.Sleep(durMigrate + total)
}

// finishMove moves the config and the copied volumes to the target node
// and clears the migrate lock (phase3 of both migrations).
func (s *Server) finishMove(g *Guest, moves []volumeMove, target string) {
	renamed := map[string]string{}
	for _, m := range moves {
		old := m.vol.VolID()
		s.state.removeVolume(g.Node, old)
		nv := *m.vol
		nv.Node, nv.Storage = target, m.targetSID
		if m.targetSID != m.vol.Storage {
			if st := s.state.storage(m.targetSID); st != nil {
				nv.Name = s.freeDiskName(target, st, g.VMID, diskPrefix(m.vol.Name))
				if !st.fileBased() {
					nv.Format = "raw"
				} else {
					nv.Name = fmt.Sprintf("%d/%s.%s", g.VMID, nv.Name, nv.Format)
				}
			}
		}
		s.state.addVolume(&nv)
		renamed[old] = nv.VolID()
	}
	for _, conf := range append([]map[string]string{g.Conf, g.Pending}, snapshotConfs(g)...) {
		for k, v := range conf {
			for old, nu := range renamed {
				if strings.HasPrefix(v, old) && (len(v) == len(old) || v[len(old)] == ',') {
					conf[k] = nu + v[len(old):]
				}
			}
		}
	}
	delete(g.Conf, "lock")
	g.Node = target
	s.touch()
}

func snapshotConfs(g *Guest) []map[string]string {
	var out []map[string]string
	for _, sn := range g.Snapshots {
		out = append(out, sn.Conf)
	}
	return out
}

// diskPrefix is "vm" or "subvol" (a container's volume on a directory).
func diskPrefix(name string) string {
	if strings.Contains(name, "subvol-") {
		return "subvol"
	}
	return "vm"
}

// haMigrateRequest is the HA branch of both migrate_vm: a hamigrate task
// that runs "ha-manager migrate <sid> <target>"; the HA stack then moves
// the guest as the LRM does (PVE::HA::Resources::PVEVM migrate: online
// for a running VM; PVECT: restart mode for a running container), as
// root@pam, once the request task has ended.
func (s *Server) haMigrateRequest(r *route.Request, g *Guest, o migrateOpts) string {
	what, typ := "VM", "qmigrate"
	if g.Type == "lxc" {
		what, typ = "CT", "vzmigrate"
	}
	return s.startTaskWith(r, g.Node, "hamigrate", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		tc.Log("Requesting HA migration for %s %d to node %s", what, g.VMID, o.target)
		return nil
	}, func(err error) {
		if err != nil || s.state.Guests[g.VMID] != g {
			return
		}
		lrm := &route.Request{User: "root@pam"}
		ha := migrateOpts{target: o.target, online: g.Running, restart: g.Running, timeout: 180}
		s.startTask(lrm, g.Node, typ, strconv.Itoa(g.VMID), func(tc *taskCtx) error {
			return s.migrateFrame(tc, g, func(ml *migrateLog) error {
				if g.Type == "lxc" {
					return s.lxcMigrateWorker(tc, ml, g, ha)
				}
				return s.qemuMigrateWorker(tc, ml, g, ha)
			})
		})
	})
}

// qemuMigratePrecondition is migrate_vm_precondition: whether the VM
// runs, the nodes it may go to (not those lacking one of its storages),
// its local disks and the local resources that block a migration.
func (s *Server) qemuMigratePrecondition(r *route.Request, g *Guest) (any, error) {
	if err := checkLock(g); err != nil {
		return nil, err
	}
	res := map[string]any{"running": boolInt(g.Running), "local_resources": nonNil(qemuLocalResources(g.Conf, g.Running)),
		"mapped-resources": []string{}, "mapped-resource-info": map[string]any{}, "has-dbus-vmstate": 1}
	allowed, notAllowed := []string{}, map[string]any{}
	for _, n := range s.state.Nodes {
		if n.Name == g.Node {
			continue
		}
		var missing []string
		for _, volid := range guestVolumes(g.Conf) {
			sid, _, _ := strings.Cut(volid, ":")
			if st := s.state.storage(sid); st != nil && !st.enabledOn(n.Name) && !slices.Contains(missing, sid) {
				missing = append(missing, sid)
			}
		}
		if len(missing) > 0 {
			notAllowed[n.Name] = map[string]any{"unavailable_storages": missing}
			continue
		}
		allowed = append(allowed, n.Name)
	}
	res["allowed_nodes"], res["not_allowed_nodes"] = allowed, notAllowed
	disks := []map[string]any{}
	refs, order := qemuVolumeRefs(g)
	for _, volid := range order {
		sid, _, _ := strings.Cut(volid, ":")
		st := s.state.storage(sid)
		if st == nil || st.Shared {
			continue
		}
		d := map[string]any{"volid": volid, "cdrom": boolInt(refs[volid].cdrom), "is_unused": boolInt(refs[volid].unused)}
		if v := s.state.volume(g.Node, volid); v != nil {
			d["size"] = v.Size
		}
		disks = append(disks, d)
	}
	res["local_disks"] = disks
	return res, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Server) lxcMigrate(r *route.Request) (any, error) {
	target, err := s.migrateTarget(r)
	if err != nil {
		return nil, err
	}
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	if g.Running && !r.Bool("online") && !r.Bool("restart") {
		return nil, route.Fail("can't migrate running container without --online or --restart")
	}
	smap, err := s.checkMigrateStorageMap(r, "target-storage", target, g.VMID)
	if err != nil {
		return nil, err
	}
	o := migrateOpts{target: target, online: r.Bool("online"), restart: r.Bool("restart"), timeout: r.IntOr("timeout", 180), smap: smap}
	if s.haManaged(g) {
		return s.haMigrateRequest(r, g, o), nil
	}
	return s.startTask(r, g.Node, "vzmigrate", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		return s.migrateFrame(tc, g, func(ml *migrateLog) error { return s.lxcMigrateWorker(tc, ml, g, o) })
	}), nil
}

// lxcMigrateWorker is LXC/Migrate.pm prepare (mount points, restart mode's
// shutdown), phase1 (the volume scan and copy), phase3 and final_cleanup
// (the config moves; restart mode starts the container on the target, or
// again on the source when the migration failed).
func (s *Server) lxcMigrateWorker(tc *taskCtx, ml *migrateLog, g *Guest, o migrateOpts) error {
	source := g.Node
	if err := s.migrateGoneOrLocked(g, source); err != nil {
		return err
	}
	running := g.Running
	if running && o.online {
		return route.Fail("lxc live migration is currently not implemented")
	}
	if running && !o.restart {
		return route.Fail("running container can only be migrated in restart mode at /usr/share/perl5/PVE/LXC/Migrate.pm line 53.")
	}
	for _, k := range sortedKeys(g.Conf) {
		if !isLxcVolumeKey(k) && !strings.HasPrefix(k, "unused") {
			continue
		}
		if err := s.lxcPrepareMountPoint(g, k, o); err != nil {
			return err
		}
	}
	if s.faults.nodeOffline(o.target) {
		return route.Fail("Can't connect to destination address using public key")
	}
	wasRunning := running
	if running {
		ml.info("shutdown CT %d", g.VMID)
		if err := tc.Sleep(durCTShutdown); err != nil {
			return err
		}
		g.Running, g.StartedAt = false, time.Time{}
	}
	ml.info("starting migration of CT %d to node '%s' (%s)", g.VMID, o.target, s.state.node(o.target).IP)
	g.Conf["lock"] = "migrate"
	moves, err := s.lxcScanVolumes(ml, g, o)
	if err == nil {
		err = s.migrateCopy(tc, ml, g, moves, false)
	}
	if err != nil {
		ml.err("%s", strings.TrimRight(route.AsAPIError(err).Message, "\n"))
		ml.info("start final cleanup")
		delete(g.Conf, "lock")
		if o.restart && wasRunning {
			ml.info("start container on source node")
			g.Running, g.StartedAt = true, s.clock.Now()
		}
		return err
	}
	s.finishMove(g, moves, o.target)
	ml.info("start final cleanup")
	if o.restart && wasRunning {
		ml.info("start container on target node")
		if err := tc.Sleep(durCTStart); err != nil {
			return err
		}
		g.Running, g.StartedAt = true, s.clock.Now()
	}
	return nil
}

// lxcPrepareMountPoint is prepare's check of one mount point: bind and
// device mounts that are not shared cannot move; a volume's storage must
// be enabled here, hold containers, and be enabled on the target.
func (s *Server) lxcPrepareMountPoint(g *Guest, key string, o migrateOpts) error {
	volid := g.Conf[key]
	if isLxcVolumeKey(key) {
		mp, err := parseLxcVolume(key, g.Conf[key])
		if err != nil {
			return nil
		}
		if typ := mountPointType(mp["volume"]); typ != "volume" {
			if mp["shared"] == "1" {
				return nil
			}
			return route.Fail("cannot migrate local %s mount point '%s'", typ, key)
		}
		volid = mp["volume"]
	}
	sid, _, ok := strings.Cut(volid, ":")
	if !ok {
		return route.Fail("can't determine assigned storage for mount point '%s'", key)
	}
	st, err := s.storageCheckEnabled(sid, g.Node)
	if err != nil {
		return err
	}
	if !st.allows("rootdir") {
		return route.Fail("content type 'rootdir' is not available on storage '%s'", sid)
	}
	return s.migrateTargetAllows(volid, sid, st, o, "rootdir")
}

// lxcScanVolumes is phase1's volume scan: shared volumes stay, local ones
// must belong to the container, have no snapshot (but on ZFS and BTRFS),
// lie on a storage type that can be copied and not be linked clones.
func (s *Server) lxcScanVolumes(ml *migrateLog, g *Guest, o migrateOpts) ([]volumeMove, error) {
	volErrs := map[string]string{}
	refs := map[string]string{}
	test := func(volid, snapname string) {
		sid, _, _ := strings.Cut(volid, ":")
		st := s.state.storage(sid)
		if st == nil {
			return
		}
		if st.Shared {
			if snapname == "" {
				ml.info("volume '%s' is on shared storage '%s'", volid, sid)
			}
			return
		}
		if refs[volid] == "" || snapname != "" {
			refs[volid] = map[bool]string{true: "snapshot", false: "config"}[snapname != ""]
		}
		v := s.state.volume(g.Node, volid)
		why := ""
		switch {
		case v == nil || lxcVolumeOwner(volid) != g.VMID:
			why = fmt.Sprintf("owned by other guest (owner = %d)", lxcVolumeOwner(volid))
		case snapname != "" && st.Type != "zfspool" && st.Type != "btrfs":
			why = "non-migratable snapshot exists"
		}
		if why != "" && volErrs[volid] == "" {
			volErrs[volid] = why
		}
	}
	for _, name := range sortedKeys(g.Snapshots) {
		for _, volid := range lxcVolumes(g.Snapshots[name].Conf) {
			test(volid, name)
		}
	}
	for _, volid := range lxcVolumes(g.Conf) {
		test(volid, "")
	}
	var moves []volumeMove
	for _, volid := range sortedKeys(refs) {
		sid, _, _ := strings.Cut(volid, ":")
		st := s.state.storage(sid)
		v := s.state.volume(g.Node, volid)
		switch {
		case !migratableStorageType(st.Type, "dir", "zfspool", "lvmthin", "lvm", "btrfs"):
			volErrs[volid] = fmt.Sprintf("storage type '%s' not supported", st.Type)
		case v != nil && v.Parent != "":
			volErrs[volid] = fmt.Sprintf("clone of '%s'", baseName(v.Parent))
		}
		if refs[volid] == "snapshot" {
			ml.info("found local volume '%s' (referenced by snapshot(s))", volid)
		} else {
			ml.info("found local volume '%s' (in current VM config)", volid)
		}
		if v != nil && volErrs[volid] == "" {
			moves = append(moves, volumeMove{vol: v, targetSID: o.smap.target(sid)})
		}
	}
	for _, volid := range sortedKeys(volErrs) {
		ml.warn("can't migrate local volume '%s': %s", volid, volErrs[volid])
	}
	if len(volErrs) > 0 {
		return nil, route.Fail("can't migrate CT - check log")
	}
	return moves, nil
}
