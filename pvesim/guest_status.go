package pvesim

// Guest listings and status (GET /nodes/{node}/qemu, .../lxc and
// .../status/current).

import (
	"sort"
	"strconv"
)

func (s *Server) qemuList(r *Request) (any, error) {
	node := r.Str("node")
	now := s.clock.Now().Unix()
	ids := s.auditedGuests(r.User, node, "qemu")
	out := []map[string]any{}
	for _, id := range ids {
		g := s.state.Guests[id]
		res := s.guestResource(g, now)
		m := map[string]any{
			"vmid": g.VMID, "name": res["name"], "status": res["status"], "maxmem": res["maxmem"], "mem": res["mem"],
			"cpus": res["maxcpu"], "cpu": res["cpu"], "maxdisk": res["maxdisk"], "disk": 0, "uptime": res["uptime"],
			"netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0,
		}
		if tags, ok := res["tags"]; ok {
			m["tags"] = tags
		}
		if g.IsTemplate() {
			m["template"] = 1
		}
		if lock := g.Conf["lock"]; lock != "" {
			m["lock"] = lock
		}
		if g.Running {
			m["pid"] = 100000 + g.VMID
		}
		out = append(out, m)
	}
	return out, nil
}

func (s *Server) qemuStatusCurrent(r *Request) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now().Unix()
	res := s.guestResource(g, now)
	out := map[string]any{
		"vmid": g.VMID, "name": res["name"], "status": res["status"], "cpus": res["maxcpu"], "maxmem": res["maxmem"],
		"mem": res["mem"], "maxdisk": res["maxdisk"], "disk": 0, "uptime": res["uptime"], "cpu": res["cpu"],
		"netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0, "ha": s.haStatusOf(g),
	}
	statusTags(out, res, g)
	if a, err := parsePropString(qemuConfigTypes.Lookup("agent").PropFormat, g.Conf["agent"], ""); err == nil && a["enabled"] == "1" {
		out["agent"] = 1
	}
	if g.Running {
		out["qmpstatus"] = "running"
		out["pid"] = 100000 + g.VMID
		out["running-machine"] = "pc-i440fx-10.1+pve0"
		out["running-qemu"] = "10.1.2"
	} else {
		out["qmpstatus"] = "stopped"
	}
	return out, nil
}

func (s *Server) lxcList(r *Request) (any, error) {
	node := r.Str("node")
	ids := s.auditedGuests(r.User, node, "lxc")
	out := []map[string]any{}
	for _, id := range ids {
		out = append(out, s.lxcStatusJSON(s.state.Guests[id]))
	}
	return out, nil
}

// lxcStatusJSON is vmstatus for one container.
func (s *Server) lxcStatusJSON(g *Guest) map[string]any {
	res := s.guestResource(g, s.clock.Now().Unix())
	swap, err := strconv.ParseInt(g.Conf["swap"], 10, 64)
	if err != nil {
		swap = 512
	}
	cpus := 1
	if c, err := strconv.Atoi(g.Conf["cores"]); err == nil {
		cpus = c
	}
	out := map[string]any{
		"vmid": g.VMID, "name": res["name"], "type": "lxc", "status": res["status"], "cpus": cpus, "cpu": res["cpu"],
		"maxmem": res["maxmem"], "mem": res["mem"], "maxswap": swap << 20, "swap": 0, "maxdisk": res["maxdisk"], "disk": 0,
		"uptime": res["uptime"], "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0,
	}
	statusTags(out, res, g)
	if g.Running {
		out["pid"] = 200000 + g.VMID
	}
	return out
}

func (s *Server) lxcStatusCurrent(r *Request) (any, error) {
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	out := s.lxcStatusJSON(g)
	out["ha"] = s.haStatusOf(g)
	return out, nil
}

// auditedGuests lists, in VMID order, the guests of one type on node that
// user has VM.Audit on: vmlist shows only those.
func (s *Server) auditedGuests(user, node, typ string) []int {
	var ids []int
	for id, g := range s.state.Guests {
		if g.Node == node && g.Type == typ && s.can(user, "/vms/"+strconv.Itoa(id), "VM.Audit") {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	return ids
}

// statusTags copies what status/current shows only when set, for QEMU and
// LXC alike: tags and lock from the guest's resource, and template.
func statusTags(out, res map[string]any, g *Guest) {
	if t, ok := res["tags"]; ok {
		out["tags"] = t
	}
	if l, ok := res["lock"]; ok {
		out["lock"] = l
	}
	if g.IsTemplate() {
		out["template"] = 1
	}
}
