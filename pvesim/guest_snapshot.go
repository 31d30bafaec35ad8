package pvesim

// Snapshots (list, create, delete, rollback) for VMs then containers.

import (
	"strconv"
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
		if err := tc.Sleep(durSnapshot); err != nil {
			delete(g.Conf, "lock")
			return err
		}
		delete(g.Conf, "lock")
		conf := copyConf(g.Conf)
		delete(conf, "parent")
		g.Snapshots[name] = &Snapshot{Name: name, Description: desc, Parent: g.Conf["parent"], SnapTime: s.clock.Now().Unix(), VMState: vmstate && g.Running, Conf: conf}
		g.Conf["parent"] = name
		return nil
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
		conf := copyConf(sn.Conf)
		conf["parent"] = name
		g.Conf = conf
		g.Pending = map[string]string{}
		g.PendingDelete = map[string]bool{}
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
		if err := tc.Sleep(durCTSnapshot); err != nil {
			delete(g.Conf, "lock")
			return err
		}
		delete(g.Conf, "lock")
		conf := copyConf(g.Conf)
		delete(conf, "parent")
		g.Snapshots[name] = &Snapshot{Name: name, Description: desc, Parent: g.Conf["parent"], SnapTime: s.clock.Now().Unix(), Conf: conf}
		g.Conf["parent"] = name
		return nil
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
		conf := copyConf(sn.Conf)
		conf["parent"] = name
		g.Conf = conf
		g.Pending = map[string]string{}
		g.PendingDelete = map[string]bool{}
		if start {
			g.Running = true
			g.StartedAt = s.clock.Now()
		}
		return nil
	}), nil
}
