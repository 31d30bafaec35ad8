package pvesim

import (
	"time"
)

// Virtual machines (qemu-server): the routes and the shared guest lookups.
// The verbs live in the guest_*.go files beside the container ones.

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
			Handler: s.onGuest(s.qemuGuestSkiplock, s.qemuDestroy)})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/config", Perm: PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node",
			Params:  nv(Bool("current").Opt().Default("0"), Str("snapshot").Opt().MaxLen(40).Fmt("pve-configid")),
			Handler: s.onGuest(s.qemuGuest, s.qemuGetConfig)})
		s.Handle(&Route{Method: "PUT", Path: "/nodes/{node}/qemu/{vmid}/config", Perm: PermAny("/vms/{vmid}", "VM.Config.Disk", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.HWType", "VM.Config.Options", "VM.Config.Cloudinit"), ProxyTo: "node",
			Params: qemuUpdateParams(false), Handler: s.onGuest(s.qemuGuestSkiplock, func(r *Request, g *Guest) (any, error) { return s.qemuUpdate(r, g, true) })})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/config", Perm: PermAny("/vms/{vmid}", "VM.Config.Disk", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.HWType", "VM.Config.Options", "VM.Config.Cloudinit"), ProxyTo: "node",
			Params: qemuUpdateParams(true), Handler: s.onGuest(s.qemuGuestSkiplock, func(r *Request, g *Guest) (any, error) { return s.qemuUpdate(r, g, false) })})
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
			Handler: s.onGuest(s.qemuGuestSkiplock, s.qemuResize)})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/template", Perm: PermCheck("/vms/{vmid}", "VM.Allocate"), ProxyTo: "node",
			Params: nv(Str("disk").Opt().Enum(qemuDiskSlots()...)), Handler: s.onGuest(s.qemuGuest, s.qemuTemplate)})
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
			Handler: s.onGuest(s.qemuGuest, s.qemuClone)})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/status", Perm: PermUser(), ProxyTo: "node", Params: nv(),
			Handler: func(r *Request) (any, error) {
				if _, err := s.qemuGuest(r); err != nil {
					return nil, err
				}
				return subdirs("current", "start", "stop", "reset", "shutdown", "suspend", "reboot"), nil
			}})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/status/current", Perm: PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node", Params: nv(),
			Handler: s.onGuest(s.qemuGuest, s.qemuStatusCurrent)})
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
			Handler: s.onGuest(s.qemuGuestSkiplock, s.qemuStart)})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/status/stop", Perm: PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params: nv(skiplock(), Bool("keepActive").Opt().Default("0"), Str("migratedfrom").Opt().Fmt("pve-node"),
				Bool("overrule-shutdown").Opt().Default("0"), Int("timeout").Opt().Min(0)),
			Handler: s.onGuest(s.qemuGuestSkiplock, func(r *Request, g *Guest) (any, error) { return s.qemuStop(r, g, "qmstop") })})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/status/shutdown", Perm: PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params:  nv(skiplock(), Bool("forceStop").Opt().Default("0"), Bool("keepActive").Opt().Default("0"), Int("timeout").Opt().Min(0)),
			Handler: s.onGuest(s.qemuGuestSkiplock, func(r *Request, g *Guest) (any, error) { return s.qemuStop(r, g, "qmshutdown") })})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/status/reboot", Perm: PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params: nv(Int("timeout").Opt().Min(0)), Handler: s.onGuest(s.qemuGuest, s.qemuReboot)})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/status/reset", Perm: PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params: nv(skiplock()), Handler: s.onGuest(s.qemuGuestSkiplock, s.qemuReset)})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/snapshot", Perm: PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node", Params: nv(),
			Handler: s.onGuest(s.qemuGuest, s.qemuSnapshotList)})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/snapshot", Perm: PermCheck("/vms/{vmid}", "VM.Snapshot"), ProxyTo: "node",
			Params: nv(snap(), Str("description").Opt(), Bool("vmstate").Opt()), Handler: s.onGuest(s.qemuGuest, s.qemuSnapshotCreate)})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}", Perm: PermUser(), ProxyTo: "node",
			Params: nv(snap()), Handler: s.snapshotIndex(s.qemuGuest)})
		s.Handle(&Route{Method: "DELETE", Path: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}", Perm: PermCheck("/vms/{vmid}", "VM.Snapshot"), ProxyTo: "node",
			Params: nv(snap(), Bool("force").Opt()), Handler: s.onGuest(s.qemuGuest, s.qemuSnapshotDelete)})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback", Perm: PermAny("/vms/{vmid}", "VM.Snapshot", "VM.Snapshot.Rollback"), ProxyTo: "node",
			Params: nv(snap(), Bool("start").Opt().Default("0")), Handler: s.onGuest(s.qemuGuest, s.qemuSnapshotRollback)})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/config", Perm: PermAny("/vms/{vmid}", "VM.Snapshot", "VM.Snapshot.Rollback", "VM.Audit"), ProxyTo: "node",
			Params: nv(snap()), Handler: s.snapshotConfig(s.qemuGuest, qemuKeyType)})
		s.Handle(&Route{Method: "PUT", Path: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/config", Perm: PermCheck("/vms/{vmid}", "VM.Snapshot"), ProxyTo: "node",
			Params: nv(snap(), Str("description").Opt()), Handler: s.snapshotUpdate(s.qemuGuest, "qemu")})
	})
}

// qemuGuest loads the VM of the request, failing as load_config does.
func (s *Server) qemuGuest(r *Request) (*Guest, error) {
	return s.pathGuest(r, "qemu")
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

// qemuGuestSkiplock and lxcGuestSkiplock are the guest of the path, for
// a call whose skiplock only root may use (the API's first two checks).
func (s *Server) qemuGuestSkiplock(r *Request) (*Guest, error) {
	return guestSkiplock(s, r, s.qemuGuest)
}

func (s *Server) lxcGuestSkiplock(r *Request) (*Guest, error) {
	return guestSkiplock(s, r, s.lxcGuest)
}

// onGuest adapts a handler of one guest to a route: lookup finds the
// path's guest (load_config, and for skiplock the root check) before h
// runs, as every guest handler of qemu-server and pve-container begins.
func (s *Server) onGuest(lookup func(*Request) (*Guest, error), h func(*Request, *Guest) (any, error)) func(*Request) (any, error) {
	return func(r *Request) (any, error) {
		g, err := lookup(r)
		if err != nil {
			return nil, err
		}
		return h(r, g)
	}
}

func guestSkiplock(s *Server, r *Request, guest func(*Request) (*Guest, error)) (*Guest, error) {
	g, err := guest(r)
	if err != nil {
		return nil, err
	}
	if err := s.rootOnly(r, "skiplock"); err != nil {
		return nil, err
	}
	return g, nil
}

func (s *Server) rootOnly(r *Request, param string) error {
	if r.Bool(param) && r.User != "root@pam" {
		return ParamErr(param, "Only root may use this option.")
	}
	return nil
}

// drivePlan is one drive parameter after the API-time checks.
type drivePlan struct {
	key   string
	drive map[string]string
}
