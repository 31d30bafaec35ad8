package pvesim

import (
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
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
		nv := func(extra ...*route.Param) *route.Params {
			return route.NewParams(append([]*route.Param{pNode(), pVMID()}, extra...)...)
		}
		snap := func() *route.Param { return route.Str("snapname").MaxLen(40).Fmt("pve-configid") }
		skiplock := func() *route.Param { return route.Bool("skiplock").Opt() }
		disk := func() *route.Param { return route.Str("disk").Enum(qemuDiskSlots()...) }

		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/qemu", Perm: route.PermUser(), ProxyTo: "node",
			Params: route.NewParams(pNode(), route.Bool("full").Opt()), Handler: s.qemuList})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/qemu", Perm: route.PermUser(), ProxyTo: "node",
			Params: qemuCreateParams(), Handler: s.qemuCreate})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}", Perm: route.PermUser(), ProxyTo: "node", Params: nv(),
			Handler: func(r *route.Request) (any, error) {
				if _, err := s.qemuGuest(r); err != nil {
					return nil, err
				}
				return subdirs("config", "pending", "status", "unlink", "vncproxy", "termproxy", "migrate", "resize", "move", "rrd", "rrddata", "monitor", "agent", "snapshot", "spiceproxy", "sendkey", "firewall", "mtunnel", "remote_migrate"), nil
			}})
		s.Handle(&route.Route{Method: "DELETE", Path: "/nodes/{node}/qemu/{vmid}", Perm: route.PermCheck("/vms/{vmid}", "VM.Allocate"), ProxyTo: "node",
			Params:  nv(skiplock(), route.Bool("purge").Opt(), route.Bool("destroy-unreferenced-disks").Opt().Default("0")),
			Handler: s.onGuest(s.qemuGuestSkiplock, s.qemuDestroy)})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/config", Perm: route.PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node",
			Params:  nv(route.Bool("current").Opt().Default("0"), route.Str("snapshot").Opt().MaxLen(40).Fmt("pve-configid")),
			Handler: s.onGuest(s.qemuGuest, s.qemuGetConfig)})
		s.Handle(&route.Route{Method: "PUT", Path: "/nodes/{node}/qemu/{vmid}/config", Perm: route.PermAny("/vms/{vmid}", "VM.Config.Disk", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.HWType", "VM.Config.Options", "VM.Config.Cloudinit"), ProxyTo: "node",
			Params: qemuUpdateParams(false), Handler: s.onGuest(s.qemuGuestSkiplock, func(r *route.Request, g *Guest) (any, error) { return s.qemuUpdate(r, g, true) })})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/config", Perm: route.PermAny("/vms/{vmid}", "VM.Config.Disk", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.HWType", "VM.Config.Options", "VM.Config.Cloudinit"), ProxyTo: "node",
			Params: qemuUpdateParams(true), Handler: s.onGuest(s.qemuGuestSkiplock, func(r *route.Request, g *Guest) (any, error) { return s.qemuUpdate(r, g, false) })})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/pending", Perm: route.PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node", Params: nv(),
			Handler: func(r *route.Request) (any, error) {
				g, err := s.qemuGuest(r)
				if err != nil {
					return nil, err
				}
				return qemuPendingJSON(g), nil
			}})
		s.Handle(&route.Route{Method: "PUT", Path: "/nodes/{node}/qemu/{vmid}/resize", Perm: route.PermCheck("/vms/{vmid}", "VM.Config.Disk"), ProxyTo: "node",
			Params:  nv(disk(), route.Str("size").Pattern(`\+?\d+(\.\d+)?[KMGT]?`), route.Str("digest").Opt().MaxLen(40), skiplock()),
			Handler: s.onGuest(s.qemuGuestSkiplock, s.qemuResize)})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/template", Perm: route.PermCheck("/vms/{vmid}", "VM.Allocate"), ProxyTo: "node",
			Params: nv(route.Str("disk").Opt().Enum(qemuDiskSlots()...)), Handler: s.onGuest(s.qemuGuest, s.qemuTemplate)})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/clone", Perm: route.PermAnd(route.PermCheck("/vms/{vmid}", "VM.Clone"), route.PermOr(route.PermCheck("/vms/{newid}", "VM.Allocate"), route.PermCheck("/pool/{pool}", "VM.Allocate").RequireParam("pool"))), ProxyTo: "node",
			Params: nv(
				route.Int("newid").Fmt("pve-vmid").Min(100).Max(999999999),
				route.Int("bwlimit").Opt().Min(0),
				route.Str("description").Opt(),
				route.Str("format").Opt().Enum("raw", "qcow2", "vmdk"),
				route.Bool("full").Opt(),
				route.Str("name").Opt().Fmt("dns-name"),
				route.Str("pool").Opt().Fmt("pve-poolid"),
				route.Str("snapname").Opt().MaxLen(40).Fmt("pve-configid"),
				route.Str("storage").Opt().Fmt("pve-storage-id"),
				route.Str("target").Opt().Fmt("pve-node"),
			),
			Handler: s.onGuest(s.qemuGuest, s.qemuClone)})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/status", Perm: route.PermUser(), ProxyTo: "node", Params: nv(),
			Handler: func(r *route.Request) (any, error) {
				if _, err := s.qemuGuest(r); err != nil {
					return nil, err
				}
				return subdirs("current", "start", "stop", "reset", "shutdown", "suspend", "reboot"), nil
			}})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/status/current", Perm: route.PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node", Params: nv(),
			Handler: s.onGuest(s.qemuGuest, s.qemuStatusCurrent)})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/status/start", Perm: route.PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params: nv(skiplock(),
				route.Str("force-cpu").Opt(),
				route.Str("machine").Opt().Props(qemuConfigTypes.Lookup("machine").PropFormat),
				route.Str("migratedfrom").Opt().Fmt("pve-node"),
				route.Str("migration_network").Opt().Fmt("CIDR"),
				route.Str("migration_type").Opt().Enum("secure", "insecure"),
				route.Str("nets-host-mtu").Opt().Pattern(`net\d+=\d+(,net\d+=\d+)*`),
				route.Str("stateuri").Opt().MaxLen(128),
				route.Str("targetstorage").Opt().Fmt("storage-pair-list"),
				route.Int("timeout").Opt().Min(0),
				route.Bool("with-conntrack-state").Opt().Default("0"),
			),
			Handler: s.onGuest(s.qemuGuestSkiplock, s.qemuStart)})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/status/stop", Perm: route.PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params: nv(skiplock(), route.Bool("keepActive").Opt().Default("0"), route.Str("migratedfrom").Opt().Fmt("pve-node"),
				route.Bool("overrule-shutdown").Opt().Default("0"), route.Int("timeout").Opt().Min(0)),
			Handler: s.onGuest(s.qemuGuestSkiplock, func(r *route.Request, g *Guest) (any, error) { return s.qemuStop(r, g, "qmstop") })})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/status/shutdown", Perm: route.PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params:  nv(skiplock(), route.Bool("forceStop").Opt().Default("0"), route.Bool("keepActive").Opt().Default("0"), route.Int("timeout").Opt().Min(0)),
			Handler: s.onGuest(s.qemuGuestSkiplock, func(r *route.Request, g *Guest) (any, error) { return s.qemuStop(r, g, "qmshutdown") })})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/status/reboot", Perm: route.PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params: nv(route.Int("timeout").Opt().Min(0)), Handler: s.onGuest(s.qemuGuest, s.qemuReboot)})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/status/reset", Perm: route.PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params: nv(skiplock()), Handler: s.onGuest(s.qemuGuestSkiplock, s.qemuReset)})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/snapshot", Perm: route.PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node", Params: nv(),
			Handler: s.onGuest(s.qemuGuest, s.qemuSnapshotList)})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/snapshot", Perm: route.PermCheck("/vms/{vmid}", "VM.Snapshot"), ProxyTo: "node",
			Params: nv(snap(), route.Str("description").Opt(), route.Bool("vmstate").Opt()), Handler: s.onGuest(s.qemuGuest, s.qemuSnapshotCreate)})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}", Perm: route.PermUser(), ProxyTo: "node",
			Params: nv(snap()), Handler: s.snapshotIndex(s.qemuGuest)})
		s.Handle(&route.Route{Method: "DELETE", Path: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}", Perm: route.PermCheck("/vms/{vmid}", "VM.Snapshot"), ProxyTo: "node",
			Params: nv(snap(), route.Bool("force").Opt()), Handler: s.onGuest(s.qemuGuest, s.qemuSnapshotDelete)})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback", Perm: route.PermAny("/vms/{vmid}", "VM.Snapshot", "VM.Snapshot.Rollback"), ProxyTo: "node",
			Params: nv(snap(), route.Bool("start").Opt().Default("0")), Handler: s.onGuest(s.qemuGuest, s.qemuSnapshotRollback)})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/config", Perm: route.PermAny("/vms/{vmid}", "VM.Snapshot", "VM.Snapshot.Rollback", "VM.Audit"), ProxyTo: "node",
			Params: nv(snap()), Handler: s.snapshotConfig(s.qemuGuest, qemuKeyType)})
		s.Handle(&route.Route{Method: "PUT", Path: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/config", Perm: route.PermCheck("/vms/{vmid}", "VM.Snapshot"), ProxyTo: "node",
			Params: nv(snap(), route.Str("description").Opt()), Handler: s.snapshotUpdate(s.qemuGuest, "qemu")})
	})
}

// qemuGuest loads the VM of the request, failing as load_config does.
func (s *Server) qemuGuest(r *route.Request) (*Guest, error) {
	return s.pathGuest(r, "qemu")
}

func checkLock(g *Guest) error {
	if l := g.Conf["lock"]; l != "" {
		kind := "VM"
		if g.Type == "lxc" {
			kind = "CT"
		}
		return route.Fail("%s is locked (%s)", kind, l)
	}
	return nil
}

// qemuGuestSkiplock and lxcGuestSkiplock are the guest of the path, for
// a call whose skiplock only root may use (the API's first two checks).
func (s *Server) qemuGuestSkiplock(r *route.Request) (*Guest, error) {
	return guestSkiplock(s, r, s.qemuGuest)
}

func (s *Server) lxcGuestSkiplock(r *route.Request) (*Guest, error) {
	return guestSkiplock(s, r, s.lxcGuest)
}

// onGuest adapts a handler of one guest to a route: lookup finds the
// path's guest (load_config, and for skiplock the root check) before h
// runs, as every guest handler of qemu-server and pve-container begins.
func (s *Server) onGuest(lookup func(*route.Request) (*Guest, error), h func(*route.Request, *Guest) (any, error)) func(*route.Request) (any, error) {
	return func(r *route.Request) (any, error) {
		g, err := lookup(r)
		if err != nil {
			return nil, err
		}
		return h(r, g)
	}
}

func guestSkiplock(s *Server, r *route.Request, guest func(*route.Request) (*Guest, error)) (*Guest, error) {
	g, err := guest(r)
	if err != nil {
		return nil, err
	}
	if err := s.rootOnly(r, "skiplock"); err != nil {
		return nil, err
	}
	return g, nil
}

func (s *Server) rootOnly(r *route.Request, param string) error {
	if r.Bool(param) && r.User != "root@pam" {
		return route.ParamErr(param, "Only root may use this option.")
	}
	return nil
}

// drivePlan is one drive parameter after the API-time checks.
type drivePlan struct {
	key   string
	drive map[string]string
}
