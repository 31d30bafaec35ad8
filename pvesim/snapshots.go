package pvesim

import "time"

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
