package pvesim

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Realistic durations of QEMU tasks, before TaskSpeed scaling.
const (
	durCreate   = 2 * time.Second
	durStart    = 1500 * time.Millisecond
	durStop     = 500 * time.Millisecond
	durShutdown = 3 * time.Second
	durConfig   = 200 * time.Millisecond
	durResize   = 500 * time.Millisecond
	durTemplate = 1 * time.Second
	durClone    = 3 * time.Second
	durDestroy  = 1 * time.Second
	durSnapshot = 1 * time.Second
	// importRate is how fast an import or full clone copies data.
	importRate = 200 << 20 // bytes per second
)

func init() {
	registerRoutes(func(s *Server) {
		nv := func(extra ...*Param) *Params { return NewParams(append([]*Param{pNode(), pVMID()}, extra...)...) }
		snap := func() *Param { return Str("snapname").MaxLen(40).Fmt("pve-configid") }
		skiplock := func() *Param { return Bool("skiplock").Opt() }
		disk := func() *Param { return Str("disk").Enum(qemuDiskSlots()...) }

		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/qemu", Perm: PermUser(), ProxyTo: "node",
			Params: NewParams(pNode(), Bool("full").Opt()), Handler: s.qemuList})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu", Perm: PermUser(), ProxyTo: "node",
			Params: qemuCreateParams(), Handler: s.qemuCreate})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}", Perm: PermUser(), ProxyTo: "node", Params: nv(),
			Handler: func(r *Request) (any, error) {
				if _, err := s.qemuGuest(r); err != nil {
					return nil, err
				}
				return subdirs("config", "pending", "status", "unlink", "vncproxy", "termproxy", "migrate", "resize", "move", "rrd", "rrddata", "monitor", "agent", "snapshot", "spiceproxy", "sendkey", "firewall", "mtunnel", "remote_migrate"), nil
			}})
		s.Handle(&Route{Method: "DELETE", Path: "/nodes/{node}/qemu/{vmid}", Perm: PermCheck("/vms/{vmid}", "VM.Allocate"), ProxyTo: "node",
			Params:  nv(skiplock(), Bool("purge").Opt(), Bool("destroy-unreferenced-disks").Opt().Default("0")),
			Handler: s.qemuDestroy})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/config", Perm: PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node",
			Params:  nv(Bool("current").Opt().Default("0"), Str("snapshot").Opt().MaxLen(40).Fmt("pve-configid")),
			Handler: s.qemuGetConfig})
		s.Handle(&Route{Method: "PUT", Path: "/nodes/{node}/qemu/{vmid}/config", Perm: PermAny("/vms/{vmid}", "VM.Config.Disk", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.HWType", "VM.Config.Options", "VM.Config.Cloudinit"), ProxyTo: "node",
			Params: qemuUpdateParams(false), Handler: func(r *Request) (any, error) { return s.qemuUpdate(r, true) }})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/config", Perm: PermAny("/vms/{vmid}", "VM.Config.Disk", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.HWType", "VM.Config.Options", "VM.Config.Cloudinit"), ProxyTo: "node",
			Params: qemuUpdateParams(true), Handler: func(r *Request) (any, error) { return s.qemuUpdate(r, false) }})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/pending", Perm: PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node", Params: nv(),
			Handler: func(r *Request) (any, error) {
				g, err := s.qemuGuest(r)
				if err != nil {
					return nil, err
				}
				return qemuPendingJSON(g), nil
			}})
		s.Handle(&Route{Method: "PUT", Path: "/nodes/{node}/qemu/{vmid}/resize", Perm: PermCheck("/vms/{vmid}", "VM.Config.Disk"), ProxyTo: "node",
			Params:  nv(disk(), Str("size").Pattern(`\+?\d+(\.\d+)?[KMGT]?`), Str("digest").Opt().MaxLen(40), skiplock()),
			Handler: s.qemuResize})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/template", Perm: PermCheck("/vms/{vmid}", "VM.Allocate"), ProxyTo: "node",
			Params: nv(Str("disk").Opt().Enum(qemuDiskSlots()...)), Handler: s.qemuTemplate})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/clone", Perm: PermAnd(PermCheck("/vms/{vmid}", "VM.Clone"), PermOr(PermCheck("/vms/{newid}", "VM.Allocate"), PermCheck("/pool/{pool}", "VM.Allocate").RequireParam("pool"))), ProxyTo: "node",
			Params: nv(
				Int("newid").Fmt("pve-vmid").Min(100).Max(999999999),
				Int("bwlimit").Opt().Min(0),
				Str("description").Opt(),
				Str("format").Opt().Enum("raw", "qcow2", "vmdk"),
				Bool("full").Opt(),
				Str("name").Opt().Fmt("dns-name"),
				Str("pool").Opt().Fmt("pve-poolid"),
				Str("snapname").Opt().MaxLen(40).Fmt("pve-configid"),
				Str("storage").Opt().Fmt("pve-storage-id"),
				Str("target").Opt().Fmt("pve-node"),
			),
			Handler: s.qemuClone})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/status", Perm: PermUser(), ProxyTo: "node", Params: nv(),
			Handler: func(r *Request) (any, error) {
				if _, err := s.qemuGuest(r); err != nil {
					return nil, err
				}
				return subdirs("current", "start", "stop", "reset", "shutdown", "suspend", "reboot"), nil
			}})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/status/current", Perm: PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node", Params: nv(),
			Handler: s.qemuStatusCurrent})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/status/start", Perm: PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params: nv(skiplock(),
				Str("force-cpu").Opt(),
				Str("machine").Opt().Props(qemuConfigTypes.Lookup("machine").PropFormat),
				Str("migratedfrom").Opt().Fmt("pve-node"),
				Str("migration_network").Opt().Fmt("CIDR"),
				Str("migration_type").Opt().Enum("secure", "insecure"),
				Str("nets-host-mtu").Opt().Pattern(`net\d+=\d+(,net\d+=\d+)*`),
				Str("stateuri").Opt().MaxLen(128),
				Str("targetstorage").Opt().Fmt("storage-pair-list"),
				Int("timeout").Opt().Min(0),
				Bool("with-conntrack-state").Opt().Default("0"),
			),
			Handler: s.qemuStart})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/status/stop", Perm: PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params: nv(skiplock(), Bool("keepActive").Opt().Default("0"), Str("migratedfrom").Opt().Fmt("pve-node"),
				Bool("overrule-shutdown").Opt().Default("0"), Int("timeout").Opt().Min(0)),
			Handler: func(r *Request) (any, error) { return s.qemuStop(r, "qmstop") }})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/status/shutdown", Perm: PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params:  nv(skiplock(), Bool("forceStop").Opt().Default("0"), Bool("keepActive").Opt().Default("0"), Int("timeout").Opt().Min(0)),
			Handler: func(r *Request) (any, error) { return s.qemuStop(r, "qmshutdown") }})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/status/reboot", Perm: PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params: nv(Int("timeout").Opt().Min(0)), Handler: s.qemuReboot})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/status/reset", Perm: PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params: nv(skiplock()), Handler: s.qemuReset})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/snapshot", Perm: PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node", Params: nv(),
			Handler: s.qemuSnapshotList})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/snapshot", Perm: PermCheck("/vms/{vmid}", "VM.Snapshot"), ProxyTo: "node",
			Params: nv(snap(), Str("description").Opt(), Bool("vmstate").Opt()), Handler: s.qemuSnapshotCreate})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}", Perm: PermUser(), ProxyTo: "node",
			Params: nv(snap()), Handler: func(r *Request) (any, error) {
				g, err := s.qemuGuest(r)
				if err != nil {
					return nil, err
				}
				if g.Snapshots[r.Str("snapname")] == nil {
					return nil, Fail("snapshot '%s' does not exist", r.Str("snapname"))
				}
				return subdirs("rollback", "config"), nil
			}})
		s.Handle(&Route{Method: "DELETE", Path: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}", Perm: PermCheck("/vms/{vmid}", "VM.Snapshot"), ProxyTo: "node",
			Params: nv(snap(), Bool("force").Opt()), Handler: s.qemuSnapshotDelete})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback", Perm: PermAny("/vms/{vmid}", "VM.Snapshot", "VM.Snapshot.Rollback"), ProxyTo: "node",
			Params: nv(snap(), Bool("start").Opt().Default("0")), Handler: s.qemuSnapshotRollback})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/config", Perm: PermAny("/vms/{vmid}", "VM.Snapshot", "VM.Snapshot.Rollback", "VM.Audit"), ProxyTo: "node",
			Params: nv(snap()), Handler: func(r *Request) (any, error) {
				g, err := s.qemuGuest(r)
				if err != nil {
					return nil, err
				}
				sn := g.Snapshots[r.Str("snapname")]
				if sn == nil {
					return nil, Fail("snapshot '%s' does not exist", r.Str("snapname"))
				}
				out := map[string]any{}
				for k, v := range sn.Conf {
					out[k] = typedValue(qemuKeyType(k), v)
				}
				out["snaptime"] = sn.SnapTime
				if sn.Description != "" {
					out["description"] = sn.Description
				}
				if sn.Parent != "" {
					out["parent"] = sn.Parent
				}
				return out, nil
			}})
		s.Handle(&Route{Method: "PUT", Path: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/config", Perm: PermCheck("/vms/{vmid}", "VM.Snapshot"), ProxyTo: "node",
			Params: nv(snap(), Str("description").Opt()), Handler: func(r *Request) (any, error) {
				g, err := s.qemuGuest(r)
				if err != nil {
					return nil, err
				}
				return s.withGuestLock(g.VMID, "qemu", func() (any, error) {
					sn := g.Snapshots[r.Str("snapname")]
					if sn == nil {
						return nil, Fail("snapshot '%s' does not exist", r.Str("snapname"))
					}
					if r.Has("description") {
						sn.Description = r.Str("description")
					}
					return nil, nil
				})
			}})
	})
}

// qemuGuest loads the VM of the request, failing as load_config does.
func (s *Server) qemuGuest(r *Request) (*Guest, error) {
	vmid, _ := r.Int("vmid")
	node := r.Str("node")
	g := s.state.Guests[vmid]
	if g == nil || g.Node != node || g.Type != "qemu" {
		return nil, Fail("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", node, vmid)
	}
	return g, nil
}

func checkLock(g *Guest) error {
	if l := g.Conf["lock"]; l != "" {
		kind := "VM"
		if g.Type == "lxc" {
			kind = "CT"
		}
		return Fail("%s is locked (%s)", kind, l)
	}
	return nil
}

func (s *Server) rootOnly(r *Request, param string) error {
	if r.Bool(param) && r.User != "root@pam" {
		return ParamErr(param, "Only root may use this option.")
	}
	return nil
}

func (s *Server) qemuList(r *Request) (any, error) {
	node := r.Str("node")
	now := s.clock.Now().Unix()
	var ids []int
	for id, g := range s.state.Guests {
		// vmlist: only guests the caller has VM.Audit on.
		if g.Node == node && g.Type == "qemu" && s.can(r.User, "/vms/"+strconv.Itoa(id), "VM.Audit") {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
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

// drivePlan is one drive parameter after the API-time checks.
type drivePlan struct {
	key   string
	drive map[string]string
}

// checkDriveParams runs check_drive_param and check_storage_access: the
// checks Proxmox makes before it forks a worker (400 or 500 answers).
func (s *Server) checkDriveParams(node string, params map[string]string, defaultStorage string) ([]drivePlan, error) {
	var plans []drivePlan
	for _, key := range sortedKeys(params) {
		if !isQemuDiskKey(key) {
			continue
		}
		d, err := parseDrive(key, params[key])
		if err != nil {
			return nil, ParamErr(key, "unable to parse drive options")
		}
		file := d["file"]
		m := reNewDisk.FindStringSubmatch(file)
		if src := d["import-from"]; src != "" {
			if m == nil || m[3] != "0" {
				return nil, ParamErr(key, "'import-from' requires special syntax - use <storage ID>:0,import-from=<source>")
			}
			if key == "efidisk0" {
				for _, req := range []string{"efitype", "pre-enrolled-keys"} {
					if _, ok := d[req]; !ok {
						return nil, ParamErr(key, fmt.Sprintf("need to specify '%s' when using 'import-from'", req))
					}
				}
			} else if key == "tpmstate0" {
				if _, ok := d["version"]; !ok {
					return nil, ParamErr(key, "need to specify 'version' when using 'import-from'")
				}
			}
		}
		storage, volname, isVolume := strings.Cut(file, ":")
		if isVolume && m == nil && volname != "cloudinit" {
			vtype, _, err := s.volumeContentType(node, file)
			if err != nil {
				return nil, err
			}
			if vtype == "iso" && !driveIsCdrom(d) {
				return nil, ParamErr(key, "explicit 'media=cdrom' is required for iso images")
			}
		}
		switch {
		case file == "" || file == "none" || file == "cloudinit" || volname == "cloudinit":
		case driveIsCdrom(d) && file == "cdrom":
		case !driveIsCdrom(d) && m != nil:
			sid := m[2]
			if sid == "" {
				sid = defaultStorage
			}
			if sid == "" {
				return nil, Fail("no storage ID specified (and no default storage)")
			}
			st, err := s.storageConfig(sid)
			if err != nil {
				return nil, err
			}
			if !st.allows("images") {
				return nil, ParamErr("storage", fmt.Sprintf("storage '%s' does not support vm images", sid))
			}
		default:
			if strings.HasPrefix(file, "/") {
				return nil, Fail("only root can pass arbitrary filesystem paths")
			}
			if isVolume {
				vtype, _, err := s.volumeContentType(node, file)
				if err != nil {
					return nil, err
				}
				if vtype != "images" && vtype != "iso" {
					return nil, ParamErr(key, "content type needs to be 'images' or 'iso'")
				}
				_ = storage
			}
		}
		if src := d["import-from"]; src != "" {
			if strings.HasPrefix(src, "/") {
				return nil, Fail("only root can pass arbitrary filesystem paths")
			}
			vtype, _, err := s.volumeContentType(node, src)
			if err != nil {
				return nil, err
			}
			if vtype != "images" && vtype != "import" {
				return nil, ParamErr(key, fmt.Sprintf("%s has wrong type '%s' - needs to be 'images' or 'import'", src, vtype))
			}
		}
		plans = append(plans, drivePlan{key: key, drive: d})
	}
	return plans, nil
}

// createDisks is create_disks: allocate new disks and cloud-init drives,
// import images, and size existing volumes. It returns the drives in their
// live form and the number of bytes copied (for the task's duration).
func (s *Server) createDisks(tc *taskCtx, g *Guest, plans []drivePlan, defaultStorage string, template bool) (map[string]string, int64, error) {
	res := map[string]string{}
	var copied int64
	var allocated []string
	fail := func(err error) (map[string]string, int64, error) {
		for _, volid := range allocated {
			s.state.removeVolume(g.Node, volid)
		}
		return nil, 0, err
	}
	for _, p := range plans {
		d := copyConf(p.drive)
		file := d["file"]
		storage, volname, _ := strings.Cut(file, ":")
		m := reNewDisk.FindStringSubmatch(file)
		switch {
		case file == "" || file == "none" || file == "cdrom":
			delete(d, "size")
		case volname == "cloudinit" || file == "cloudinit":
			if volname == "" {
				storage = defaultStorage
			}
			if storage == "" {
				return fail(Fail("no storage ID specified (and no default storage)"))
			}
			for _, conf := range []map[string]string{g.Conf, g.Pending, res} {
				for k, v := range conf {
					if !isQemuDiskKey(k) || k == p.key {
						continue
					}
					if od, err := parseDrive(k, v); err == nil && driveIsCloudinit(od) {
						return fail(Fail("%s - cloud-init drive is already attached at '%s'", p.key, k))
					}
				}
			}
			st, err := s.storageConfig(storage)
			if err != nil {
				return fail(err)
			}
			format := ""
			name := fmt.Sprintf("vm-%d-cloudinit", g.VMID)
			if st.fileBased() {
				format = d["format"]
				if format == "" {
					format = "qcow2"
				}
				name += "." + format
			}
			v, err := s.allocImage(g.Node, storage, g.VMID, 4<<20, format, name)
			if err != nil {
				return fail(err)
			}
			allocated = append(allocated, v.VolID())
			d["file"] = v.VolID()
			d["media"] = "cdrom"
			delete(d, "format")
			tc.Log("%s: successfully created disk '%s'", p.key, printDrive(p.key, d))
		case m != nil:
			sid := m[2]
			if sid == "" {
				sid = defaultStorage
			}
			gb, _ := strconv.ParseFloat(m[3], 64)
			size := int64(gb * float64(gib))
			if src := d["import-from"]; src != "" {
				// The source storage is activated before it is read.
				if _, err := s.storageCheckEnabled(strings.SplitN(src, ":", 2)[0], g.Node); err != nil {
					return fail(err)
				}
				sv := s.state.volume(g.Node, src)
				if sv == nil {
					return fail(Fail("cannot import from '%s' - could not get size of %s", src, src))
				}
				size = roundUp(sv.Size, 4<<20)
				copied += sv.Size
				tc.Log("importing disk '%s' to VM %d ...", src, g.VMID)
				delete(d, "import-from")
			}
			switch p.key {
			case "efidisk0":
				size = 528 << 10
				if d["efitype"] != "4m" {
					size = 128 << 10
				}
			case "tpmstate0":
				size = 4 << 20
			}
			v, err := s.allocImage(g.Node, sid, g.VMID, size, d["format"], "")
			if err != nil {
				return fail(err)
			}
			if template {
				s.renameToBase(g.Node, v)
			}
			allocated = append(allocated, v.VolID())
			d["file"] = v.VolID()
			d["size"] = FormatSize(size)
			delete(d, "format")
			tc.Log("%s: successfully created disk '%s'", p.key, printDrive(p.key, d))
		default:
			v := s.state.volume(g.Node, file)
			if v == nil {
				return fail(Fail("volume %s does not exist", file))
			}
			if d["format"] != "" && d["format"] != v.Format {
				return fail(Fail("drive '%s' - volume '%s' - 'format=%s' option different from storage format '%s'", p.key, file, d["format"], v.Format))
			}
			d["size"] = FormatSize(v.Size)
		}
		res[p.key] = printDrive(p.key, d)
	}
	return res, copied, nil
}

func roundUp(n, to int64) int64 {
	if n <= 0 {
		return to
	}
	return (n + to - 1) / to * to
}

func (s *Server) qemuCreate(r *Request) (any, error) {
	vmid, _ := r.Int("vmid")
	node := r.Str("node")
	if r.Has("archive") {
		return nil, Fail("unable to restore VM %d - restoring backups is not supported by the simulator", vmid)
	}
	storage := r.Str("storage")
	params := map[string]string{}
	for k, v := range r.Params {
		switch k {
		case "node", "vmid", "storage", "start", "pool", "bwlimit", "unique", "force", "archive", "ha-managed", "live-restore", "import-working-storage":
			continue
		}
		params[k] = v
	}
	if keys, ok := params["sshkeys"]; ok {
		dec, err := decodeSSHKeys(keys)
		if err != nil {
			return nil, Fail("SSH public key validation error")
		}
		if err := validateSSHKeys(dec); err != nil {
			return nil, err
		}
	}
	// qemu-server API2/Qemu.pm create_vm: check_pool_exist after the keys.
	if err := s.checkPoolExist(r); err != nil {
		return nil, err
	}
	if err := s.qemuCreateAccess(r, vmid); err != nil {
		return nil, err
	}
	if cd, ok := params["cdrom"]; ok {
		if !strings.Contains(cd, "media=") {
			cd += ",media=cdrom"
		}
		params["ide2"] = cd
		delete(params, "cdrom")
	}
	if err := s.qemuStorageAccess(r.User, vmid, params, storage); err != nil {
		return nil, err
	}
	if storage != "" {
		if _, err := s.storageConfig(storage); err != nil {
			return nil, err
		}
	}
	if err := s.qemuModifyConfigPerm(r.User, vmid, sortedKeys(params)); err != nil {
		return nil, err
	}
	if err := s.qemuBridgeAccess(r.User, params); err != nil {
		return nil, err
	}
	plans, err := s.checkDriveParams(node, params, storage)
	if err != nil {
		return nil, err
	}
	for k, v := range params {
		if _, ok := indexOf(k, "net"); ok {
			params[k] = s.normaliseNet(v)
		}
	}
	if old := s.state.Guests[vmid]; old != nil {
		kind := "VM"
		if old.Type == "lxc" {
			kind = "CT"
		}
		return nil, Fail("unable to create VM %d - %s %d already exists on node '%s'", vmid, kind, vmid, old.Node)
	}
	g := &Guest{VMID: vmid, Node: node, Type: "qemu", Conf: map[string]string{"lock": "create"}}
	g.ensureMaps()
	s.state.Guests[vmid] = g
	start, pool, haAdd := r.Bool("start"), r.Str("pool"), r.Bool("ha-managed")

	upid := s.startTask(r, node, "qmcreate", strconv.Itoa(vmid), func(tc *taskCtx) error {
		// create_and_lock_config wrote a config holding only "lock: create"
		// before the worker forked. The worker takes the config flock
		// (waiting 1 s) and keeps both while it allocates disks and imports
		// images; only the final write_config replaces the lock line with
		// the whole config. On failure the volumes are freed and the config
		// file is unlinked: the half-created guest is gone.
		var created map[string]string
		fail := func(err error) error {
			for _, volid := range guestVolumes(created) {
				s.state.removeVolume(node, volid)
			}
			if s.state.Guests[vmid] == g {
				delete(s.state.Guests, vmid)
			}
			return err
		}
		if err := tc.lock(vmid, "qemu", false, time.Second); err != nil {
			return fail(err)
		}
		if err := tc.Sleep(durCreate); err != nil {
			return fail(fmt.Errorf("unable to create VM %d - %s", vmid, strings.TrimRight(asAPIError(err).Message, "\n")))
		}
		conf := map[string]string{}
		for k, v := range params {
			if !isQemuDiskKey(k) {
				conf[k] = v
			}
		}
		var copied int64
		var err error
		created, copied, err = s.createDisks(tc, g, plans, storage, conf["template"] == "1")
		if err != nil {
			return fail(fmt.Errorf("unable to create VM %d - %s", vmid, strings.TrimRight(asAPIError(err).Message, "\n")))
		}
		g.Creating = guestVolumes(created)
		if copied > 0 {
			if err := tc.Sleep(time.Duration(float64(copied) / importRate * float64(time.Second))); err != nil {
				return fail(fmt.Errorf("unable to create VM %d - %s", vmid, strings.TrimRight(asAPIError(err).Message, "\n")))
			}
		}
		for k, v := range created {
			conf[k] = v
		}
		if conf["boot"] == "" {
			if b := defaultBootOrder(conf); b != "" {
				conf["boot"] = b
			} else {
				delete(conf, "boot")
			}
		}
		if conf["smbios1"] == "" {
			conf["smbios1"] = "uuid=" + s.randomUUID()
		}
		if v, ok := conf["vmgenid"]; (!ok || v == "1") && conf["arch"] != "aarch64" {
			conf["vmgenid"] = s.randomUUID()
		}
		if v, ok := conf["tags"]; ok {
			conf["tags"] = uniqueTags(v)
		}
		if pw, ok := conf["cipassword"]; ok {
			conf["cipassword"] = s.hashPassword(pw)
		}
		conf["meta"] = fmt.Sprintf("creation-qemu=10.1.2,ctime=%d", s.clock.Now().Unix())
		g.Conf = conf
		g.Creating = nil
		// create_vm adds the guest to its pool once the config is written.
		s.state.addVMToPool(vmid, pool)
		tc.unlock(vmid)
		if haAdd {
			s.haAddAfterCreate(tc, g, start, !start)
		}
		if start && s.haManaged(g) {
			// vm_start of an HA-managed VM only asks the HA stack, in a task of its own.
			tc.Log("Execute autostart")
			s.haPowerRequest(r, g, false, 0)
		} else if start {
			// vm_start runs after the create lock is released; its errors
			// are only warnings of the create task.
			tc.Log("Execute autostart")
			if err := s.qemuStartGuest(tc, g, false); err != nil {
				tc.Log("%s", strings.TrimRight(asAPIError(err).Message, "\n"))
			}
		}
		return nil
	})
	return upid, nil
}

func (s *Server) qemuGetConfig(r *Request) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	if name := r.Str("snapshot"); name != "" {
		sn := g.Snapshots[name]
		if sn == nil {
			return nil, Fail("snapshot '%s' does not exist", name)
		}
		sg := &Guest{VMID: g.VMID, Node: g.Node, Type: g.Type, Conf: sn.Conf}
		sg.ensureMaps()
		return qemuConfigJSON(sg, true), nil
	}
	return qemuConfigJSON(g, r.Bool("current")), nil
}

// qemuUpdate is update_vm_api: PUT (sync) and POST (task) .../config.
func (s *Server) qemuUpdate(r *Request, sync bool) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	if err := s.rootOnly(r, "skiplock"); err != nil {
		return nil, err
	}
	params := map[string]string{}
	for k, v := range r.Params {
		switch k {
		case "node", "vmid", "digest", "delete", "revert", "skiplock", "force", "background_delay", "import-working-storage":
			continue
		}
		params[k] = v
	}
	if keys, ok := params["sshkeys"]; ok {
		dec, err := decodeSSHKeys(keys)
		if err != nil {
			return nil, Fail("SSH public key validation error")
		}
		if err := validateSSHKeys(dec); err != nil {
			return nil, err
		}
	}
	if !r.Has("delete") && !r.Has("revert") && len(params) == 0 {
		return nil, Fail("no options specified")
	}
	if cd, ok := params["cdrom"]; ok {
		if !strings.Contains(cd, "media=") {
			cd += ",media=cdrom"
		}
		params["ide2"] = cd
		delete(params, "cdrom")
	}
	revert := map[string]bool{}
	for _, opt := range splitList(r.Str("revert")) {
		if qemuConfigTypes.Lookup(opt) == nil {
			return nil, ParamErr("revert", fmt.Sprintf("unknown option '%s'", opt))
		}
		if _, ok := params[opt]; ok {
			return nil, ParamErr("delete", fmt.Sprintf("you can't use '-%s' and -revert %s' at the same time", opt, opt))
		}
		revert[opt] = true
	}
	var deletes []string
	for _, opt := range splitList(r.Str("delete")) {
		if opt == "cdrom" {
			opt = "ide2"
		}
		if _, ok := params[opt]; ok {
			return nil, ParamErr("delete", fmt.Sprintf("you can't use '-%s' and -delete %s' at the same time", opt, opt))
		}
		if revert[opt] {
			return nil, ParamErr("revert", fmt.Sprintf("you can't use '-delete %s' and -revert %s' at the same time", opt, opt))
		}
		if qemuConfigTypes.Lookup(opt) == nil {
			return nil, ParamErr("delete", fmt.Sprintf("unknown option '%s'", opt))
		}
		deletes = append(deletes, opt)
	}
	plans, err := s.checkDriveParams(g.Node, params, "")
	if err != nil {
		return nil, err
	}
	for k, v := range params {
		if _, ok := indexOf(k, "net"); ok {
			params[k] = s.normaliseNet(v)
		} else if k == "vmgenid" && v == "1" {
			params[k] = s.randomUUID()
		}
	}
	if err := s.qemuModifyConfigPerm(r.User, g.VMID, deletes); err != nil {
		return nil, err
	}
	if err := s.qemuModifyConfigPerm(r.User, g.VMID, sortedKeys(params)); err != nil {
		return nil, err
	}
	if err := s.qemuStorageAccess(r.User, g.VMID, params, ""); err != nil {
		return nil, err
	}
	if err := s.qemuBridgeAccess(r.User, params); err != nil {
		return nil, err
	}
	digest := r.Str("digest")
	skiplock := r.Bool("skiplock")
	force := r.Bool("force")
	early := func() error {
		if digest != "" && digest != g.Digest() {
			return Fail("checksum mismatch (file change by other user?)")
		}
		if !skiplock {
			return checkLock(g)
		}
		return nil
	}
	if err := early(); err != nil {
		return nil, err
	}
	update := func(tc *taskCtx) error {
		if s.state.Guests[g.VMID] != g {
			return Fail("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", g.Node, g.VMID)
		}
		if err := early(); err != nil {
			return err
		}
		if err := s.qemuUpdateValuePerms(r.User, g, params, deletes); err != nil {
			return err
		}
		return s.qemuApplyUpdate(tc, g, params, plans, deletes, revert, force)
	}
	if sync {
		if err := s.acquireGuestLock(g.VMID, "qemu"); err != nil {
			return nil, err
		}
		defer s.releaseGuestLock(g.VMID)
		tc := &taskCtx{s: s, t: &Task{}}
		if err := update(tc); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return s.startTask(r, g.Node, "qmconfig", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.LockGuest(g.VMID, "qemu"); err != nil {
			return err
		}
		if err := tc.Sleep(durConfig); err != nil {
			return err
		}
		return update(tc)
	}), nil
}

// qemuApplyUpdate is the body of update_vm_api's updatefn: write the
// changes to the pending section, then apply what the guest's state allows.
func (s *Server) qemuApplyUpdate(tc *taskCtx, g *Guest, params map[string]string, plans []drivePlan, deletes []string, revert map[string]bool, force bool) error {
	for opt := range revert {
		if v, ok := g.Conf[opt]; ok {
			params[opt] = v
		} else if _, ok := g.Pending[opt]; ok {
			deletes = append(deletes, opt)
		}
	}
	// update_vm_api reads the boot order once, from the current config:
	// a deleted device leaves it, a new CD-ROM joins its end.
	bootorder := bootOrderList(g.Conf["boot"])
	for _, opt := range deletes {
		val, ok := g.Conf[opt]
		if !ok {
			val, ok = g.Pending[opt]
		}
		if !ok {
			tc.Log("cannot delete '%s' - not set in current configuration!", opt)
			continue
		}
		_, isPending := g.Pending[opt]
		delete(g.Pending, opt)
		if i := slices.Index(bootorder, opt); i >= 0 {
			bootorder = slices.Delete(bootorder, i, i+1)
			if b := printBootOrder(bootorder); b != "" {
				g.Pending["boot"] = b
			}
		}
		switch {
		case strings.HasPrefix(opt, "unused"):
			if g.Conf["protection"] == "1" {
				return Fail("can't remove unused disk '%s' - protection mode enabled", val)
			}
			s.state.removeVolume(g.Node, val)
			delete(g.Conf, opt)
		case isQemuDiskKey(opt):
			if g.Conf["protection"] == "1" {
				return Fail("can't remove drive '%s' - protection mode enabled", opt)
			}
			if isPending {
				if d, err := parseDrive(opt, val); err == nil {
					s.registerUnusedDrive(g, d)
				}
			}
			if _, inConf := g.Conf[opt]; inConf {
				g.PendingDelete[opt] = force
			}
		case opt == "tags":
			delete(g.Conf, opt)
		default:
			if _, inConf := g.Conf[opt]; inConf {
				g.PendingDelete[opt] = force
			}
		}
	}
	var drivePlans []drivePlan
	for _, p := range plans {
		if !revert[p.key] {
			drivePlans = append(drivePlans, p)
		}
	}
	planByKey := map[string]drivePlan{}
	for _, p := range drivePlans {
		planByKey[p.key] = p
	}
	for _, opt := range sortedKeys(params) {
		v := params[opt]
		if pv, ok := g.Pending[opt]; ok && pv == v {
			continue
		}
		if isQemuDiskKey(opt) && len(bootorder) > 0 && !slices.Contains(bootorder, opt) {
			if d, err := parseDrive(opt, v); err == nil && driveIsCdrom(d) && !driveIsCloudinit(d) {
				bootorder = append(bootorder, opt)
				g.Pending["boot"] = printBootOrder(bootorder)
			}
		}
		switch {
		case isQemuDiskKey(opt):
			if pv, ok := g.Pending[opt]; ok {
				if d, err := parseDrive(opt, pv); err == nil {
					s.registerUnusedDrive(g, d)
				}
			}
			p, ok := planByKey[opt]
			if !ok {
				d, err := parseDrive(opt, v)
				if err != nil {
					return ParamErr(opt, "unable to parse drive options")
				}
				p = drivePlan{key: opt, drive: d}
			}
			if cur, ok := g.Conf[opt]; ok && cur == v {
				g.Pending[opt] = v
				break
			}
			created, copied, err := s.createDisks(tc, g, []drivePlan{p}, "", g.IsTemplate())
			if err != nil {
				return err
			}
			if copied > 0 {
				if err := tc.Sleep(time.Duration(float64(copied) / importRate * float64(time.Second))); err != nil {
					return err
				}
			}
			g.Pending[opt] = created[opt]
		case opt == "tags":
			g.Pending[opt] = uniqueTags(v)
		case opt == "cipassword":
			g.Conf[opt] = s.hashPassword(v)
		case opt == "boot":
			// update_vm_api: every device of the new order must exist
			// (config, pending or this request) and not be deleted by it;
			// the order is stored as print_bootorder writes it.
			g.Pending[opt] = v
			if devs := bootOrderList(v); len(devs) > 0 {
				for _, dev := range devs {
					_, inConf := g.Conf[dev]
					_, inPending := g.Pending[dev]
					_, inParams := params[dev]
					deleted := false
					for _, d := range deletes {
						deleted = deleted || d == dev
					}
					if (!inConf && !inPending && !inParams) || deleted {
						return Fail("invalid bootorder: device '%s' does not exist'", dev)
					}
				}
				g.Pending[opt] = printBootOrder(devs)
				if _, ok := g.Conf["bootdisk"]; ok {
					g.PendingDelete["bootdisk"] = false
				}
			}
		default:
			g.Pending[opt] = v
		}
		delete(g.PendingDelete, opt)
	}
	cleanupPending(g)
	if len(g.Pending) == 0 && len(g.PendingDelete) == 0 {
		return nil
	}
	if g.Running {
		s.hotplugPending(g)
	} else {
		s.applyPending(g)
	}
	return nil
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
	if t, ok := res["tags"]; ok {
		out["tags"] = t
	}
	if l, ok := res["lock"]; ok {
		out["lock"] = l
	}
	if g.IsTemplate() {
		out["template"] = 1
	}
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

func (s *Server) qemuStart(r *Request) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	if err := s.rootOnly(r, "skiplock"); err != nil {
		return nil, err
	}
	skiplock := r.Bool("skiplock")
	if s.haManaged(g) && !r.Has("stateuri") {
		return s.haPowerRequest(r, g, false, 0), nil
	}
	return s.startTask(r, g.Node, "qmstart", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		return s.qemuStartGuest(tc, g, skiplock)
	}), nil
}

// qemuStartGuest is vm_start: under the config lock, apply pending
// changes and start QEMU, which fails when a NIC's bridge is missing.
func (s *Server) qemuStartGuest(tc *taskCtx, g *Guest, skiplock bool) error {
	if err := tc.LockGuest(g.VMID, "qemu"); err != nil {
		return err
	}
	if s.state.Guests[g.VMID] != g {
		return Fail("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", g.Node, g.VMID)
	}
	if g.IsTemplate() {
		return Fail("you can't start a vm if it's a template")
	}
	if !skiplock {
		if err := checkLock(g); err != nil {
			return err
		}
	}
	if g.Running {
		return Fail("VM %d already running", g.VMID)
	}
	if err := tc.Sleep(durStart); err != nil {
		return err
	}
	s.applyPending(g)
	if err := s.qemuCheckBridges(tc, g); err != nil {
		return err
	}
	g.Running = true
	g.StartedAt = s.clock.Now()
	g.KVM = kvmCommand(g.Conf)
	return nil
}

// maxQemuNets is MAX_NETS: net0 to net31.
const maxQemuNets = 32

// qemuCheckBridges is what happens when QEMU brings up its tap devices:
// pve-bridge dies with "bridge '...' does not exist" for a bridge that is
// neither an active host bridge nor an applied SDN vnet, QEMU logs the
// failed network script and exits, and the start fails.
func (s *Server) qemuCheckBridges(tc *taskCtx, g *Guest) error {
	for i := 0; i < maxQemuNets; i++ {
		key := "net" + strconv.Itoa(i)
		v, ok := g.Conf[key]
		if !ok {
			continue
		}
		n, err := parsePropString(qemuNetFormat, v, "")
		if err != nil || n["bridge"] == "" || s.bridgeExists(g.Node, n["bridge"]) {
			continue
		}
		vhost := ""
		if n["model"] == "virtio" {
			vhost = ",vhost=on"
		}
		tc.Log("bridge '%s' does not exist", n["bridge"])
		tc.Log("kvm: -netdev type=tap,id=%s,ifname=tap%di%d,script=/usr/libexec/qemu-server/pve-bridge,downscript=/usr/libexec/qemu-server/pve-bridgedown%s: network script /usr/libexec/qemu-server/pve-bridge failed with status 512", key, g.VMID, i, vhost)
		return Fail("start failed: QEMU exited with code 1")
	}
	return nil
}

func (s *Server) qemuStop(r *Request, typ string) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	if err := s.rootOnly(r, "skiplock"); err != nil {
		return nil, err
	}
	if err := s.rootOnly(r, "keepActive"); err != nil {
		return nil, err
	}
	skiplock := r.Bool("skiplock")
	if s.haManaged(g) {
		if typ == "qmshutdown" {
			return s.haPowerRequest(r, g, true, r.IntOr("timeout", 60)), nil
		}
		if !r.Has("migratedfrom") {
			if r.Bool("overrule-shutdown") {
				return nil, ParamErr("overrule-shutdown", "Not applicable for HA resources.")
			}
			return s.haPowerRequest(r, g, true, 0), nil
		}
	}
	return s.startTask(r, g.Node, typ, strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		return s.stopGuest(tc, g, typ == "qmshutdown", skiplock)
	}), nil
}

func (s *Server) qemuReboot(r *Request) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	if !g.Running {
		return nil, Fail("VM %d not running", g.VMID)
	}
	return s.startTask(r, g.Node, "qmreboot", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.LockGuest(g.VMID, "qemu"); err != nil {
			return err
		}
		if err := checkLock(g); err != nil {
			return err
		}
		if err := tc.Sleep(durShutdown + durStart); err != nil {
			return err
		}
		// The reboot task only stops the VM; qmeventd starts it again
		// outside the task, so a failing start leaves it stopped and the
		// reboot task still ends OK.
		s.applyPending(g)
		if err := s.qemuCheckBridges(&taskCtx{s: s, t: &Task{}}, g); err != nil {
			g.Running = false
			g.StartedAt = time.Time{}
			return nil
		}
		g.Running = true
		g.StartedAt = s.clock.Now()
		g.KVM = kvmCommand(g.Conf)
		return nil
	}), nil
}

func (s *Server) qemuReset(r *Request) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	if err := s.rootOnly(r, "skiplock"); err != nil {
		return nil, err
	}
	if !g.Running {
		return nil, Fail("VM %d not running", g.VMID)
	}
	return s.startTask(r, g.Node, "qmreset", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.failPoint(); err != nil {
			return err
		}
		g.StartedAt = s.clock.Now()
		return nil
	}), nil
}

func (s *Server) qemuResize(r *Request) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	if err := s.rootOnly(r, "skiplock"); err != nil {
		return nil, err
	}
	disk, sizeStr, digest, skiplock := r.Str("disk"), r.Str("size"), r.Str("digest"), r.Bool("skiplock")
	return s.startTask(r, g.Node, "resize", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.LockGuest(g.VMID, "qemu"); err != nil {
			return err
		}
		if s.state.Guests[g.VMID] != g {
			return Fail("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", g.Node, g.VMID)
		}
		if digest != "" && digest != g.Digest() {
			return Fail("checksum mismatch (file change by other user?)")
		}
		if !skiplock {
			if err := checkLock(g); err != nil {
				return err
			}
		}
		val, ok := g.Conf[disk]
		if !ok {
			return Fail("disk '%s' does not exist", disk)
		}
		d, err := parseDrive(disk, val)
		if err != nil || d["file"] == "" {
			return Fail("disk '%s' has no associated volume", disk)
		}
		if driveIsCdrom(d) {
			return Fail("you can't resize a cdrom")
		}
		// resize_vm: space on the volume's storage.
		if err := s.check(r.User, "/storage/"+storageOfVolume(d["file"]), "Datastore.AllocateSpace"); err != nil {
			return err
		}
		v := s.state.volume(g.Node, d["file"])
		if v == nil {
			return Fail("Could not determine current size of volume '%s'", d["file"])
		}
		grow := strings.HasPrefix(sizeStr, "+")
		n, _ := ParseSize(strings.TrimPrefix(sizeStr, "+"))
		newSize := n
		if grow {
			newSize += v.Size
		}
		if newSize < v.Size {
			return Fail("shrinking disks is not supported")
		}
		if newSize == v.Size {
			return nil
		}
		if err := tc.Sleep(durResize); err != nil {
			return err
		}
		v.Size = newSize
		d["size"] = FormatSize(newSize)
		g.Conf[disk] = printDrive(disk, d)
		tc.Log("Image resized.")
		return nil
	}), nil
}

func (s *Server) qemuTemplate(r *Request) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	only := r.Str("disk")
	// load_and_check runs before the worker forks and again under the
	// config lock. qemu-server sets no "lock: template": it writes
	// template: 1 first, then turns the disks into base volumes one by one.
	loadAndCheck := func() error {
		if s.state.Guests[g.VMID] != g {
			return Fail("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", g.Node, g.VMID)
		}
		if err := checkLock(g); err != nil {
			return err
		}
		if len(g.Snapshots) > 0 {
			return Fail("unable to create template, because VM contains snapshots")
		}
		if g.IsTemplate() && only == "" {
			return Fail("you can't convert a template to a template")
		}
		if g.Running {
			return Fail("you can't convert a VM to template if VM is running")
		}
		return nil
	}
	if err := loadAndCheck(); err != nil {
		return nil, err
	}
	return s.startTask(r, g.Node, "qmtemplate", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.LockGuest(g.VMID, "qemu"); err != nil {
			return err
		}
		if err := loadAndCheck(); err != nil {
			return err
		}
		g.Conf["template"] = "1"
		if err := tc.Sleep(durTemplate); err != nil {
			return err
		}
		for _, k := range sortedKeys(g.Conf) {
			if !isQemuDiskKey(k) || (only != "" && k != only) {
				continue
			}
			d, err := parseDrive(k, g.Conf[k])
			if err != nil || driveIsCdrom(d) {
				continue
			}
			v := s.state.volume(g.Node, d["file"])
			if v == nil || !strings.Contains(v.Name, "vm-") {
				continue
			}
			d["file"] = s.renameToBase(g.Node, v)
			g.Conf[k] = printDrive(k, d)
		}
		return nil
	}), nil
}

func (s *Server) qemuClone(r *Request) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	newid, _ := r.Int("newid")
	storage, format, target, snapname := r.Str("storage"), r.Str("format"), r.Str("target"), r.Str("snapname")
	if target == g.Node || target == "localhost" {
		target = ""
	}
	// clone_vm's $load_and_check: the pool first.
	if err := s.checkPoolExist(r); err != nil {
		return nil, err
	}
	pool := r.Str("pool")
	if target != "" && s.state.node(target) == nil {
		return nil, Fail("no such cluster node '%s'", target)
	}
	if storage != "" {
		// clone_vm: enabled on this node, images, then enabled on the
		// target and shared.
		st, err := s.storageCheckEnabled(storage, g.Node)
		if err != nil {
			return nil, err
		}
		if !st.allows("images") {
			return nil, ParamErr("storage", fmt.Sprintf("storage '%s' does not support vm images", storage))
		}
		if target != "" {
			if _, err := s.storageCheckEnabled(storage, target); err != nil {
				return nil, err
			}
			if !st.Shared {
				return nil, Fail("can't clone to non-shared storage '%s'", storage)
			}
		}
	}
	if err := checkLock(g); err != nil {
		return nil, err
	}
	if snapname != "" && g.Snapshots[snapname] == nil {
		return nil, Fail("snapshot '%s' does not exist", snapname)
	}
	full := r.BoolOr("full", !g.IsTemplate())
	if storage != "" && !full {
		return nil, Fail("parameter 'storage' not allowed for linked clones")
	}
	if format != "" && !full {
		return nil, Fail("parameter 'format' not allowed for linked clones")
	}
	src := g.Conf
	if snapname != "" {
		src = g.Snapshots[snapname].Conf
	}
	running := g.Running
	if _, tpm := src["tpmstate0"]; tpm && full && running && snapname == "" {
		return nil, Fail("cannot clone TPM state while VM is running")
	}
	if err := s.qemuCloneStorageAccess(r.User, src, storage); err != nil {
		return nil, err
	}
	if err := s.qemuBridgeAccess(r.User, src); err != nil {
		return nil, err
	}
	shared := true
	var diskKeys []string
	for _, k := range sortedKeys(src) {
		if !isQemuDiskKey(k) {
			continue
		}
		d, err := parseDrive(k, src[k])
		if err != nil {
			return nil, Fail("unable to parse drive options for '%s'", k)
		}
		if st := s.state.storage(strings.SplitN(d["file"], ":", 2)[0]); st != nil && !st.Shared {
			shared = false
		}
		if driveIsCdrom(d) && !driveIsCloudinit(d) {
			continue
		}
		v := s.state.volume(g.Node, d["file"])
		isBase := v != nil && strings.Contains(v.Name, "base-")
		if !full && !driveIsCloudinit(d) && k != "tpmstate0" && !isBase {
			return nil, Fail("Linked clone feature is not supported for '%s' (%s)", d["file"], k)
		}
		diskKeys = append(diskKeys, k)
	}
	if target != "" && !shared {
		return nil, Fail("can't clone VM to node '%s' (VM uses local storage)", target)
	}
	if _, exists := s.state.Guests[newid]; exists {
		return nil, Fail("unable to create VM %d: config file already exists", newid)
	}
	newNode := g.Node
	if target != "" {
		newNode = target
	}
	ng := &Guest{VMID: newid, Node: g.Node, Type: "qemu", Conf: map[string]string{"lock": "clone"}}
	ng.ensureMaps()
	s.state.Guests[newid] = ng
	name, desc := r.Str("name"), r.Str("description")
	upid := s.startTask(r, g.Node, "qmclone", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		// Proxmox locks the source shared (exclusive if it ran when the
		// call came in) and the target exclusively, each waiting 1 second,
		// then repeats the early checks under the locks.
		if err := tc.lock(g.VMID, "qemu", !running, time.Second); err != nil {
			delete(s.state.Guests, newid)
			return err
		}
		if err := tc.lock(newid, "qemu", false, time.Second); err != nil {
			delete(s.state.Guests, newid)
			return err
		}
		recheck := func() error {
			if s.state.Guests[g.VMID] != g {
				return Fail("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", g.Node, g.VMID)
			}
			if err := checkLock(g); err != nil {
				return err
			}
			if g.Running != running {
				return Fail("unexpected state change")
			}
			if snapname != "" && g.Snapshots[snapname] == nil {
				return Fail("snapshot '%s' does not exist", snapname)
			}
			return nil
		}
		if err := recheck(); err != nil {
			delete(s.state.Guests, newid)
			return err
		}
		// clone_vm's $clonefn: the only place naming the new VMID, as the
		// task's id is the source's.
		tc.Log("creating a clone of VM %d with ID %d", g.VMID, newid)
		if full {
			tc.Log("create full clone of drives")
		} else {
			tc.Log("create linked clone of drives")
		}
		conf := map[string]string{}
		var bytes int64
		for _, k := range sortedKeys(src) {
			v := src[k]
			switch {
			case k == "lock" || k == "template" || k == "parent" || k == "snaptime" || k == "vmstate" || strings.HasPrefix(k, "unused"):
			case strings.HasPrefix(k, "net"):
				if n, err := parsePropString(qemuNetFormat, v, ""); err == nil {
					n["macaddr"] = s.randomMAC()
					conf[k] = printNet(n)
				}
			case isQemuDiskKey(k):
				d, _ := parseDrive(k, v)
				if driveIsCdrom(d) && !driveIsCloudinit(d) {
					conf[k] = v
					continue
				}
				sv := s.state.volume(g.Node, d["file"])
				if sv == nil {
					delete(s.state.Guests, newid)
					return Fail("clone failed: volume '%s' does not exist", d["file"])
				}
				dstStorage := sv.Storage
				if storage != "" && full {
					dstStorage = storage
				}
				var nv *Volume
				var err error
				if driveIsCloudinit(d) {
					st, _ := s.storageConfig(dstStorage)
					name, fmtName := fmt.Sprintf("vm-%d-cloudinit", newid), ""
					if st != nil && st.fileBased() {
						fmtName = "qcow2"
						name += ".qcow2"
					}
					nv, err = s.allocImage(g.Node, dstStorage, newid, sv.Size, fmtName, name)
				} else if full {
					bytes += sv.Size
					nv, err = s.allocImage(g.Node, dstStorage, newid, sv.Size, format, "")
				} else {
					nv, err = s.allocImage(g.Node, dstStorage, newid, sv.Size, sv.Format, "")
					if nv != nil {
						nv.Parent = sv.VolID()
					}
				}
				if err != nil {
					for _, volid := range guestVolumes(conf) {
						s.state.removeVolume(g.Node, volid)
					}
					delete(s.state.Guests, newid)
					return fmt.Errorf("clone failed: %s", strings.TrimRight(err.Error(), "\n"))
				}
				d["file"] = nv.VolID()
				conf[k] = printDrive(k, d)
			default:
				conf[k] = v
			}
		}
		sm, _ := parsePropString(namedFormats["pve-qm-smbios1"].props, conf["smbios1"], "")
		if sm == nil {
			sm = map[string]string{}
		}
		sm["uuid"] = s.randomUUID()
		conf["smbios1"] = printPropString(namedFormats["pve-qm-smbios1"].props, sm)
		if conf["vmgenid"] != "" {
			conf["vmgenid"] = s.randomUUID()
		}
		if name != "" {
			conf["name"] = name
		} else {
			base := src["name"]
			if base == "" {
				base = strconv.Itoa(g.VMID)
			}
			conf["name"] = "Copy-of-VM-" + base
		}
		if desc != "" {
			conf["description"] = desc
		}
		conf["lock"] = "clone"
		ng.Conf = conf
		if err := tc.Sleep(durClone + time.Duration(float64(bytes)/importRate*float64(time.Second))); err != nil {
			for _, volid := range guestVolumes(conf) {
				s.state.removeVolume(g.Node, volid)
			}
			delete(s.state.Guests, newid)
			if err == errInterrupted {
				// clone_vm's own signal handler.
				return fmt.Errorf("clone failed: interrupted by signal")
			}
			return fmt.Errorf("clone failed: %s", strings.TrimRight(asAPIError(err).Message, "\n"))
		}
		delete(conf, "lock")
		if newNode != g.Node {
			ng.Node = newNode
		}
		s.state.addVMToPool(newid, pool)
		return nil
	})
	s.setTaskTarget(upid, newid)
	return upid, nil
}

func (s *Server) qemuDestroy(r *Request) (any, error) {
	g, err := s.qemuGuest(r)
	if err != nil {
		return nil, err
	}
	if err := s.rootOnly(r, "skiplock"); err != nil {
		return nil, err
	}
	skiplock := r.Bool("skiplock")
	purgeUnref := r.Bool("destroy-unreferenced-disks")
	purge := r.Bool("purge")
	early := func() error {
		if g.Conf["protection"] == "1" {
			return Fail("can't remove VM %d - protection mode enabled", g.VMID)
		}
		if !purge && s.haConfigured(haSID(g)) {
			return Fail("unable to remove VM %d - used in HA resources and purge parameter not set.", g.VMID)
		}
		if g.Running {
			return Fail("VM %d is running - destroy failed", g.VMID)
		}
		return nil
	}
	if err := early(); err != nil {
		return nil, err
	}
	return s.startTask(r, g.Node, "qmdestroy", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.LockGuest(g.VMID, "qemu"); err != nil {
			return err
		}
		if s.state.Guests[g.VMID] != g {
			return Fail("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", g.Node, g.VMID)
		}
		if err := early(); err != nil {
			return err
		}
		if !skiplock {
			if err := checkLock(g); err != nil {
				return err
			}
		}
		vols := guestVolumes(g.Conf)
		for _, sn := range g.Snapshots {
			vols = append(vols, guestVolumes(sn.Conf)...)
		}
		for _, volid := range vols {
			if s.linkedChildren(volid) > 0 {
				return Fail("base volume '%s' is still in use by linked cloned", volid)
			}
		}
		if err := tc.Sleep(durDestroy); err != nil {
			return err
		}
		for _, volid := range vols {
			s.state.removeVolume(g.Node, volid)
			tc.Log("Removed volume '%s'", volid)
		}
		if purgeUnref {
			for _, v := range append([]*Volume(nil), s.state.Volumes...) {
				if v.VMID == g.VMID && v.Content == "images" && (v.Node == "" || v.Node == g.Node) {
					s.state.removeVolume(g.Node, v.VolID())
				}
			}
		}
		s.purgeGuest(tc, g, purge)
		delete(s.state.Guests, g.VMID)
		// destroy_vm: remove_vm_access takes the guest out of its pool.
		s.state.removeVMAccess(g.VMID)
		return nil
	}), nil
}

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
