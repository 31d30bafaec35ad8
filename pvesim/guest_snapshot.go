package pvesim

// Snapshots (list, create, delete, rollback) for VMs then containers.

import (
	"strconv"
	"time"
)

func (s *Server) qemuSnapshotList(r *Request) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	latest := ""
	var latestTime int64 = -1
	for _, name := range sortedKeys(g.Snapshots) {
		sn := g.Snapshots[name]
		e := map[string]any{"name": name, "snaptime": sn.SnapTime, "description": sn.Description}
		if sn.Parent != "" {
			e["parent"] = sn.Parent
		}
		if sn.VMState {
			e["vmstate"] = 1
		}
		out = append(out, e)
		if sn.SnapTime >= latestTime {
			latest, latestTime = name, sn.SnapTime
		}
	}
	cur := map[string]any{"name": "current", "description": "You are here!", "digest": g.Digest(), "running": 0}
	if g.Running {
		cur["running"] = 1
	}
	if p := g.Conf["parent"]; p != "" {
		cur["parent"] = p
	} else if latest != "" {
		cur["parent"] = latest
	}
	out = append(out, cur)
	return out, nil
}

func (s *Server) qemuSnapshotCreate(r *Request) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	name := r.Str("snapname")
	if name == "current" {
		return nil, ParamErr("snapname", "invalid snapshot name 'current'")
	}
	desc, vmstate := r.Str("description"), r.Bool("vmstate")
	return s.startTask(r, g.Node, "qmsnapshot", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.LockGuest(g.VMID, "qemu"); err != nil {
			return err
		}
		return s.takeSnapshot(tc, g, name, desc, vmstate, durSnapshot)
	}), nil
}

func (s *Server) qemuSnapshotDelete(r *Request) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	name := r.Str("snapname")
	return s.startTask(r, g.Node, "qmdelsnapshot", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		sn, err := lockedSnapshot(tc, g, "qemu", name, durSnapshot)
		if err != nil {
			return err
		}
		removeSnapshot(g, sn)
		return nil
	}), nil
}

func (s *Server) qemuSnapshotRollback(r *Request) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	name := r.Str("snapname")
	start := r.Bool("start")
	return s.startTask(r, g.Node, "qmrollback", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		sn, err := lockedSnapshot(tc, g, "qemu", name, durSnapshot)
		if err != nil {
			return err
		}
		if g.Running && !sn.VMState {
			g.Running = false
		}
		restoreSnapshot(g, sn)
		if start && !g.Running {
			g.Running = true
			g.StartedAt = s.clock.Now()
			g.KVM = kvmCommand(g.Conf)
		}
		return nil
	}), nil
}

// snapshotListJSON is the snapshot tree as GET .../snapshot lists it.
func snapshotListJSON(g *Guest) []map[string]any {
	out := []map[string]any{}
	for _, name := range sortedKeys(g.Snapshots) {
		sn := g.Snapshots[name]
		e := map[string]any{"name": name, "snaptime": sn.SnapTime, "description": sn.Description}
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

func (s *Server) lxcSnapshotCreate(r *Request) (any, error) {
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	name := r.Str("snapname")
	if name == "current" || name == "vzdump" {
		return nil, Fail("unable to use snapshot name '%s' (reserved name)", name)
	}
	desc := r.Str("description")
	return s.startTask(r, g.Node, "vzsnapshot", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.LockGuest(g.VMID, "lxc"); err != nil {
			return err
		}
		if err := s.lxcGone(g); err != nil {
			return err
		}
		return s.takeSnapshot(tc, g, name, desc, false, durCTSnapshot)
	}), nil
}

func (s *Server) lxcSnapshotDelete(r *Request) (any, error) {
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	name := r.Str("snapname")
	return s.startTask(r, g.Node, "vzdelsnapshot", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		sn, err := lockedSnapshot(tc, g, "lxc", name, durCTSnapshot)
		if err != nil {
			return err
		}
		removeSnapshot(g, sn)
		return nil
	}), nil
}

func (s *Server) lxcSnapshotRollback(r *Request) (any, error) {
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	name := r.Str("snapname")
	start := r.Bool("start")
	return s.startTask(r, g.Node, "vzrollback", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		sn, err := lockedSnapshot(tc, g, "lxc", name, durCTSnapshot)
		if err != nil {
			return err
		}
		g.Running = false
		restoreSnapshot(g, sn)
		if start {
			g.Running = true
			g.StartedAt = s.clock.Now()
		}
		return nil
	}), nil
}

// lockedSnapshot is the common start of a snapshot task that works on an
// existing snapshot (delete, rollback) for QEMU and LXC alike: take the
// guest's lock, find the snapshot, refuse a guest locked by another
// operation, and spend the operation's duration.
func lockedSnapshot(tc *taskCtx, g *Guest, kind, name string, d time.Duration) (*Snapshot, error) {
	if err := tc.LockGuest(g.VMID, kind); err != nil {
		return nil, err
	}
	sn := g.Snapshots[name]
	if sn == nil {
		return nil, Fail("snapshot '%s' does not exist", name)
	}
	if err := checkLock(g); err != nil {
		return nil, err
	}
	if err := tc.Sleep(d); err != nil {
		return nil, err
	}
	return sn, nil
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
		return Fail("you can't take a snapshot if it's a template")
	}
	if err := checkLock(g); err != nil {
		return err
	}
	if g.Snapshots[name] != nil {
		return Fail("snapshot name '%s' already used", name)
	}
	g.Conf["lock"] = "snapshot"
	if err := tc.Sleep(d); err != nil {
		delete(g.Conf, "lock")
		return err
	}
	delete(g.Conf, "lock")
	conf := copyConf(g.Conf)
	delete(conf, "parent")
	g.Snapshots[name] = &Snapshot{Name: name, Description: desc, Parent: g.Conf["parent"], SnapTime: s.clock.Now().Unix(), VMState: vmstate && g.Running, Conf: conf}
	g.Conf["parent"] = name
	return nil
}

// restoreSnapshot makes sn's config the current one, with sn as parent and
// no pending changes, as a rollback does for QEMU and LXC alike.
func restoreSnapshot(g *Guest, sn *Snapshot) {
	conf := copyConf(sn.Conf)
	conf["parent"] = sn.Name
	g.Conf = conf
	g.Pending = map[string]string{}
	g.PendingDelete = map[string]bool{}
}

// snapshotIndex serves GET .../snapshot/{snapname}: the subdirectories of an
// existing snapshot.
func (s *Server) snapshotIndex(load func(*Request) (*Guest, error)) HandlerFunc {
	return func(r *Request) (any, error) {
		g, err := load(r)
		if err != nil {
			return nil, err
		}
		if g.Snapshots[r.Str("snapname")] == nil {
			return nil, Fail("snapshot '%s' does not exist", r.Str("snapname"))
		}
		return subdirs("rollback", "config"), nil
	}
}

// snapshotConfig serves GET .../snapshot/{snapname}/config: the snapshot's
// config typed by the guest type's keys, with snaptime, description and
// parent.
func (s *Server) snapshotConfig(load func(*Request) (*Guest, error), keyType func(string) Type) HandlerFunc {
	return func(r *Request) (any, error) {
		g, err := load(r)
		if err != nil {
			return nil, err
		}
		sn := g.Snapshots[r.Str("snapname")]
		if sn == nil {
			return nil, Fail("snapshot '%s' does not exist", r.Str("snapname"))
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
func (s *Server) snapshotUpdate(load func(*Request) (*Guest, error), kind string) HandlerFunc {
	return func(r *Request) (any, error) {
		g, err := load(r)
		if err != nil {
			return nil, err
		}
		return s.withGuestLock(g.VMID, kind, func() (any, error) {
			sn := g.Snapshots[r.Str("snapname")]
			if sn == nil {
				return nil, Fail("snapshot '%s' does not exist", r.Str("snapname"))
			}
			if r.Has("description") {
				sn.Description = r.Str("description")
			}
			return nil, nil
		})
	}
}
