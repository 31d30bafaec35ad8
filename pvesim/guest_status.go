package pvesim

// Guest listings and status (GET /nodes/{node}/qemu, .../lxc and
// .../status/current).

import (
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

func (s *Server) qemuList(r *route.Request) (any, error) {
	node := r.Str("node")
	now := s.clock.Now().Unix()
	ids := s.auditedGuests(r.User, node, "qemu")
	out := []map[string]any{}
	for _, id := range ids {
		out = append(out, s.qemuVMStatus(s.state.Guests[id], now, r.Bool("full")))
	}
	return out, nil
}

// qemuVMStatus is qemu-server PVE/QemuServer.pm vmstatus for one VM: what
// the config and /proc give for every VM, and, with full (status/current,
// the list with full=1), what QMP answers for a running one
// (qemuVMStatusFull). Without full there is no qmpstatus, diskread or
// diskwrite.
func (s *Server) qemuVMStatus(g *Guest, now int64, full bool) map[string]any {
	res := s.guestResource(g, now)
	out := map[string]any{
		"vmid": g.VMID, "name": res["name"], "status": res["status"], "cpus": res["maxcpu"], "maxmem": res["maxmem"],
		"mem": res["mem"], "memhost": res["mem"], "maxdisk": res["maxdisk"], "disk": 0, "uptime": res["uptime"],
		"cpu": res["cpu"], "netin": 0, "netout": 0,
	}
	statusTags(out, res, g)
	if b, _ := strconv.ParseInt(g.Conf["balloon"], 10, 64); b > 0 {
		out["balloon_min"] = b << 20
		shares := int64(1000) // load_defaults: shares
		if v, err := strconv.ParseInt(g.Conf["shares"], 10, 64); err == nil {
			shares = v
		}
		out["shares"] = shares
	}
	if qemuHasSerial(g.Conf) {
		out["serial"] = 1
	}
	if g.Running {
		out["pid"] = 100000 + g.VMID
		for _, k := range pressureKeys {
			out[k] = 0 // avg10 * 1: a number
		}
	}
	if full {
		s.qemuVMStatusFull(g, out)
	}
	return out
}

// pressureKeys are the cgroup pressure stall averages vmstatus reports for
// a running guest.
var pressureKeys = []string{"pressurecpusome", "pressurecpufull", "pressureiosome", "pressureiofull",
	"pressurememorysome", "pressurememoryfull"}

// qemuStatusCurrent is vm_status (qemu-server PVE/API2/Qemu.pm): the full
// vmstatus, the HA status, spice and clipboard when vga is set, agent.
func (s *Server) qemuStatusCurrent(r *route.Request, g *Guest) (any, error) {
	out := s.qemuVMStatus(g, s.clock.Now().Unix(), true)
	out["ha"] = s.haStatusOf(g)
	if vga := g.Conf["vga"]; vga != "" {
		v, _ := parsePropString(qemuConfigTypes.Lookup("vga").PropFormat, vga, "")
		if t := v["type"]; strings.HasPrefix(t, "virtio") || strings.HasPrefix(t, "qxl") {
			out["spice"] = 1
		}
		// $vga->{clipboard}: null when the vga string names none.
		if cb, ok := v["clipboard"]; ok {
			out["clipboard"] = cb
		} else {
			out["clipboard"] = nil
		}
	}
	if a, err := parsePropString(qemuConfigTypes.Lookup("agent").PropFormat, g.Conf["agent"], ""); err == nil && a["enabled"] == "1" {
		out["agent"] = 1
	}
	return out, nil
}

func (s *Server) lxcList(r *route.Request) (any, error) {
	node := r.Str("node")
	ids := s.auditedGuests(r.User, node, "lxc")
	out := []map[string]any{}
	for _, id := range ids {
		out = append(out, s.lxcStatusJSON(s.state.Guests[id]))
	}
	return out, nil
}

// lxcStatusJSON is vmstatus for one container (pve-container
// src/PVE/LXC.pm): cpus is cores, else the raw cpulimit string of the
// config ("1.5"; "0" counts as unset), else the node's CPU count; maxswap
// is swap (0 when unset); a running one adds its cgroup pressures as read
// from the file, strings ("0.00").
func (s *Server) lxcStatusJSON(g *Guest) map[string]any {
	res := s.guestResource(g, s.clock.Now().Unix())
	swap, _ := strconv.ParseInt(g.Conf["swap"], 10, 64)
	var cpus any = s.nodeCPUs(g.Node)
	if c, _ := strconv.Atoi(g.Conf["cores"]); c > 0 {
		cpus = c
	} else if l := g.Conf["cpulimit"]; l != "" && l != "0" {
		cpus = l
	}
	name, _ := res["name"].(string)
	out := map[string]any{
		"vmid": g.VMID, "name": strings.Join(strings.Fields(name), ""), "type": "lxc",
		"status": res["status"], "cpus": cpus, "cpu": res["cpu"],
		"maxmem": res["maxmem"], "mem": res["mem"], "maxswap": swap << 20, "swap": 0, "maxdisk": res["maxdisk"], "disk": 0,
		"uptime": res["uptime"], "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0,
	}
	statusTags(out, res, g)
	if g.Running {
		out["pid"] = 200000 + g.VMID
		for _, k := range pressureKeys {
			out[k] = "0.00"
		}
	}
	return out
}

func (s *Server) lxcStatusCurrent(r *route.Request, g *Guest) (any, error) {
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
