package pvesim

import (
	"encoding/json"
	"iter"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

var (
	pNode = func() *route.Param { return route.Str("node").Fmt("pve-node") }
	pVMID = func() *route.Param { return route.Int("vmid").Fmt("pve-vmid").Min(100).Max(999999999) }
)

func init() {
	registerRoutes(func(s *Server) {
		s.Handle(&route.Route{Method: "GET", Path: "/", Perm: route.PermUser(), Handler: func(*route.Request) (any, error) {
			return subdirs("version", "cluster", "nodes", "storage", "access", "pools"), nil
		}})
		s.Handle(&route.Route{Method: "GET", Path: "/version", Perm: route.PermUser(), Handler: s.getVersion})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes", Perm: route.PermUser(), Handler: s.listNodes})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}", Perm: route.PermUser(), ProxyTo: "node", Params: route.NewParams(pNode()),
			Handler: func(*route.Request) (any, error) {
				return subdirs("qemu", "lxc", "storage", "tasks", "status", "network", "version", "aplinfo", "time"), nil
			}})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/status", Perm: route.PermCheck("/nodes/{node}", "Sys.Audit"), ProxyTo: "node", Params: route.NewParams(pNode()), Handler: s.nodeStatus})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/version", Perm: route.PermUser(), ProxyTo: "node", Params: route.NewParams(pNode()), Handler: s.getVersion})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster", Perm: route.PermUser(), Handler: func(*route.Request) (any, error) {
			return subdirs("resources", "nextid", "status", "tasks", "sdn"), nil
		}})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/resources", Perm: route.PermUser(),
			Params:  route.NewParams(route.Str("type").Opt().Enum("vm", "storage", "node", "sdn")),
			Handler: s.clusterResources})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/nextid", Perm: route.PermUser(), Params: route.NewParams(pVMID().Opt()), Handler: s.nextID})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/status", Perm: route.PermCheck("/", "Sys.Audit"), Handler: s.clusterStatus})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/tasks", Perm: route.PermUser(), Handler: s.clusterTasks})
	})
}

func subdirs(names ...string) []map[string]any {
	out := make([]map[string]any, len(names))
	for i, n := range names {
		out[i] = map[string]any{"subdir": n}
	}
	return out
}

func (s *Server) getVersion(*route.Request) (any, error) {
	release := s.opts.Version
	if parts := strings.Split(release, "."); len(parts) >= 2 {
		release = parts[0] + "." + parts[1]
	}
	return map[string]any{"version": s.opts.Version, "release": release, "repoid": "2f5a5b8c9d1e3f40"}, nil
}

func (s *Server) nodeUsage(n *Node) (cpu float64, mem int64) {
	u := s.nodeUsages()[n.Name]
	return u.cpu, u.mem
}

type nodeUse struct {
	cpu float64
	mem int64
}

// nodeUsages sums, in one pass, what the running guests use on each node.
func (s *Server) nodeUsages() map[string]nodeUse {
	out := make(map[string]nodeUse, len(s.state.Nodes))
	for _, n := range s.state.Nodes {
		out[n.Name] = nodeUse{mem: 2 * gib}
	}
	for _, g := range s.state.Guests {
		if !g.Running {
			continue
		}
		if u, ok := out[g.Node]; ok {
			u.mem += guestMaxMem(g)
			u.cpu += 0.01
			out[g.Node] = u
		}
	}
	for _, n := range s.state.Nodes {
		if u := out[n.Name]; u.mem > n.MaxMem {
			u.mem = n.MaxMem
			out[n.Name] = u
		}
	}
	return out
}

func (s *Server) listNodes(*route.Request) (any, error) {
	return s.nodeList(s.clock.Now().Unix()), nil
}

func (s *Server) nodeList(now int64) []map[string]any {
	usage := s.nodeUsages()
	out := []map[string]any{}
	for _, n := range s.state.Nodes {
		m := map[string]any{"node": n.Name, "id": "node/" + n.Name, "type": "node", "ssl_fingerprint": s.fingerprint, "level": ""}
		if s.faults.nodeOffline(n.Name) {
			m["status"] = "offline"
		} else {
			u := usage[n.Name]
			m["status"] = "online"
			m["cpu"] = u.cpu
			m["maxcpu"] = n.MaxCPU
			m["mem"] = u.mem
			m["maxmem"] = n.MaxMem
			m["disk"] = 8 * gib
			m["maxdisk"] = n.MaxDisk
			m["uptime"] = now - n.BootTime.Unix()
		}
		out = append(out, m)
	}
	return out
}

func (s *Server) nodeStatus(r *route.Request) (any, error) {
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
func guestMaxMem(g *Guest) int64 { return maxMemOf(g.Type == "qemu", g.Conf["memory"]) }

func maxMemOf(qemu bool, mem string) int64 {
	if qemu && strings.ContainsAny(mem, ",=") {
		if f, err := parsePropString(qemuMemoryFormat, mem, ""); err == nil {
			mem = f["current"]
		}
	}
	n, err := strconv.ParseInt(mem, 10, 64)
	if err != nil || n <= 0 {
		// 512 MiB for both: qemu-server PVE/QemuServer/Memory.pm
		// ($memory_fmt current, default 512) and pve-container LXC.pm
		// vmstatus (memory || 512).
		n = 512
	}
	return n << 20
}

// guestRes is one guest in /cluster/resources.
type guestRes struct {
	ID       string  `json:"id"`
	Type     string  `json:"type"`
	VMID     int     `json:"vmid"`
	Node     string  `json:"node"`
	Name     string  `json:"name"`
	Status   string  `json:"status"`
	Template int     `json:"template"`
	Tags     string  `json:"tags,omitempty"`
	Lock     string  `json:"lock,omitempty"`
	Pool     string  `json:"pool,omitempty"`
	MaxCPU   int     `json:"maxcpu"`
	CPU      float64 `json:"cpu"`
	MaxMem   int64   `json:"maxmem"`
	Mem      int64   `json:"mem"`
	// MemHost is the host's view of the guest's memory, which pvestatd
	// writes to the pve-vm-9.0 RRD (API2Tools.pm extract_vm_stats).
	MemHost   int64 `json:"memhost"`
	MaxDisk   int64 `json:"maxdisk"`
	Disk      int64 `json:"disk"`
	Uptime    int64 `json:"uptime"`
	DiskRead  int64 `json:"diskread"`
	DiskWrite int64 `json:"diskwrite"`
	NetIn     int64 `json:"netin"`
	NetOut    int64 `json:"netout"`
	// HAState is the CRM's state of the guest's HA service, or the
	// requested state before the CRM has seen it (API2/Cluster.pm resources).
	HAState string `json:"hastate,omitempty"`
}

// guestRes reads what /cluster/resources shows of a guest in one pass over
// its config (this runs for every guest on every uncached answer).
func (s *Server) guestRes(g *Guest, now int64) guestRes {
	var name, tags, lock, template, cores, sockets, vcpus, cpulimit, memory, boot, bootdisk, rootfs string
	qemu := g.Type == "qemu"
	for k, v := range g.Conf {
		switch k {
		case "name":
			if qemu {
				name = v
			}
		case "hostname":
			if !qemu {
				name = v
			}
		case "tags":
			tags = v
		case "lock":
			lock = v
		case "template":
			template = v
		case "cores":
			cores = v
		case "sockets":
			sockets = v
		case "vcpus":
			vcpus = v
		case "cpulimit":
			cpulimit = v
		case "memory":
			memory = v
		case "boot":
			boot = v
		case "bootdisk":
			bootdisk = v
		case "rootfs":
			rootfs = v
		}
	}
	if name == "" {
		name = defaultGuestName(g)
	}
	r := guestRes{ID: g.Type + "/" + strconv.Itoa(g.VMID), Type: g.Type, VMID: g.VMID, Node: g.Node, Name: name,
		MaxMem: maxMemOf(qemu, memory), Tags: tags, Lock: lock, Status: "stopped"}
	if qemu {
		r.MaxDisk = qemuBootDiskSize(g.Conf, boot, bootdisk)
	} else {
		r.MaxDisk = lxcRootfsSize(rootfs)
	}
	if h := s.state.HA; h != nil {
		sid := haSID(g)
		if sv := h.Services[sid]; sv != nil {
			r.HAState = sv.State
		} else if conf := h.Resources[sid]; conf != nil {
			r.HAState = conf["state"]
		}
	}
	if template == "1" {
		r.Template = 1
	}
	r.MaxCPU = guestCPUs(qemu, cores, sockets, vcpus, cpulimit, s.nodeCPUs(g.Node))
	r.setRunning(g, now)
	return r
}

// setRunning fills in what a running guest's row adds: its status, its
// uptime and a light load.
func (r *guestRes) setRunning(g *Guest, now int64) {
	if g.Running {
		r.Status = "running"
		r.Uptime = now - g.StartedAt.Unix()
		r.CPU = 0.01
		r.Mem = r.MaxMem / 2
		r.MemHost = r.Mem
	}
}

// guestCPUs is the CPU count pvestatd reports for a guest. qemu-server
// PVE/QemuServer.pm vmstatus: sockets * cores (1 each by default), at most
// the node's CPUs, and vcpus when set. pve-container src/PVE/LXC.pm
// vmstatus: cores, else cpulimit, else the node's CPUs (a fractional
// cpulimit is rounded down here: the simulator's figure is whole).
func guestCPUs(qemu bool, cores, sockets, vcpus, cpulimit string, nodeCPUs int) int {
	c, _ := strconv.Atoi(cores)
	if !qemu {
		if c == 0 {
			f, _ := strconv.ParseFloat(cpulimit, 64)
			c = int(f)
		}
		if c == 0 {
			c = nodeCPUs
		}
		return c
	}
	c = max(c, 1)
	so, _ := strconv.Atoi(sockets)
	n := c * max(so, 1)
	if nodeCPUs > 0 && n > nodeCPUs {
		n = nodeCPUs
	}
	if v, _ := strconv.Atoi(vcpus); v > 0 {
		n = v
	}
	return n
}

// nodeCPUs is a node's CPU count (cpuinfo cpus), 0 for an unknown node.
func (s *Server) nodeCPUs(name string) int {
	for _, n := range s.state.Nodes {
		if n.Name == name {
			return n.MaxCPU
		}
	}
	return 0
}

// qemuBootDisks is get_bootdisks (qemu-server PVE/QemuServer/Drive.pm):
// the drives of `boot: order=`, or, when boot is absent or a legacy
// letter string, the bootdisk key alone (none without one). There is no
// fallback to the first disk. It yields them in order, without allocating
// (this runs for every VM on every uncached /cluster/resources answer).
func qemuBootDisks(boot, bootdisk string) iter.Seq[string] {
	return func(yield func(string) bool) {
		var legacy, order string
		hasOrder := false
		for part := range strings.SplitSeq(boot, ",") {
			k, v, ok := strings.Cut(part, "=")
			switch {
			case !ok:
				legacy = part // the default key
			case k == "legacy":
				legacy = v
			case k == "order":
				order, hasOrder = v, true
			}
		}
		if boot == "" || legacy != "" || !hasOrder {
			if bootdisk != "" {
				yield(bootdisk)
			}
			return
		}
		for d := range strings.FieldsFuncSeq(order, func(r rune) bool { return r == ';' || r == ',' || r == ' ' || r == 0 }) {
			if isQemuDiskKey(d) && !yield(d) {
				return
			}
		}
	}
}

// qemuBootDiskSize is the maxdisk of a VM: bootdisk_size (qemu-server
// PVE/QemuServer/Drive.pm) as vmstatus (PVE/QemuServer.pm) reports it.
// The first boot disk that is in the config, is no CD-ROM (a cloud-init
// drive is one) and names a volume gives its size= (0 when it has none);
// no such disk gives 0.
func qemuBootDiskSize(conf map[string]string, boot, bootdisk string) int64 {
	for key := range qemuBootDisks(boot, bootdisk) {
		v, ok := conf[key]
		if !ok || v == "" || !isQemuDiskKey(key) {
			continue
		}
		file, media, size := driveFileMediaSize(v)
		if media == "cdrom" || file == "" {
			continue
		}
		n, _ := ParseSize(size)
		return n
	}
	return 0
}

// driveFileMediaSize reads the volume, media= and size= of a drive value
// as written to the config (validated then), without the full parse: this
// runs for every VM on every uncached /cluster/resources answer.
func driveFileMediaSize(v string) (file, media, size string) {
	for part := range strings.SplitSeq(v, ",") {
		k, val, ok := strings.Cut(part, "=")
		switch {
		case !ok:
			file = part // the default key
		case k == "file" || k == "volume":
			file = val
		case k == "media":
			media = val
		case k == "size":
			size = val
		}
	}
	return file, media, size
}

// lxcDefaultMaxDisk is what vmstatus reports for a stopped container
// without a rootfs size.
const lxcDefaultMaxDisk = 4 << 30

// lxcRootfsSize is the maxdisk of a container: pve-container src/PVE/LXC.pm
// vmstatus reads the rootfs size= for a stopped one, 4 GiB without a size
// or a rootfs. For a running one it reports the total of the mounted
// root file system (get_container_disk_usage, df), which the simulator,
// having no file system, takes to be the same size.
func lxcRootfsSize(rootfs string) int64 {
	if n := sizeOption(rootfs); n > 0 {
		return n
	}
	return lxcDefaultMaxDisk
}

// sizeOption is the size= option of a volume property string (0 without).
func sizeOption(v string) int64 {
	for v != "" {
		part := v
		if i := strings.IndexByte(v, ','); i >= 0 {
			part, v = v[:i], v[i+1:]
		} else {
			v = ""
		}
		if sz, ok := strings.CutPrefix(part, "size="); ok {
			n, _ := ParseSize(sz)
			return n
		}
	}
	return 0
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
	if r.HAState != "" {
		m["hastate"] = r.HAState
	}
	return m
}

// clusterResources answers /cluster/resources. Proxmox serves it from
// the status cached by pmxcfs and pvestatd (see statd.go for the lag of
// name, status and template); the simulator keeps the encoded
// answer per type filter and reuses it while no state changed (see
// Server.touch) within the same second (uptimes count seconds).
func (s *Server) clusterResources(r *route.Request) (any, error) {
	typ := r.Str("type")
	now := s.clock.Now().Unix()
	gen := s.gen.Load()
	c := &s.resCache
	if c.gen != gen || c.now != now || c.bodies == nil {
		c.gen, c.now = gen, now
		c.bodies = map[string]encodedBody{}
	}
	if !s.hasAllPrivileges(r.User) {
		return s.filterResources(r.User, s.encodeResources(typ, now, c.sizeHint))
	}
	if b, ok := c.bodies[typ]; ok {
		return b, nil
	}
	b := s.encodeResources(typ, now, c.sizeHint)
	if len(b) > c.sizeHint {
		c.sizeHint = len(b)
	}
	c.bodies[typ] = b
	return b, nil
}

// resourcesCache holds encoded /cluster/resources answers for one state
// generation and second.
type resourcesCache struct {
	gen      uint64
	now      int64
	bodies   map[string]encodedBody // by type filter
	sizeHint int
}

// encodeResources builds the whole answer, {"data":[...]}, in one pass
// over guests and volumes, as encoding/json would write it.
func (s *Server) encodeResources(typ string, now int64, sizeHint int) encodedBody {
	buf := make([]byte, 0, sizeHint+512)
	buf = append(buf, `{"data":[`...)
	first := true
	sep := func() {
		if !first {
			buf = append(buf, ',')
		}
		first = false
	}
	appendMap := func(m map[string]any) {
		sep()
		b, _ := json.Marshal(m)
		buf = append(buf, b...)
	}
	// Pools come first (only without a type filter: the parameter's enum
	// has no "pool"), with the sums of their running guests, which follow.
	var pools map[string]*poolStats
	if typ == "" && len(s.state.Pools) > 0 {
		pools = map[string]*poolStats{}
		for name := range s.state.Pools {
			pools[name] = &poolStats{}
		}
	}
	var vms []byte
	if typ == "" || typ == "vm" {
		ids := make([]int, 0, len(s.state.Guests))
		for id := range s.state.Guests {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		owners := s.state.vmPools()
		for i, id := range ids {
			r, reported := s.reportedRes(s.state.Guests[id], now)
			r.Pool = owners[id]
			if pe := pools[r.Pool]; pe != nil {
				pe.add(r)
			}
			if i > 0 {
				vms = append(vms, ',')
			}
			if reported {
				vms = appendGuestRes(vms, r)
			} else {
				vms = appendUnknownRes(vms, r)
			}
		}
	}
	for _, name := range s.state.poolNames() {
		if pe := pools[name]; pe != nil {
			appendMap(pe.entry(name))
		}
	}
	if len(vms) > 0 {
		sep()
		buf = append(buf, vms...)
	}
	if typ == "" || typ == "node" {
		for _, m := range s.nodeList(now) {
			appendMap(s.nodeResource(m))
		}
	}
	if typ == "" || typ == "storage" {
		used := s.state.usedBytesAll()
		for _, n := range s.state.Nodes {
			if s.faults.nodeOffline(n.Name) {
				continue
			}
			for _, st := range s.state.Storages {
				// API2/Cluster.pm resources: only storages enabled on the node.
				if !st.enabledOn(n.Name) {
					continue
				}
				shared := 0
				key := n.Name + "|" + st.ID
				if st.Shared {
					shared = 1
					key = "|" + st.ID
				}
				appendMap(map[string]any{
					"id": "storage/" + n.Name + "/" + st.ID, "type": "storage", "node": n.Name, "storage": st.ID,
					"status": "available", "content": strings.Join(st.Content, ","), "plugintype": st.Type,
					"shared": shared, "disk": used[key], "maxdisk": st.Total,
				})
			}
		}
	}
	// Since pve-manager 9.0.12 every node broadcasts its zones as "network"
	// entries, so the "sdn" branch (the only one type=sdn selects) skips
	// them all; the "network" ones come only without a type filter.
	if typ == "" {
		for _, m := range s.networkResources() {
			appendMap(m)
		}
	}
	return append(buf, "]}"...)
}

// nodeResource turns a node of GET /nodes into its /cluster/resources entry
// (pve-manager PVE/API2/Cluster.pm resources): no ssl_fingerprint (only
// the node index adds it), the cgroup-mode of the node's static info and,
// while the HA manager runs (a resource is configured), its node status.
func (s *Server) nodeResource(m map[string]any) map[string]any {
	delete(m, "ssl_fingerprint")
	m["cgroup-mode"] = 2
	if h := s.state.HA; h != nil && (len(h.Resources) > 0 || len(h.Services) > 0) {
		// The CRM's node_status: a node that left the cluster is "unknown".
		m["hastate"] = "online"
		if m["status"] == "offline" {
			m["hastate"] = "unknown"
		}
	}
	return m
}

// networkResources are the "network" entries of /cluster/resources
// (Cluster.pm resources): zone localnetwork on every node, then, node by
// node, the zones of the applied SDN configuration that node runs, as
// pvestatd's update_network_status broadcasts them from pve-network's
// Zones.pm status (status "available", the zone's type).
func (s *Server) networkResources() []map[string]any {
	var out []map[string]any
	for _, n := range s.state.Nodes {
		out = append(out, map[string]any{"id": "network/" + n.Name + "/zone/localnetwork", "type": "network",
			"network-type": "zone", "network": "localnetwork", "node": n.Name, "status": "ok"})
	}
	if s.state.SDN == nil {
		return out
	}
	zones := s.state.SDN.running("zones")
	nodes := slices.Clone(s.state.Nodes)
	slices.SortFunc(nodes, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	for _, n := range nodes {
		if s.faults.nodeOffline(n.Name) {
			continue
		}
		for _, id := range sortedKeys(zones) {
			z := zones[id]
			if on := z["nodes"]; on != "" && !slices.Contains(splitList(on), n.Name) {
				continue
			}
			out = append(out, map[string]any{"id": "network/" + n.Name + "/zone/" + id, "type": "network",
				"network-type": "zone", "network": id, "node": n.Name, "status": "available", "zone-type": z["type"]})
		}
	}
	return out
}

// poolStats sums a pool's running guests as Cluster.pm "resources" does.
type poolStats struct {
	running          bool
	uptime, mem, max int64
	cpu              float64
	maxcpu           int
}

func (pe *poolStats) add(r guestRes) {
	if r.Uptime == 0 {
		return
	}
	pe.running = true
	pe.uptime = max(pe.uptime, r.Uptime)
	pe.mem += r.Mem
	pe.max += r.MaxMem
	// The CPU share weighted by the CPUs counted so far.
	if pe.maxcpu+r.MaxCPU > 0 {
		pe.cpu = (pe.cpu*float64(pe.maxcpu) + r.CPU*float64(r.MaxCPU)) / float64(pe.maxcpu+r.MaxCPU)
	}
	pe.maxcpu += r.MaxCPU
}

func (pe *poolStats) entry(name string) map[string]any {
	m := map[string]any{"id": "/pool/" + name, "pool": name, "type": "pool"}
	if pe.running {
		m["uptime"], m["mem"], m["maxmem"], m["cpu"], m["maxcpu"] = pe.uptime, pe.mem, pe.max, pe.cpu, pe.maxcpu
	}
	return m
}

// appendGuestRes writes a guestRes as encoding/json does (field order, omitempty).
func appendGuestRes(b []byte, r guestRes) []byte {
	b = appendGuestHead(b, r)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, r.Name)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, r.Status)
	b = append(b, `,"template":`...)
	b = strconv.AppendInt(b, int64(r.Template), 10)
	b = appendGuestOptional(b, r)
	b = append(b, `,"maxcpu":`...)
	b = strconv.AppendInt(b, int64(r.MaxCPU), 10)
	b = append(b, `,"cpu":`...)
	b = appendJSONFloat(b, r.CPU)
	for _, f := range []struct {
		name string
		v    int64
	}{{`,"maxmem":`, r.MaxMem}, {`,"mem":`, r.Mem}, {`,"memhost":`, r.MemHost}, {`,"maxdisk":`, r.MaxDisk}, {`,"disk":`, r.Disk},
		{`,"uptime":`, r.Uptime}, {`,"diskread":`, r.DiskRead}, {`,"diskwrite":`, r.DiskWrite},
		{`,"netin":`, r.NetIn}, {`,"netout":`, r.NetOut}} {
		b = append(b, f.name...)
		b = strconv.AppendInt(b, f.v, 10)
	}
	return append(b, '}')
}

// appendJSONString writes s as encoding/json does; strings needing escapes
// (quotes, controls, HTML characters, non-ASCII) go through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			enc, _ := json.Marshal(s)
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONFloat writes f as encoding/json does.
func appendJSONFloat(b []byte, f float64) []byte {
	if f == 0 || (math.Abs(f) >= 1e-6 && math.Abs(f) < 1e21) {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	enc, _ := json.Marshal(f)
	return append(b, enc...)
}

func (s *Server) nextID(r *route.Request) (any, error) {
	if vmid, ok := r.Int("vmid"); ok {
		if _, taken := s.state.Guests[vmid]; taken {
			return nil, route.ParamErr("vmid", "VM "+strconv.Itoa(vmid)+" already exists")
		}
		return strconv.Itoa(vmid), nil
	}
	for id := 100; id <= 999999999; id++ {
		if _, taken := s.state.Guests[id]; !taken {
			return strconv.Itoa(id), nil
		}
	}
	return nil, route.Fail("unable to get any free VMID in range [100, 999999999]")
}

func (s *Server) clusterStatus(*route.Request) (any, error) {
	// corosync's votequorum: each node has one vote and the cluster is
	// quorate while the online nodes hold a majority (a two-node cluster
	// with one node down is not). The simulator reports it only: its
	// writes do not stop without quorum, as pmxcfs's would.
	online := 0
	for _, n := range s.state.Nodes {
		if !s.faults.nodeOffline(n.Name) {
			online++
		}
	}
	quorate := 0
	if 2*online > len(s.state.Nodes) {
		quorate = 1
	}
	out := []map[string]any{{
		"id": "cluster", "type": "cluster", "name": "pvesim", "nodes": len(s.state.Nodes), "quorate": quorate, "version": len(s.state.Nodes) + 2,
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

func (s *Server) clusterTasks(r *route.Request) (any, error) {
	// Cluster.pm tasks: all with Sys.Audit on /, else those whose user
	// (a token's task split into user and tokenid first) is the caller:
	// a token without Sys.Audit sees none.
	all := s.can(r.User, "/", "Sys.Audit")
	out := []map[string]any{}
	for i := len(s.tasks.order) - 1; i >= 0 && len(out) < 50; i-- {
		m := taskJSON(s.tasks.order[i], true)
		if all || m["user"] == r.User {
			out = append(out, m)
		}
	}
	return out, nil
}

// appendGuestHead opens a guest's /cluster/resources entry with the fields
// every entry has, reported by pvestatd or not.
func appendGuestHead(b []byte, r guestRes) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, r.ID)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, r.Type)
	b = append(b, `,"vmid":`...)
	b = strconv.AppendInt(b, int64(r.VMID), 10)
	b = append(b, `,"node":`...)
	b = appendJSONString(b, r.Node)
	return b
}
