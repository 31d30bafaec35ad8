package pvesim

import (
	"strconv"
	"time"
)

// The status lag of /cluster/resources. Proxmox does not read a guest's
// config or process when it answers GET /cluster/resources:
//
//   - PVE/API2/Cluster.pm (resources) takes each guest's node from the
//     vmlist (pmxcfs, current at once), its lock and tags from the config
//     (get_guest_config_properties), and everything else from the RRD dump
//     through PVE/API2Tools.pm extract_vm_stats: name, status, template,
//     uptime, maxcpu, cpu, maxmem, mem, maxdisk, disk and the I/O counters.
//     Without an RRD entry the guest reads only {id, vmid, node, type,
//     status: "unknown"} (plus lock and tags).
//   - PVE/Service/pvestatd.pm (update_qemu_status, update_lxc_status) writes
//     those entries from vmstatus every $updatetime = 10 seconds, on each
//     node for its own guests; vmstatus names a guest without a name
//     "VM <vmid>" (qemu-server) or "CT<vmid>" (pve-container).
//   - pve-cluster src/pmxcfs/status.c (rrd_entry_is_old) drops an entry
//     that was not updated for 5 minutes; the entry is keyed by VMID only,
//     so a guest created at the VMID of one deleted earlier shows the old
//     guest's figures until the next report.
//
// The simulator runs that report on its own clock (Options.Clock), every
// Options.StatusInterval, independent of TaskSpeed. It runs lazily: before
// any request or task step touches the state, a report that fell due since
// the last one is taken, so it sees the state as it was at the report time.

// DefaultStatusInterval is pvestatd's update interval.
const DefaultStatusInterval = 10 * time.Second

// statExpiry is how long pmxcfs keeps an RRD entry without an update.
const statExpiry = 5 * time.Minute

type statEntry struct {
	at  int64    // unix time of the report
	res guestRes // the reported figures (name, status, template, sizes)
}

type statd struct {
	interval time.Duration // <= 0: /cluster/resources is live
	epoch    time.Time
	cycle    int64 // index of the last report taken, -1 before the first
	entries  map[int]statEntry
}

func (sd *statd) init(interval time.Duration, now time.Time) {
	sd.interval, sd.epoch, sd.cycle, sd.entries = interval, now, -1, map[int]statEntry{}
}

// statdCatchUp takes the report that fell due since the last one, if any.
// Called with s.mu held, before anything changes the state.
func (s *Server) statdCatchUp() {
	sd := &s.statd
	if sd.interval <= 0 {
		return
	}
	now := s.clock.Now()
	k := int64(now.Sub(sd.epoch) / sd.interval)
	if k <= sd.cycle {
		return
	}
	sd.cycle = k
	at := sd.epoch.Add(time.Duration(k) * sd.interval).Unix()
	for id, g := range s.state.Guests {
		if s.faults.nodeOffline(g.Node) {
			continue // that node's pvestatd does not report
		}
		sd.entries[id] = statEntry{at: at, res: s.guestRes(g, at)}
	}
	for id, e := range sd.entries {
		if now.Unix()-e.at > int64(statExpiry/time.Second) {
			delete(sd.entries, id)
		}
	}
	s.touch()
}

// resetStats forgets every report, as a restarted cluster (pmxcfs keeps
// the RRD cache in memory) does.
func (s *Server) resetStats() {
	s.statd.entries = map[int]statEntry{}
	s.statd.cycle = -1
	s.statd.epoch = s.clock.Now()
}

// reportedRes is a guest as /cluster/resources shows it: live node, lock
// and tags over the last report; ok is false when there is no report
// (status "unknown").
func (s *Server) reportedRes(g *Guest, now int64) (guestRes, bool) {
	live := s.guestRes(g, now)
	if s.statd.interval <= 0 {
		return live, true
	}
	e, ok := s.statd.entries[g.VMID]
	if !ok || now-e.at > int64(statExpiry/time.Second) {
		return guestRes{ID: live.ID, Type: live.Type, VMID: live.VMID, Node: live.Node, Status: "unknown",
			Tags: live.Tags, Lock: live.Lock, HAState: live.HAState}, false
	}
	r := e.res
	r.ID, r.Type, r.VMID, r.Node, r.Tags, r.Lock = live.ID, live.Type, live.VMID, live.Node, live.Tags, live.Lock
	// hastate is read from the HA manager's status at each call (Cluster.pm resources).
	r.HAState = live.HAState
	return r, true
}

// defaultGuestName is vmstatus' name for a guest whose config has none.
func defaultGuestName(g *Guest) string {
	if g.Type == "lxc" {
		return "CT" + strconv.Itoa(g.VMID)
	}
	return "VM " + strconv.Itoa(g.VMID)
}

// appendUnknownRes writes a guest without an RRD entry as Proxmox does:
// only what the vmlist and the config give.
func appendUnknownRes(b []byte, r guestRes) []byte {
	b = appendGuestHead(b, r)
	b = append(b, `,"status":"unknown"`...)
	b = appendGuestOptional(b, r)
	return append(b, '}')
}

// appendGuestOptional appends the members a guest's resource carries only
// when set (tags, lock, pool, hastate), in the order both the fresh and the
// "unknown" entry write them.
func appendGuestOptional(b []byte, r guestRes) []byte {
	for _, m := range [...]struct{ key, val string }{
		{`,"tags":`, r.Tags}, {`,"lock":`, r.Lock}, {`,"pool":`, r.Pool}, {`,"hastate":`, r.HAState},
	} {
		if m.val != "" {
			b = append(b, m.key...)
			b = appendJSONString(b, m.val)
		}
	}
	return b
}
