package pvesim

import (
	"sort"
	"strconv"
	"strings"
)

// uniqueTags is PVE::GuestHelpers::get_unique_tags with the default tag
// style: lower-cased, sorted, de-duplicated, joined by ';'.
func uniqueTags(s string) string {
	tags := splitList(s)
	for i, t := range tags {
		tags[i] = strings.ToLower(t)
	}
	sort.Strings(tags)
	var out []string
	for i, t := range tags {
		if i > 0 && tags[i-1] == t {
			continue
		}
		out = append(out, t)
	}
	return strings.Join(out, ";")
}

var (
	pNode = func() *Param { return Str("node").Fmt("pve-node") }
	pVMID = func() *Param { return Int("vmid").Fmt("pve-vmid").Min(100).Max(999999999) }
)

func init() {
	registerRoutes(func(s *Server) {
		s.Handle(&Route{Method: "GET", Path: "/", Handler: func(*Request) (any, error) {
			return subdirs("version", "cluster", "nodes", "storage", "access", "pools"), nil
		}})
		s.Handle(&Route{Method: "GET", Path: "/version", Handler: s.getVersion})
		s.Handle(&Route{Method: "GET", Path: "/nodes", Handler: s.listNodes})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}", ProxyTo: "node", Params: NewParams(pNode()),
			Handler: func(*Request) (any, error) {
				return subdirs("qemu", "lxc", "storage", "tasks", "status", "network", "version", "aplinfo"), nil
			}})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/status", ProxyTo: "node", Params: NewParams(pNode()), Handler: s.nodeStatus})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/version", ProxyTo: "node", Params: NewParams(pNode()), Handler: s.getVersion})
		s.Handle(&Route{Method: "GET", Path: "/cluster", Handler: func(*Request) (any, error) {
			return subdirs("resources", "nextid", "status", "tasks", "sdn"), nil
		}})
		s.Handle(&Route{Method: "GET", Path: "/cluster/resources",
			Params:  NewParams(Str("type").Opt().Enum("vm", "storage", "node", "sdn")),
			Handler: s.clusterResources})
		s.Handle(&Route{Method: "GET", Path: "/cluster/nextid", Params: NewParams(pVMID().Opt()), Handler: s.nextID})
		s.Handle(&Route{Method: "GET", Path: "/cluster/status", Handler: s.clusterStatus})
		s.Handle(&Route{Method: "GET", Path: "/cluster/tasks", Handler: s.clusterTasks})
	})
}

func subdirs(names ...string) []map[string]any {
	out := make([]map[string]any, len(names))
	for i, n := range names {
		out[i] = map[string]any{"subdir": n}
	}
	return out
}

func (s *Server) getVersion(*Request) (any, error) {
	release := s.opts.Version
	if parts := strings.Split(release, "."); len(parts) >= 2 {
		release = parts[0] + "." + parts[1]
	}
	return map[string]any{"version": s.opts.Version, "release": release, "repoid": "2f5a5b8c9d1e3f40"}, nil
}

func (s *Server) nodeUsage(n *Node) (cpu float64, mem int64) {
	mem = 2 * gib
	for _, g := range s.state.Guests {
		if g.Node == n.Name && g.Running {
			mem += guestMaxMem(g)
			cpu += 0.01
		}
	}
	if mem > n.MaxMem {
		mem = n.MaxMem
	}
	return cpu, mem
}

func (s *Server) listNodes(*Request) (any, error) {
	now := s.clock.Now()
	out := []map[string]any{}
	for _, n := range s.state.Nodes {
		m := map[string]any{"node": n.Name, "id": "node/" + n.Name, "type": "node", "ssl_fingerprint": s.fingerprint, "level": ""}
		if s.faults.nodeOffline(n.Name) {
			m["status"] = "offline"
		} else {
			cpu, mem := s.nodeUsage(n)
			m["status"] = "online"
			m["cpu"] = cpu
			m["maxcpu"] = n.MaxCPU
			m["mem"] = mem
			m["maxmem"] = n.MaxMem
			m["disk"] = 8 * gib
			m["maxdisk"] = n.MaxDisk
			m["uptime"] = int64(now.Sub(n.BootTime).Seconds())
		}
		out = append(out, m)
	}
	return out, nil
}

func (s *Server) nodeStatus(r *Request) (any, error) {
	n := s.state.node(r.Str("node"))
	cpu, mem := s.nodeUsage(n)
	now := s.clock.Now()
	return map[string]any{
		"uptime":     int64(now.Sub(n.BootTime).Seconds()),
		"cpu":        cpu,
		"wait":       0,
		"loadavg":    []string{"0.12", "0.10", "0.08"},
		"idle":       0,
		"kversion":   "Linux 6.17.2-1-pve #1 SMP PREEMPT_DYNAMIC PMX 6.17.2-1 (2025-11-04T08:33Z)",
		"pveversion": "pve-manager/" + s.opts.Version + "/2f5a5b8c9d1e3f40",
		"cpuinfo": map[string]any{"cpus": n.MaxCPU, "cores": n.MaxCPU / 2, "sockets": 1, "model": "Simulated CPU @ 3.00GHz",
			"mhz": "3000.000", "hvm": "1", "user_hz": 100, "flags": "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov"},
		"memory":         map[string]any{"total": n.MaxMem, "used": mem, "free": n.MaxMem - mem, "available": n.MaxMem - mem},
		"swap":           map[string]any{"total": 0, "used": 0, "free": 0},
		"rootfs":         map[string]any{"total": n.MaxDisk, "used": 8 * gib, "free": n.MaxDisk - 8*gib, "avail": n.MaxDisk - 8*gib},
		"ksm":            map[string]any{"shared": 0},
		"boot-info":      map[string]any{"mode": "efi", "secureboot": 0},
		"current-kernel": map[string]any{"sysname": "Linux", "release": "6.17.2-1-pve", "machine": "x86_64", "version": "#1 SMP PREEMPT_DYNAMIC PMX 6.17.2-1"},
	}, nil
}

// guestMaxMem is the configured memory in bytes.
func guestMaxMem(g *Guest) int64 {
	mem := g.Conf["memory"]
	if g.Type == "qemu" && strings.ContainsAny(mem, ",=") {
		if f, err := parsePropString(qemuMemoryFormat, mem, ""); err == nil {
			mem = f["current"]
		}
	}
	n, err := strconv.ParseInt(mem, 10, 64)
	if err != nil || n <= 0 {
		n = 512
		if g.Type == "qemu" {
			n = 2048
		}
	}
	return n << 20
}

func (s *Server) guestMaxDisk(g *Guest) int64 {
	key := "rootfs"
	if g.Type == "qemu" {
		key = ""
		for _, k := range []string{"bootdisk"} {
			if v := g.Conf[k]; v != "" {
				key = v
			}
		}
		if key == "" {
			for k, v := range g.Conf {
				if (key == "" || k < key) && isQemuDiskKey(k) && !strings.Contains(v, "media=cdrom") && !strings.Contains(v, "cloudinit") {
					key = k
				}
			}
		}
	}
	if key == "" {
		return 0
	}
	for _, part := range strings.Split(g.Conf[key], ",") {
		if v, ok := strings.CutPrefix(part, "size="); ok {
			n, _ := ParseSize(v)
			return n
		}
	}
	return 0
}

// guestRes is one guest in /cluster/resources.
type guestRes struct {
	ID        string  `json:"id"`
	Type      string  `json:"type"`
	VMID      int     `json:"vmid"`
	Node      string  `json:"node"`
	Name      string  `json:"name"`
	Status    string  `json:"status"`
	Template  int     `json:"template"`
	Tags      string  `json:"tags,omitempty"`
	Lock      string  `json:"lock,omitempty"`
	MaxCPU    int     `json:"maxcpu"`
	CPU       float64 `json:"cpu"`
	MaxMem    int64   `json:"maxmem"`
	Mem       int64   `json:"mem"`
	MaxDisk   int64   `json:"maxdisk"`
	Disk      int64   `json:"disk"`
	Uptime    int64   `json:"uptime"`
	DiskRead  int64   `json:"diskread"`
	DiskWrite int64   `json:"diskwrite"`
	NetIn     int64   `json:"netin"`
	NetOut    int64   `json:"netout"`
}

func (s *Server) guestRes(g *Guest, now int64) guestRes {
	r := guestRes{ID: g.Type + "/" + strconv.Itoa(g.VMID), Type: g.Type, VMID: g.VMID, Node: g.Node, Name: g.Name(),
		MaxMem: guestMaxMem(g), MaxDisk: s.guestMaxDisk(g), Tags: g.Conf["tags"], Lock: g.Conf["lock"], Status: "stopped"}
	if g.IsTemplate() {
		r.Template = 1
	}
	cores, _ := strconv.Atoi(g.Conf["cores"])
	if cores == 0 {
		cores = 1
	}
	sockets, _ := strconv.Atoi(g.Conf["sockets"])
	if sockets == 0 {
		sockets = 1
	}
	r.MaxCPU = cores * sockets
	if g.Running {
		r.Status = "running"
		r.Uptime = now - g.StartedAt.Unix()
		r.CPU = 0.01
		r.Mem = r.MaxMem / 2
	}
	return r
}

// guestResource is guestRes as a map, for the endpoints that add fields.
func (s *Server) guestResource(g *Guest, now int64) map[string]any {
	r := s.guestRes(g, now)
	m := map[string]any{
		"id": r.ID, "type": r.Type, "vmid": r.VMID, "node": r.Node, "name": r.Name, "status": r.Status,
		"template": r.Template, "maxcpu": r.MaxCPU, "cpu": r.CPU, "maxmem": r.MaxMem, "mem": r.Mem,
		"maxdisk": r.MaxDisk, "disk": 0, "uptime": r.Uptime, "diskread": 0, "diskwrite": 0, "netin": 0, "netout": 0,
	}
	if r.Tags != "" {
		m["tags"] = r.Tags
	}
	if r.Lock != "" {
		m["lock"] = r.Lock
	}
	return m
}

func (s *Server) clusterResources(r *Request) (any, error) {
	typ := r.Str("type")
	now := s.clock.Now().Unix()
	out := []any{}
	if typ == "" || typ == "vm" {
		ids := make([]int, 0, len(s.state.Guests))
		for id := range s.state.Guests {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		for _, id := range ids {
			out = append(out, s.guestRes(s.state.Guests[id], now))
		}
	}
	if typ == "" || typ == "node" {
		nodes, _ := s.listNodes(r)
		for _, n := range nodes.([]map[string]any) {
			out = append(out, n)
		}
	}
	if typ == "" || typ == "storage" {
		for _, n := range s.state.Nodes {
			if s.faults.nodeOffline(n.Name) {
				continue
			}
			for _, st := range s.state.Storages {
				shared := 0
				if st.Shared {
					shared = 1
				}
				out = append(out, map[string]any{
					"id": "storage/" + n.Name + "/" + st.ID, "type": "storage", "node": n.Name, "storage": st.ID,
					"status": "available", "content": strings.Join(st.Content, ","), "plugintype": st.Type,
					"shared": shared, "disk": s.state.usedBytes(n.Name, st.ID), "maxdisk": st.Total,
				})
			}
		}
	}
	if typ == "" || typ == "sdn" {
		for _, n := range s.state.Nodes {
			if s.faults.nodeOffline(n.Name) {
				continue
			}
			out = append(out, map[string]any{"id": "sdn/" + n.Name + "/localnetwork", "type": "sdn", "sdn": "localnetwork", "node": n.Name, "status": "ok"})
		}
	}
	return out, nil
}

func (s *Server) nextID(r *Request) (any, error) {
	if vmid, ok := r.Int("vmid"); ok {
		if _, taken := s.state.Guests[vmid]; taken {
			return nil, ParamErr("vmid", "VM "+strconv.Itoa(vmid)+" already exists")
		}
		return strconv.Itoa(vmid), nil
	}
	for id := 100; id <= 999999999; id++ {
		if _, taken := s.state.Guests[id]; !taken {
			return strconv.Itoa(id), nil
		}
	}
	return nil, Fail("unable to get any free VMID in range [100, 999999999]")
}

func (s *Server) clusterStatus(*Request) (any, error) {
	out := []map[string]any{{
		"id": "cluster", "type": "cluster", "name": "pvesim", "nodes": len(s.state.Nodes), "quorate": 1, "version": len(s.state.Nodes) + 2,
	}}
	for _, n := range s.state.Nodes {
		online := 1
		if s.faults.nodeOffline(n.Name) {
			online = 0
		}
		local := 0
		if n.ID == 1 {
			local = 1
		}
		out = append(out, map[string]any{
			"id": "node/" + n.Name, "type": "node", "name": n.Name, "nodeid": n.ID, "ip": n.IP,
			"online": online, "local": local, "level": "",
		})
	}
	return out, nil
}

func (s *Server) clusterTasks(*Request) (any, error) {
	out := []map[string]any{}
	for i := len(s.tasks.order) - 1; i >= 0 && len(out) < 50; i-- {
		out = append(out, taskJSON(s.tasks.order[i]))
	}
	return out, nil
}
