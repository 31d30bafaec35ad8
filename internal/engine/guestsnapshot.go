package engine

// Snapshots before change (spec.snapshots) and rollback.
//
// Before proxmops changes an existing guest whose manifest sets
// snapshots.beforeChange, the action first takes a Proxmox snapshot named
// proxmops-<UTC time> (without RAM) whose description names the commit and
// the change, then deletes its own older snapshots (prefix proxmops-)
// beyond keep; snapshots anyone else took are never touched. A guest
// Proxmox cannot snapshot (has_feature('snapshot') of QemuConfig.pm and
// LXC/Config.pm over every volume, Storage.pm volume_has_feature per
// storage plugin) is refused in the plan, before anything happens.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/provision"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// SnapshotPrefix starts the name of every snapshot proxmops takes; only
// those are pruned.
const SnapshotPrefix = "proxmops-"

// DefaultSnapshotKeep is how many of its snapshots proxmops keeps when the
// manifest does not say.
const DefaultSnapshotKeep = 3

// SnapshotPolicy is spec.snapshots of a VirtualMachine or Container.
type SnapshotPolicy struct {
	BeforeChange bool
	Keep         int
}

// snapshotPolicy reads spec.snapshots; nil when no snapshot is wanted.
func snapshotPolicy(s *manifest.Snapshots) *SnapshotPolicy {
	if s == nil || !s.BeforeChange {
		return nil
	}
	keep := s.Keep
	if keep <= 0 {
		keep = DefaultSnapshotKeep
	}
	return &SnapshotPolicy{BeforeChange: true, Keep: keep}
}

// SnapshotName is the name of a snapshot proxmops takes at t:
// proxmops-20261201T231500Z, a valid pve-configid (JSONSchema.pm
// $CONFIGID_RE, case-insensitive, at most 40 characters).
func SnapshotName(t time.Time) string {
	return SnapshotPrefix + t.UTC().Format("20060102T150405Z")
}

// snapshotStep is the snapshot an action takes before its change, at most
// once per run.
type snapshotStep struct {
	typ, node string
	vmid      int
	keep      int
	what      string // "update of VirtualMachine/web (cores, memory)"
	revision  string

	// provisioned is the guest's provisioning record line before the
	// change ("" for none), kept in the snapshot's description so that a
	// rollback can put it back (Proxmox keeps the current description).
	provisioned string

	mu    sync.Mutex
	taken string
}

// planSnapshots adds the snapshot step to the actions that change an
// existing guest whose manifest asks for it, or refuses them when Proxmox
// cannot snapshot the guest. A create only gets a note when its volumes
// will not allow snapshots later.
func planSnapshots(pc *planContext, p *Plan) {
	type target struct {
		kind string
		meta Meta
		vmid int
		pol  *SnapshotPolicy
		spec func() string // what the manifest's volumes prevent, for a create
	}
	var ts []target
	for _, s := range specsOf[*VMSpec](pc.d, KindVirtualMachine) {
		ts = append(ts, target{KindVirtualMachine, s.Meta, s.VMID, s.Snapshots, func() string { return vmSpecSnapshotBlocker(pc, s) }})
	}
	for _, s := range specsOf[*ContainerSpec](pc.d, KindContainer) {
		ts = append(ts, target{KindContainer, s.Meta, s.VMID, s.Snapshots, func() string { return ctSpecSnapshotBlocker(pc, s) }})
	}
	for _, t := range ts {
		a := p.Find(t.kind, t.meta.Name)
		if t.pol == nil || a == nil || !a.Acts() || a.Conflicted() {
			continue
		}
		g := pc.snap.Guest(t.vmid)
		if a.Action == vocab.ActionCreate || g == nil {
			if why := t.spec(); why != "" && a.Action == vocab.ActionCreate {
				a.Reason = joinReasons([]string{a.Reason, "note: snapshots.beforeChange cannot work for this guest: " + why})
			}
			continue
		}
		if !changesGuest(a) || !g.Read {
			continue
		}
		if why := guestSnapshotBlocker(pc.snap, g); why != "" {
			a.refuse(joinReasons([]string{a.Reason, fmt.Sprintf("not applied: snapshots.beforeChange asks for a snapshot first, but Proxmox cannot snapshot this guest: %s (Proxmox answers \"snapshot feature is not available\"); move the volume to a storage with snapshots, or set beforeChange: false", why)}))
			continue
		}
		addSnapshotStep(a, g, t.pol, p.Revision)
	}
}

// changesGuest says whether an action changes the guest itself (anything
// but a start or a stop).
func changesGuest(a *Action) bool {
	if a.Action != vocab.ActionUpdate && a.Action != vocab.ActionReboot {
		return false
	}
	if a.Action == vocab.ActionReboot {
		return true
	}
	for _, c := range a.Changes {
		if c.Field != "state" {
			return true
		}
	}
	return false
}

// addSnapshotStep makes the snapshot the first step of the action and
// shows it in the plan.
func addSnapshotStep(a *Action, g *Guest, pol *SnapshotPolicy, revision string) {
	var fields []string
	for _, c := range a.Changes {
		if f := strings.SplitN(c.Field, ".", 2)[0]; f != "state" {
			fields = append(fields, f)
		}
	}
	what := fmt.Sprintf("%s of %s", a.Action, a.Key())
	if fs := uniqStrings(fields); len(fs) > 0 {
		what += " (" + abbreviateList(fs, 160) + ")"
	}
	a.snapshot = &snapshotStep{typ: g.Type, node: g.Node, vmid: g.VMID, keep: pol.Keep, what: what, revision: revision}
	if g.Provisioned {
		a.snapshot.provisioned = g.ProvisionRecord.Line()
	}
	row := vocab.Change{Field: "snapshot", Path: "spec.snapshots",
		To: fmt.Sprintf("%s<UTC time> before the change (keeps the newest %d of proxmops' snapshots)", SnapshotPrefix, pol.Keep)}
	a.Changes = append([]vocab.Change{row}, a.Changes...)
	run := a.run
	a.run = func(ctx context.Context, x *execCtx) error {
		if err := x.snapshotBeforeChange(ctx, ""); err != nil {
			return err
		}
		return run(ctx, x)
	}
}

func abbreviateList(items []string, max int) string {
	s := strings.Join(items, ", ")
	if len(s) > max {
		s = s[:max-3] + "..."
	}
	return s
}

// snapshotBeforeChange takes the action's snapshot if its manifest asks for
// one and none was taken in this run yet, then prunes proxmops' older
// snapshots. Steps that change the guest outside the action's planned
// changes (a provisioning re-run) call it first with what they change; it
// does nothing for a guest without spec.snapshots.beforeChange.
func (x *execCtx) snapshotBeforeChange(ctx context.Context, change string) error {
	st := x.a.snapshot
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.taken != "" {
		return nil
	}
	c := x.e.client
	list, err := c.Snapshots(ctx, st.typ, st.node, st.vmid)
	if err != nil {
		return fmt.Errorf("listing the snapshots before the change: %w", err)
	}
	name := freeSnapshotName(list, time.Now())
	what := st.what
	if change != "" {
		what = change + " of " + x.a.Key()
	}
	desc := "taken by proxmops before the " + what
	if st.revision != "" {
		rev := st.revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		desc += " for commit " + rev
	}
	if st.provisioned != "" {
		desc += "\n" + st.provisioned
	}
	if err := x.task(ctx, "taking snapshot "+name+" before the change", func() (string, error) {
		return c.CreateSnapshot(ctx, st.typ, st.node, st.vmid, name, desc)
	}); err != nil {
		return err
	}
	st.taken = name
	x.pruneSnapshots(ctx, st)
	return nil
}

// freeSnapshotName is SnapshotName(now), with a suffix when a snapshot of
// that second exists already.
func freeSnapshotName(list []pve.GuestSnapshot, now time.Time) string {
	used := map[string]bool{}
	for _, s := range list {
		used[s.Name] = true
	}
	base := SnapshotName(now)
	name := base
	for i := 2; used[name]; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	return name
}

// pruneSnapshots deletes proxmops' snapshots beyond the newest keep. A
// failure is reported and left for the next change: the change itself
// goes on.
func (x *execCtx) pruneSnapshots(ctx context.Context, st *snapshotStep) {
	c := x.e.client
	list, err := c.Snapshots(ctx, st.typ, st.node, st.vmid)
	if err != nil {
		x.progress("could not list the snapshots to prune: "+err.Error(), "", -1)
		return
	}
	for _, s := range snapshotsToPrune(list, st.keep) {
		if err := x.task(ctx, "deleting older snapshot "+s, func() (string, error) {
			return c.DeleteSnapshot(ctx, st.typ, st.node, st.vmid, s)
		}); err != nil {
			x.progress("could not delete older snapshot "+s+": "+err.Error(), "", -1)
			x.e.log.Warn("snapshot prune failed", "resource", x.a.Key(), "snapshot", s, "error", err)
		}
	}
}

// snapshotsToPrune names proxmops' snapshots beyond the newest keep, oldest
// last; other snapshots are never named.
func snapshotsToPrune(list []pve.GuestSnapshot, keep int) []string {
	own := ownSnapshots(list)
	if len(own) <= keep {
		return nil
	}
	var out []string
	for _, s := range own[keep:] {
		out = append(out, s.Name)
	}
	return out
}

// ownSnapshots lists proxmops' snapshots, newest first.
func ownSnapshots(list []pve.GuestSnapshot) []pve.GuestSnapshot {
	var own []pve.GuestSnapshot
	for _, s := range list {
		if s.Name != "current" && strings.HasPrefix(s.Name, SnapshotPrefix) {
			own = append(own, s)
		}
	}
	sortSnapshots(own)
	return own
}

// sortSnapshots orders snapshots newest first (by time, then name).
func sortSnapshots(list []pve.GuestSnapshot) {
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].SnapTime != list[j].SnapTime {
			return list[i].SnapTime > list[j].SnapTime
		}
		return list[i].Name > list[j].Name
	})
}

// volumeSnapshots is volume_has_feature('snapshot') of the storage plugins
// for a volume's current state (pve-storage Plugin.pm and its
// subclasses): LVM-thin, ZFS and RBD snapshot anything; BTRFS qcow2, raw
// and subvol; the file plugins (dir, NFS, CIFS, CephFS, GlusterFS) and LVM
// qcow2 only; iSCSI, PBS and ESXi nothing. It answers the reason when not.
func volumeSnapshots(storageType, format string) string {
	switch storageType {
	case "lvmthin", "zfspool", "zfs", "rbd":
		return ""
	case "btrfs":
		if format == "qcow2" || format == "raw" || format == "subvol" {
			return ""
		}
		return fmt.Sprintf("a %s volume on btrfs storage", format)
	case "dir", "nfs", "cifs", "cephfs", "glusterfs", "lvm":
		if format == "qcow2" {
			return ""
		}
		return fmt.Sprintf("a %s volume on %s storage, which snapshots qcow2 only", format, storageType)
	}
	return fmt.Sprintf("on %s storage, which has no snapshots", storageType)
}

// guestSnapshotBlocker says why Proxmox cannot snapshot an existing guest
// ("" when it can), from its current config and the storages' types.
func guestSnapshotBlocker(snap *Observation, g *Guest) string {
	for _, v := range configVolumes(g.Type, g.Current) {
		if why := volumeBlocker(snap, g.Node, v.slot, v.volid); why != "" {
			return why
		}
	}
	return ""
}

func isMountKey(k string) bool {
	rest, ok := strings.CutPrefix(k, "mp")
	if !ok || rest == "" {
		return false
	}
	for _, r := range rest {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// volumeBlocker judges one volume of slot; a storage the observation does not
// know is left to Proxmox.
func volumeBlocker(snap *Observation, node, slot, vol string) string {
	if strings.HasPrefix(vol, "/") {
		return fmt.Sprintf("%s is a bind or device mount of %s, which Proxmox never snapshots", slot, vol)
	}
	ref := snap.Storage(node, pvefields.StorageOf(vol))
	if ref == nil || ref.Type == "" {
		return ""
	}
	if why := volumeSnapshots(ref.Type, pvefields.VolumeFormat(vol)); why != "" {
		return fmt.Sprintf("%s (%s) is %s", slot, vol, why)
	}
	return ""
}

// vmSpecSnapshotBlocker judges the disks a VM manifest declares: a disk
// gets its declared format, else its storage's default as storage.cfg sets
// it (get_formats); a storage whose configuration is unknown is left to
// Proxmox.
func vmSpecSnapshotBlocker(pc *planContext, s *VMSpec) string {
	node := nodeFor(pc, s.Node)
	for _, d := range s.Disks {
		ref := pc.snap.Storage(node, d.Storage)
		if ref == nil || ref.Type == "" {
			continue
		}
		format := d.Options["format"]
		if format == "" {
			var ok bool
			if format, ok = pc.storageConfigs().defaultImageFormat(d.Storage); !ok {
				continue
			}
		}
		if why := volumeSnapshots(ref.Type, format); why != "" {
			return fmt.Sprintf("disk %s on %s would be %s", orStr(d.Slot, "(first)"), d.Storage, why)
		}
	}
	return ""
}

// ctSpecSnapshotBlocker judges a container manifest's volumes: bind mounts
// never snapshot; a new volume is raw (subvol on ZFS and BTRFS).
func ctSpecSnapshotBlocker(pc *planContext, s *ContainerSpec) string {
	node := nodeFor(pc, s.Node)
	for _, m := range append([]MountSpec{s.RootFS}, s.Mounts...) {
		if m.Bind != "" {
			return fmt.Sprintf("%s is a bind mount of %s, which Proxmox never snapshots", m.Slot, m.Bind)
		}
		ref := pc.snap.Storage(node, m.Storage)
		if ref == nil || ref.Type == "" {
			continue
		}
		format := "raw"
		if ref.Type == "zfspool" || ref.Type == "btrfs" {
			format = "subvol"
		}
		if why := volumeSnapshots(ref.Type, format); why != "" {
			return fmt.Sprintf("%s on %s would be %s", m.Slot, m.Storage, why)
		}
	}
	return ""
}

// ErrNoSnapshot is returned by Rollback when the guest has no snapshot to
// roll back to.
var ErrNoSnapshot = errors.New("no snapshot to roll back to")

// guestTarget is a declared guest found on the cluster.
type guestTarget struct {
	kind, name, typ, node string
	vmid                  int
	sync                  vocab.SyncPolicy
	running               bool
	ha                    pve.HAStatus // status/current's "ha"
}

// findGuestTarget finds the declared VirtualMachine or Container kind/name on
// the cluster and checks that proxmops owns it.
func (e *Engine) findGuestTarget(ctx context.Context, d *Desired, kind, name string) (*guestTarget, error) {
	t := &guestTarget{kind: kind, name: name}
	if d == nil {
		d = &Desired{}
	}
	info := manifest.Kind(kind).Info()
	if !info.Snapshots {
		return nil, fmt.Errorf("%s/%s: only VirtualMachine and Container have snapshots: %w", kind, name, api.ErrInvalid)
	}
	t.typ = info.PVEType
	for _, s := range d.Specs(kind) {
		if s.meta().Name == name {
			t.vmid, t.sync = rowOf(kind).vmid(s), s.meta().Sync
		}
	}
	if t.vmid == 0 {
		return nil, fmt.Errorf("%s/%s is not declared in the repository: %w", kind, name, api.ErrNotFound)
	}
	if t.sync == 0 {
		t.sync = vocab.SyncAuto
	}
	res, err := e.client.ClusterResources(ctx, "vm")
	if err != nil {
		return nil, fmt.Errorf("listing the cluster's guests: %w", err)
	}
	for _, r := range res {
		if int(r.VMID) != t.vmid {
			continue
		}
		if r.Type != t.typ || r.Template != 0 {
			return nil, fmt.Errorf("%s/%s: VMID %d is a %s on the cluster, not the declared guest: %w", kind, name, t.vmid, r.Type, api.ErrConflict)
		}
		t.node = r.Node
	}
	if t.node == "" {
		return nil, fmt.Errorf("%s/%s: VMID %d does not exist on the cluster: %w", kind, name, t.vmid, api.ErrNotFound)
	}
	var cfg pve.ConfigValues
	var st pve.VMStatus
	if t.typ == "qemu" {
		cfg, err = e.client.QemuConfig(ctx, t.node, t.vmid, true)
		if err == nil {
			st, err = e.client.QemuStatus(ctx, t.node, t.vmid)
		}
	} else {
		cfg, err = e.client.LxcConfig(ctx, t.node, t.vmid)
		if err == nil {
			st, err = e.client.LxcStatus(ctx, t.node, t.vmid)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s/%s (VMID %d): %w", kind, name, t.vmid, err)
	}
	if !hasTag(pve.SplitTags(cfg["tags"]), OwnerTag) {
		return nil, fmt.Errorf("%s/%s: VMID %d has no %s tag, so proxmops leaves it alone: %w", kind, name, t.vmid, OwnerTag, api.ErrNotOwned)
	}
	t.running = st.Status == "running"
	t.ha = st.HA
	return t, nil
}

// targetSnapshots finds the declared guest kind/name (as findGuestTarget)
// and lists its snapshots.
func (e *Engine) targetSnapshots(ctx context.Context, d *Desired, kind, name string) (*guestTarget, []pve.GuestSnapshot, error) {
	t, err := e.findGuestTarget(ctx, d, kind, name)
	if err != nil {
		return nil, nil, err
	}
	list, err := e.client.Snapshots(ctx, t.typ, t.node, t.vmid)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the snapshots of %s/%s: %w", kind, name, err)
	}
	return t, list, nil
}

// GuestSnapshots lists the snapshots of the declared guest kind/name, newest
// first.
func (e *Engine) GuestSnapshots(ctx context.Context, d *Desired, kind, name string) (api.SnapshotList, error) {
	t, list, err := e.targetSnapshots(ctx, d, kind, name)
	if err != nil {
		return api.SnapshotList{}, err
	}
	out := api.SnapshotList{Kind: kind, Name: name, Node: t.node, VMID: t.vmid, Running: t.running,
		SyncPolicy: t.sync, Snapshots: []api.Snapshot{}}
	if t.ha.Managed != 0 {
		out.HA = pve.HASID(t.typ, t.vmid)
	}
	var snaps []pve.GuestSnapshot
	for _, s := range list {
		if s.Name == "current" {
			out.Current = s.Parent
			continue
		}
		snaps = append(snaps, s)
	}
	sortSnapshots(snaps)
	blocked := e.rollbackBlockers(ctx, t.typ, t.node, t.vmid, list)
	for _, s := range snaps {
		out.Snapshots = append(out.Snapshots, api.Snapshot{Name: s.Name, Description: s.Description, Time: int64(s.SnapTime),
			Parent: s.Parent, VMState: s.VMState != 0, Proxmops: strings.HasPrefix(s.Name, SnapshotPrefix), RollbackBlocked: blocked[s.Name]})
	}
	return out, nil
}

// Rollback rolls the declared guest kind/name back to snapshot (its newest
// proxmops snapshot when empty) and waits for Proxmox's task. Proxmox stops
// a running guest for the rollback; proxmops asks it to start the guest
// again when it ran before (a snapshot with RAM resumes by itself). The
// guest then differs from Git until the next pass re-applies the manifest
// (sync auto) or someone syncs or reverts the commit (sync manual): the
// result's Next says which.
func (e *Engine) Rollback(ctx context.Context, d *Desired, kind, name, snapshot string, progress func(msg string)) (api.RollbackResult, error) {
	if progress == nil {
		progress = func(string) {}
	}
	t, list, err := e.targetSnapshots(ctx, d, kind, name)
	if err != nil {
		return api.RollbackResult{}, err
	}
	sn, err := pickSnapshot(list, snapshot)
	if err != nil {
		return api.RollbackResult{}, fmt.Errorf("%s/%s: %w", kind, name, err)
	}
	if why := e.rollbackBlockers(ctx, t.typ, t.node, t.vmid, list)[sn.Name]; why != "" {
		return api.RollbackResult{}, fmt.Errorf("%s/%s cannot be rolled back to %s, Proxmox would refuse it: %s: %w", kind, name, sn.Name, why, api.ErrConflict)
	}
	hold, err := e.holdHA(ctx, t, progress)
	if err != nil {
		return api.RollbackResult{}, err
	}
	start := t.running && sn.VMState == 0
	msg := fmt.Sprintf("rolling %s/%s back to %s", kind, name, sn.Name)
	if t.running {
		msg += " (Proxmox stops the running guest first; it is started again afterwards)"
	}
	progress(msg)
	upid, err := e.client.RollbackSnapshot(ctx, t.typ, t.node, t.vmid, sn.Name, start)
	if err == nil {
		progress("waiting for task " + upid)
		_, err = e.client.WaitTask(ctx, upid, nil)
	}
	if hold != nil {
		progress("setting the HA resource " + hold.sid + " back to " + hold.state)
	}
	if rerr := e.releaseHA(ctx, hold); rerr != nil {
		if err == nil {
			return api.RollbackResult{}, fmt.Errorf("%s/%s rolled back to %s, but %w", kind, name, sn.Name, rerr)
		}
		err = fmt.Errorf("%w; %w", err, rerr)
	}
	if err != nil {
		return api.RollbackResult{}, fmt.Errorf("rolling %s/%s back to %s: %w", kind, name, sn.Name, err)
	}
	if err := e.restoreProvisionRecord(ctx, t, sn); err != nil {
		return api.RollbackResult{}, fmt.Errorf("%s/%s rolled back to %s, but %w", kind, name, sn.Name, err)
	}
	res := api.RollbackResult{Kind: kind, Name: name, Snapshot: sn.Name, Started: t.running, SyncPolicy: t.sync}
	res.Next = RollbackNext(vocab.Key(kind, name), t.sync)
	return res, nil
}

// RollbackNext tells what happens between a rolled-back guest and Git.
func RollbackNext(key string, sync vocab.SyncPolicy) string {
	switch sync {
	case vocab.SyncManual:
		return key + " now differs from Git and shows OutOfSync; its sync policy is manual, so proxmops leaves it as rolled back until you sync it or revert the commit in Git."
	case vocab.SyncDisabled:
		return key + " has sync disabled: proxmops does not compare it with Git."
	}
	return key + " now differs from Git and shows OutOfSync; its sync policy is auto, so the next pass re-applies the manifest (taking a snapshot first if snapshots.beforeChange is set). To keep the rollback, revert the commit in Git or set the annotation proxmops.dev/sync: manual."
}

// pickSnapshot finds the named snapshot, or the newest proxmops one.
func pickSnapshot(list []pve.GuestSnapshot, name string) (pve.GuestSnapshot, error) {
	if name != "" {
		var names []string
		for _, s := range list {
			if s.Name == name && name != "current" {
				return s, nil
			}
			if s.Name != "current" {
				names = append(names, s.Name)
			}
		}
		have := "none"
		if len(names) > 0 {
			have = strings.Join(names, ", ")
		}
		return pve.GuestSnapshot{}, fmt.Errorf("there is no snapshot %q (snapshots: %s): %w", name, have, api.ErrNotFound)
	}
	own := ownSnapshots(list)
	if len(own) == 0 {
		return pve.GuestSnapshot{}, fmt.Errorf("the guest has no %s snapshot; name one with --snapshot: %w (%w)", SnapshotPrefix, ErrNoSnapshot, api.ErrNotFound)
	}
	return own[0], nil
}

// wantsSnapshots says whether a desired spec asks for snapshots before
// changes.
func wantsSnapshots(spec any) bool {
	switch s := spec.(type) {
	case *VMSpec:
		return s.Snapshots != nil
	case *ContainerSpec:
		return s.Snapshots != nil
	}
	return false
}

// restoreProvisionRecord makes the guest's provisioning record (the last
// line of its description, see provision.go) say what the snapshot holds:
// Proxmox's rollback keeps the current description (__snapshot_apply_config),
// which would claim the newer provisioning. The record comes from the
// snapshot's description, where proxmops put it when it took the snapshot;
// a snapshot without one (taken by hand, or before any provisioning) drops
// the record, so the next plan provisions again rather than trust it.
func (e *Engine) restoreProvisionRecord(ctx context.Context, t *guestTarget, sn pve.GuestSnapshot) error {
	var cfg pve.ConfigValues
	var err error
	if t.typ == "lxc" {
		cfg, err = e.client.LxcConfig(ctx, t.node, t.vmid)
	} else {
		cfg, err = e.client.QemuConfig(ctx, t.node, t.vmid, false)
	}
	if err != nil {
		return fmt.Errorf("reading its description: %w", err)
	}
	user, cur, had := provision.SplitDescription(cfg["description"])
	_, snapRec, has := provision.SplitDescription(sn.Description)
	var want string
	switch {
	case has && (!had || cur.Line() != snapRec.Line()):
		want = provision.JoinDescription(user, snapRec)
	case !has && had:
		want = user
	default:
		return nil
	}
	p := pve.NewParams()
	if want == "" {
		p.Set("delete", "description")
	} else {
		p.Set("description", want)
	}
	if t.typ == "lxc" {
		err = e.client.LxcSetConfig(ctx, t.node, t.vmid, p)
	} else {
		err = e.client.QemuSetConfig(ctx, t.node, t.vmid, p)
	}
	if err != nil {
		return fmt.Errorf("its provisioning record could not be restored: %w", err)
	}
	return nil
}
