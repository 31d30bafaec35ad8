package pvesim

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Containers (pve-container): create from a vztmpl volume, config with
// pending changes, resize, power, template, clone, snapshots and destroy.

// Realistic durations of container tasks, before TaskSpeed scaling.
const (
	durCTCreate   = 3 * time.Second
	durCTStart    = 1 * time.Second
	durCTStop     = 300 * time.Millisecond
	durCTShutdown = 2 * time.Second
	durCTTemplate = 500 * time.Millisecond
	durCTClone    = 2 * time.Second
	durCTDestroy  = 500 * time.Millisecond
	durCTSnapshot = 500 * time.Millisecond
	durCTResize   = 300 * time.Millisecond
)

// reLxcNewDisk is pve-container's NEW_DISK_RE: "local-lvm:8".
var reLxcNewDisk = regexp.MustCompile(`^([^:\s]+):(\d+(\.\d+)?)$`)

func init() {
	registerRoutes(func(s *Server) {
		nv := func(extra ...*Param) *Params { return NewParams(append([]*Param{pNode(), pVMID()}, extra...)...) }
		snap := func() *Param { return Str("snapname").MaxLen(40).Fmt("pve-configid") }
		base := "/nodes/{node}/lxc"
		s.Handle(&Route{Method: "GET", Path: base, Perm: PermUser(), ProxyTo: "node", Params: NewParams(pNode()), Handler: s.lxcList})
		s.Handle(&Route{Method: "POST", Path: base, Perm: PermUser(), ProxyTo: "node", Params: lxcCreateParams(), Handler: s.lxcCreate})
		s.Handle(&Route{Method: "GET", Path: base + "/{vmid}", Perm: PermUser(), ProxyTo: "node", Params: nv(),
			Handler: func(r *Request) (any, error) {
				if _, err := s.lxcGuest(r); err != nil {
					return nil, err
				}
				return subdirs("config", "status", "vncproxy", "termproxy", "vncwebsocket", "spiceproxy", "migrate", "clone", "rrd", "firewall", "snapshot", "resize", "move_volume", "pending", "template", "feature", "interfaces", "remote_migrate", "mtunnel", "mtunnelwebsocket"), nil
			}})
		s.Handle(&Route{Method: "DELETE", Path: base + "/{vmid}", Perm: PermCheck("/vms/{vmid}", "VM.Allocate"), ProxyTo: "node",
			Params:  nv(Bool("destroy-unreferenced-disks").Opt(), Bool("force").Opt().Default("0"), Bool("purge").Opt().Default("0")),
			Handler: s.lxcDestroy})
		s.Handle(&Route{Method: "GET", Path: base + "/{vmid}/config", Perm: PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node",
			Params:  nv(Bool("current").Opt().Default("0"), Str("snapshot").Opt().MaxLen(40).Fmt("pve-configid")),
			Handler: s.lxcGetConfig})
		s.Handle(&Route{Method: "PUT", Path: base + "/{vmid}/config", Perm: PermAny("/vms/{vmid}", "VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options"), ProxyTo: "node", Params: lxcUpdateParams(), Handler: s.lxcUpdate})
		s.Handle(&Route{Method: "GET", Path: base + "/{vmid}/pending", Perm: PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node", Params: nv(),
			Handler: func(r *Request) (any, error) {
				g, err := s.lxcGuest(r)
				if err != nil {
					return nil, err
				}
				return pendingJSON(g, lxcKeyType, nil), nil
			}})
		s.Handle(&Route{Method: "PUT", Path: base + "/{vmid}/resize", Perm: PermAny("/vms/{vmid}", "VM.Config.Disk"), ProxyTo: "node",
			Params:  nv(Str("disk").Enum(lxcVolumeKeys()...), Str("size").Pattern(`\+?\d+(\.\d+)?[KMGT]?`), Str("digest").Opt().MaxLen(40)),
			Handler: s.lxcResize})
		s.Handle(&Route{Method: "POST", Path: base + "/{vmid}/template", Perm: PermCheck("/vms/{vmid}", "VM.Allocate"), ProxyTo: "node", Params: nv(), Handler: s.lxcTemplate})
		s.Handle(&Route{Method: "POST", Path: base + "/{vmid}/clone", Perm: PermAnd(PermCheck("/vms/{vmid}", "VM.Clone"), PermOr(PermCheck("/vms/{newid}", "VM.Allocate"), PermCheck("/pool/{pool}", "VM.Allocate").RequireParam("pool"))), ProxyTo: "node",
			Params: nv(
				Int("newid").Fmt("pve-vmid").Min(100).Max(999999999),
				Num("bwlimit").Opt().Min(0),
				Str("description").Opt(),
				Bool("full").Opt(),
				Str("hostname").Opt().Fmt("dns-name"),
				Str("pool").Opt().Fmt("pve-poolid"),
				Str("snapname").Opt().MaxLen(40).Fmt("pve-configid"),
				Str("storage").Opt().Fmt("pve-storage-id"),
				Str("target").Opt().Fmt("pve-node"),
			),
			Handler: s.lxcClone})
		s.Handle(&Route{Method: "GET", Path: base + "/{vmid}/status", Perm: PermUser(), ProxyTo: "node", Params: nv(),
			Handler: func(r *Request) (any, error) {
				if _, err := s.lxcGuest(r); err != nil {
					return nil, err
				}
				return subdirs("current", "start", "stop", "shutdown", "reboot", "suspend", "resume"), nil
			}})
		s.Handle(&Route{Method: "GET", Path: base + "/{vmid}/status/current", Perm: PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node", Params: nv(), Handler: s.lxcStatusCurrent})
		s.Handle(&Route{Method: "POST", Path: base + "/{vmid}/status/start", Perm: PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params: nv(Bool("debug").Opt().Default("0"), Bool("skiplock").Opt()), Handler: s.lxcStart})
		s.Handle(&Route{Method: "POST", Path: base + "/{vmid}/status/stop", Perm: PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params:  nv(Bool("overrule-shutdown").Opt().Default("0"), Bool("skiplock").Opt()),
			Handler: func(r *Request) (any, error) { return s.lxcStop(r, "vzstop") }})
		s.Handle(&Route{Method: "POST", Path: base + "/{vmid}/status/shutdown", Perm: PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params:  nv(Bool("forceStop").Opt().Default("0"), Int("timeout").Opt().Min(0).Default("60")),
			Handler: func(r *Request) (any, error) { return s.lxcStop(r, "vzshutdown") }})
		s.Handle(&Route{Method: "POST", Path: base + "/{vmid}/status/reboot", Perm: PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params: nv(Int("timeout").Opt().Min(0)), Handler: s.lxcReboot})
		s.Handle(&Route{Method: "GET", Path: base + "/{vmid}/snapshot", Perm: PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node", Params: nv(),
			Handler: func(r *Request) (any, error) {
				g, err := s.lxcGuest(r)
				if err != nil {
					return nil, err
				}
				return snapshotListJSON(g), nil
			}})
		s.Handle(&Route{Method: "POST", Path: base + "/{vmid}/snapshot", Perm: PermCheck("/vms/{vmid}", "VM.Snapshot"), ProxyTo: "node",
			Params: nv(snap(), Str("description").Opt()), Handler: s.lxcSnapshotCreate})
		s.Handle(&Route{Method: "GET", Path: base + "/{vmid}/snapshot/{snapname}", Perm: PermUser(), Params: nv(snap()),
			Handler: func(r *Request) (any, error) {
				g, err := s.lxcGuest(r)
				if err != nil {
					return nil, err
				}
				if g.Snapshots[r.Str("snapname")] == nil {
					return nil, Fail("snapshot '%s' does not exist", r.Str("snapname"))
				}
				return subdirs("rollback", "config"), nil
			}})
		s.Handle(&Route{Method: "DELETE", Path: base + "/{vmid}/snapshot/{snapname}", Perm: PermCheck("/vms/{vmid}", "VM.Snapshot"), ProxyTo: "node",
			Params: nv(snap(), Bool("force").Opt()), Handler: s.lxcSnapshotDelete})
		s.Handle(&Route{Method: "POST", Path: base + "/{vmid}/snapshot/{snapname}/rollback", Perm: PermAny("/vms/{vmid}", "VM.Snapshot", "VM.Snapshot.Rollback"), ProxyTo: "node",
			Params: nv(snap(), Bool("start").Opt().Default("0")), Handler: s.lxcSnapshotRollback})
		s.Handle(&Route{Method: "GET", Path: base + "/{vmid}/snapshot/{snapname}/config", Perm: PermAny("/vms/{vmid}", "VM.Snapshot", "VM.Snapshot.Rollback", "VM.Audit"), ProxyTo: "node",
			Params: nv(snap()), Handler: func(r *Request) (any, error) {
				g, err := s.lxcGuest(r)
				if err != nil {
					return nil, err
				}
				sn := g.Snapshots[r.Str("snapname")]
				if sn == nil {
					return nil, Fail("snapshot '%s' does not exist", r.Str("snapname"))
				}
				out := map[string]any{}
				for k, v := range sn.Conf {
					out[k] = typedValue(lxcKeyType(k), v)
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
		s.Handle(&Route{Method: "PUT", Path: base + "/{vmid}/snapshot/{snapname}/config", Perm: PermCheck("/vms/{vmid}", "VM.Snapshot"), ProxyTo: "node",
			Params: nv(snap(), Str("description").Opt()), Handler: func(r *Request) (any, error) {
				g, err := s.lxcGuest(r)
				if err != nil {
					return nil, err
				}
				return s.withGuestLock(g.VMID, "lxc", func() (any, error) {
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

// lxcGuest loads the container of the request, failing as load_config does.
func (s *Server) lxcGuest(r *Request) (*Guest, error) {
	vmid, _ := r.Int("vmid")
	return s.lxcGuestByID(r.Str("node"), vmid)
}

func (s *Server) lxcGuestByID(node string, vmid int) (*Guest, error) {
	g := s.state.Guests[vmid]
	if g == nil || g.Node != node || g.Type != "lxc" {
		return nil, Fail("Configuration file 'nodes/%s/lxc/%d.conf' does not exist", node, vmid)
	}
	return g, nil
}

// lxcGone is the error of a task whose container vanished meanwhile.
func (s *Server) lxcGone(g *Guest) error {
	if s.state.Guests[g.VMID] != g {
		return Fail("Configuration file 'nodes/%s/lxc/%d.conf' does not exist", g.Node, g.VMID)
	}
	return nil
}

// vmidUnusedErr is PVE::Cluster::check_vmid_unused.
func (s *Server) vmidUnusedErr(vmid int) error {
	if old := s.state.Guests[vmid]; old != nil {
		kind := "VM"
		if old.Type == "lxc" {
			kind = "CT"
		}
		return Fail("%s %d already exists on node '%s'", kind, vmid, old.Node)
	}
	return nil
}

// mountPointType is classify_mountpoint: volume, bind or device.
func mountPointType(volume string) string {
	if strings.HasPrefix(volume, "/") {
		if strings.HasPrefix(volume, "/dev/") {
			return "device"
		}
		return "bind"
	}
	return "volume"
}

// parseLxcVolume parses rootfs, mpN or unusedN.
func parseLxcVolume(key, val string) (map[string]string, error) {
	return parsePropString(lxcVolumeFormat(key), val, key)
}

func printLxcVolume(key string, mp map[string]string) string {
	return printPropStringOrdered(lxcVolumeFormat(key), mp)
}

// checkCTModifyPerm is check_ct_modify_config_perm: the privilege each
// key needs, and the settings only root@pam (logged in with a password,
// not a token) may make. Keys are checked in sorted order (Proxmox walks a
// hash), the new values before the deletions.
func (s *Server) checkCTModifyPerm(user string, vmid int, oldConf, newConf map[string]string, deletes []string, unprivileged bool) error {
	if user == "root@pam" {
		return nil
	}
	vm := "/vms/" + strconv.Itoa(vmid)
	check := func(opt string, del bool) error {
		base, _ := splitIndexed(opt)
		switch {
		case opt == "cores" || opt == "cpuunits" || opt == "cpulimit":
			return s.check(user, vm, "VM.Config.CPU")
		case opt == "rootfs" || base == "mp":
			if err := s.check(user, vm, "VM.Config.Disk"); err != nil || del {
				return err
			}
			mp, err := parseLxcVolume(opt, newConf[opt])
			if err != nil {
				return nil
			}
			if t := mountPointType(mp["volume"]); t != "volume" {
				return permErr("mount point type " + t + " is only allowed for root@pam")
			}
			if m := reLxcNewDisk.FindStringSubmatch(mp["volume"]); m != nil {
				return s.check(user, "/storage/"+m[1], "Datastore.AllocateSpace")
			}
			return s.checkVolumeAccess(user, vmid, mp["volume"], "rootdir")
		case opt == "memory" || opt == "swap":
			return s.check(user, vm, "VM.Config.Memory")
		case base == "net":
			if err := s.check(user, vm, "VM.Config.Network"); err != nil {
				return err
			}
			if old := oldConf[opt]; old != "" {
				if err := s.lxcBridgeAccess(user, old); err != nil {
					return err
				}
			}
			if v := newConf[opt]; v != "" {
				return s.lxcBridgeAccess(user, v)
			}
		case base == "dev":
			return permErr("configuring device passthrough is only allowed for root@pam")
		case opt == "nameserver" || opt == "searchdomain" || opt == "hostname":
			return s.check(user, vm, "VM.Config.Network")
		case opt == "features":
			if !unprivileged {
				return permErr("changing feature flags for privileged container is only allowed for root@pam")
			}
			nesting, other := lxcFeatureChanges(oldConf[opt], newConf[opt], del)
			if other {
				return permErr("changing feature flags (except nesting) is only allowed for root@pam")
			}
			if nesting {
				return s.check(user, vm, "VM.Allocate")
			}
		case opt == "hookscript":
			return permErr("changing the hookscript is only allowed for root@pam")
		default:
			// tags too: assert_tag_permissions needs VM.Config.Options
			// (any tag may be set: user-tag-access is "free" by default).
			return s.check(user, vm, "VM.Config.Options")
		}
		return nil
	}
	for _, opt := range sortedKeys(newConf) {
		if err := check(opt, false); err != nil {
			return err
		}
	}
	for _, opt := range deletes {
		if err := check(opt, true); err != nil {
			return err
		}
	}
	return nil
}

// lxcFeatureChanges says whether a change of the features option changes
// nesting, and whether it changes anything else.
func lxcFeatureChanges(oldVal, newVal string, del bool) (nesting, other bool) {
	only := func(f map[string]string) (bool, bool) {
		_, n := f["nesting"]
		if len(f) == 1 && n {
			return true, false
		}
		return false, len(f) > 0
	}
	if del {
		old, _ := parsePropString(lxcFeaturesFormat, oldVal, "")
		return only(old)
	}
	feats, _ := parsePropString(lxcFeaturesFormat, newVal, "")
	if oldVal == "" {
		return only(feats)
	}
	old, _ := parsePropString(lxcFeaturesFormat, oldVal, "")
	for _, k := range append(sortedKeys(old), sortedKeys(feats)...) {
		if old[k] != feats[k] {
			if k != "nesting" {
				return nesting, true
			}
			nesting = true
		}
	}
	return nesting, false
}

// lxcOSType guesses the ostype from the template name, as the setup code
// detects it from the extracted root file system.
func lxcOSType(template string) string {
	name := template[strings.LastIndex(template, "/")+1:]
	for _, os := range lxcOSTypes {
		if strings.HasPrefix(name, os) {
			return os
		}
	}
	switch {
	case strings.HasPrefix(name, "rockylinux"), strings.HasPrefix(name, "almalinux"):
		return "centos"
	case strings.HasPrefix(name, "arch"):
		return "archlinux"
	}
	return "unmanaged"
}

// lxcArch is the architecture recorded in a template name ("_amd64.").
func lxcArch(template string) string {
	for _, a := range []string{"amd64", "i386", "arm64", "armhf", "riscv64", "riscv32"} {
		if strings.Contains(template, "_"+a+".") {
			return a
		}
	}
	return "amd64"
}

// normaliseLxcNet is parse_lxc_network plus print_lxc_network: a MAC
// address is generated when missing and type=veth is recorded.
func (s *Server) normaliseLxcNet(val string) string {
	n, err := parsePropString(lxcNetFormat, val, "")
	if err != nil {
		return val
	}
	n["type"] = "veth"
	if n["hwaddr"] == "" {
		n["hwaddr"] = s.randomMAC()
	}
	return printPropStringOrdered(lxcNetFormat, n)
}

// lxcPrepareOptions runs the per-option checks of update_pct_config and
// returns the values as they will be stored.
func (s *Server) lxcPrepareOptions(g *Guest, params map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for _, opt := range sortedKeys(params) {
		v := params[opt]
		switch {
		case opt == "rootfs" || isLxcVolumeKey(opt):
			if g != nil && g.Conf["protection"] == "1" {
				return nil, Fail("can't update CT %d drive '%s' - protection mode enabled", g.VMID, opt)
			}
			mp, err := parseLxcVolume(opt, v)
			if err != nil {
				return nil, ParamErr(opt, "invalid format - "+err.Error())
			}
			if mountPointType(mp["volume"]) == "volume" {
				sid, _, _ := strings.Cut(mp["volume"], ":")
				st, err := s.storageConfig(sid)
				if err != nil {
					return nil, err
				}
				if !st.allows("rootdir") {
					return nil, Fail("storage '%s' does not allow content type 'rootdir' (Container)", sid)
				}
			}
		case opt == "nameserver" || opt == "searchdomain":
			v = strings.Join(splitList(v), " ")
		case opt == "unprivileged":
			return nil, Fail("unable to modify read-only option: 'unprivileged'")
		case opt == "tags":
			v = uniqueTags(v)
		case strings.HasPrefix(opt, "net"):
			n, err := parsePropString(lxcNetFormat, v, opt)
			if err != nil {
				return nil, ParamErr(opt, "invalid format - "+err.Error())
			}
			if mtu, _ := strconv.Atoi(n["mtu"]); mtu > 0 {
				if bmtu := s.bridgeMTU(g.nodeOr(""), n["bridge"]); mtu > bmtu {
					return nil, Fail("%s: MTU size '%d' is bigger than bridge MTU '%d'", opt, mtu, bmtu)
				}
			}
			if n["link_down"] != "1" && n["host-managed"] == "1" && n["ip6"] == "auto" {
				return nil, Fail("%s: SLAAC is not supported for host-managed network configuration.", opt)
			}
		case strings.HasPrefix(opt, "dev"):
			d, _ := parsePropString(lxcDevFormat, v, opt)
			if d["path"] == "" {
				return nil, Fail("Path is not defined for passthrough device %s", opt)
			}
		}
		out[opt] = v
	}
	return out, nil
}

func (g *Guest) nodeOr(def string) string {
	if g == nil {
		return def
	}
	return g.Node
}

func (s *Server) lxcList(r *Request) (any, error) {
	node := r.Str("node")
	var ids []int
	for id, g := range s.state.Guests {
		// vmlist: only containers the caller has VM.Audit on.
		if g.Node == node && g.Type == "lxc" && s.can(r.User, "/vms/"+strconv.Itoa(id), "VM.Audit") {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
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
	if t, ok := res["tags"]; ok {
		out["tags"] = t
	}
	if l, ok := res["lock"]; ok {
		out["lock"] = l
	}
	if g.IsTemplate() {
		out["template"] = 1
	}
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

// lxcConfigJSON is GET .../config: pending values merged unless current.
func lxcConfigJSON(g *Guest, current bool) map[string]any {
	conf := copyConf(g.Conf)
	if !current {
		for k, v := range g.Pending {
			conf[k] = v
		}
		for k := range g.PendingDelete {
			delete(conf, k)
		}
	}
	out := make(map[string]any, len(conf)+1)
	for k, v := range conf {
		out[k] = typedValue(lxcKeyType(k), v)
	}
	out["digest"] = g.Digest()
	return out
}

// pendingJSON is PVE::GuestHelpers::config_with_pending_array.
func pendingJSON(g *Guest, keyType func(string) Type, mask func(key, val string) string) []map[string]any {
	keys := map[string]bool{}
	for _, m := range []map[string]string{g.Conf, g.Pending} {
		for k := range m {
			keys[k] = true
		}
	}
	for k := range g.PendingDelete {
		keys[k] = true
	}
	if mask == nil {
		mask = func(_, v string) string { return v }
	}
	out := []map[string]any{}
	for _, k := range sortedKeys(keys) {
		if k == "lock" || k == "parent" {
			// Internal keys are not listed as options.
			if _, ok := g.Pending[k]; !ok {
				continue
			}
		}
		e := map[string]any{"key": k}
		if v, ok := g.Conf[k]; ok {
			e["value"] = typedValue(keyType(k), mask(k, v))
		}
		if v, ok := g.Pending[k]; ok {
			e["pending"] = typedValue(keyType(k), mask(k, v))
		}
		if force, ok := g.PendingDelete[k]; ok {
			if force {
				e["delete"] = 2
			} else {
				e["delete"] = 1
			}
		}
		out = append(out, e)
	}
	return out
}

func (s *Server) lxcGetConfig(r *Request) (any, error) {
	if r.Str("snapshot") != "" && r.Bool("current") {
		msg := "cannot use 'snapshot' parameter with 'current'"
		return nil, ParamError(map[string]string{"snapshot": msg, "current": msg})
	}
	g, err := s.lxcGuest(r)
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
		return lxcConfigJSON(sg, true), nil
	}
	return lxcConfigJSON(g, r.Bool("current")), nil
}

func (s *Server) lxcCreate(r *Request) (any, error) {
	vmid, _ := r.Int("vmid")
	node := r.Str("node")
	if r.Bool("restore") {
		return nil, Fail("unable to restore CT %d - restoring backups is not supported by the simulator", vmid)
	}
	unprivileged := r.BoolOr("unprivileged", true)
	if !unprivileged {
		if err := s.check(r.User, "/", "Sys.Modify"); err != nil {
			return nil, err
		}
	}
	if r.Bool("ha-managed") {
		if err := s.check(r.User, "/", "Sys.Console"); err != nil {
			return nil, err
		}
	}
	if err := s.vmidUnusedErr(vmid); err != nil {
		return nil, err
	}
	if keys, ok := r.Params["ssh-public-keys"]; ok {
		if err := validateSSHKeys(keys); err != nil {
			return nil, err
		}
	}
	// pve-container API2/LXC.pm create_vm: check_pool_exist after the keys.
	if err := s.checkPoolExist(r); err != nil {
		return nil, err
	}
	if pool := r.Str("pool"); !s.can(r.User, "/vms/"+strconv.Itoa(vmid), "VM.Allocate") && !(pool != "" && s.can(r.User, "/pool/"+pool, "VM.Allocate")) {
		return nil, permErr("")
	}
	ostemplate := r.Str("ostemplate")
	storage := r.Str("storage")
	if storage == "" {
		storage = "local"
	}
	params := map[string]string{}
	for k, v := range r.Params {
		switch k {
		case "node", "vmid", "ignore-unpack-errors", "bwlimit", "start", "ha-managed", "unprivileged", "restore",
			"unique", "force", "password", "ssh-public-keys", "pool", "ostemplate", "storage":
			continue
		}
		params[k] = v
	}
	if err := s.checkCTModifyPerm(r.User, vmid, nil, params, nil, unprivileged); err != nil {
		return nil, err
	}
	if ostemplate == "-" {
		return nil, Fail("pipe requires cli environment")
	}
	if storageID, _, isVolume := strings.Cut(ostemplate, ":"); isVolume {
		if _, err := s.storageConfig(storageID); err != nil {
			return nil, err
		}
		vtype, _, err := s.volumeContentType(node, ostemplate)
		if err != nil {
			return nil, err
		}
		if vtype != "vztmpl" {
			return nil, Fail("unable to use volume %s - content type needs to be 'vztmpl'", ostemplate)
		}
		if err := s.checkVolumeAccess(r.User, vmid, ostemplate, "vztmpl"); err != nil {
			return nil, err
		}
	} else if r.User != "root@pam" {
		return nil, Fail("Only root can pass arbitrary filesystem paths.")
	}
	checkStorage := func(sid string) error {
		st, err := s.storageConfig(sid)
		if err != nil {
			return err
		}
		if !st.allows("rootdir") {
			return ParamErr("storage", fmt.Sprintf("storage '%s' does not support container directories", sid))
		}
		return s.check(r.User, "/storage/"+sid, "Datastore.AllocateSpace")
	}
	mpParams := map[string]string{}
	other := map[string]string{}
	for _, k := range sortedKeys(params) {
		v := params[k]
		switch {
		case k == "rootfs" || isLxcVolumeKey(k):
			if regexp.MustCompile(`^\d+(\.\d+)?$`).MatchString(v) {
				v = storage + ":" + v
			} else if mp, err := parseLxcVolume(k, v); err == nil && regexp.MustCompile(`^\d+(\.\d+)?$`).MatchString(mp["volume"]) {
				mp["volume"] = storage + ":" + mp["volume"]
				v = printLxcVolume(k, mp)
			}
			mpParams[k] = v
		case strings.HasPrefix(k, "unused"):
			// Proxmox warns and ignores unused volumes on create.
		default:
			other[k] = v
		}
	}
	if len(mpParams) > 0 && mpParams["rootfs"] == "" {
		return nil, Fail("mount points configured, but 'rootfs' not set - aborting")
	}
	for _, k := range sortedKeys(mpParams) {
		mp, err := parseLxcVolume(k, mpParams[k])
		if err != nil {
			return nil, ParamErr(k, "invalid format - "+err.Error())
		}
		if mountPointType(mp["volume"]) != "volume" {
			if r.User != "root@pam" {
				return nil, Fail("Only root can pass arbitrary filesystem paths.")
			}
			continue
		}
		sid, _, _ := strings.Cut(mp["volume"], ":")
		if err := checkStorage(sid); err != nil {
			return nil, err
		}
	}
	if len(mpParams) == 0 {
		if err := checkStorage(storage); err != nil {
			return nil, err
		}
	}
	prepared, err := s.lxcPrepareOptions(&Guest{VMID: vmid, Node: node}, other)
	if err != nil {
		return nil, err
	}
	conf := map[string]string{}
	for k, v := range prepared {
		if strings.HasPrefix(k, "net") {
			v = s.normaliseLxcNet(v)
		}
		conf[k] = v
	}
	if unprivileged {
		conf["unprivileged"] = "1"
	}
	g := &Guest{VMID: vmid, Node: node, Type: "lxc", Conf: map[string]string{"lock": "create"}}
	g.ensureMaps()
	s.state.Guests[vmid] = g
	start, pool, haAdd := r.Bool("start"), r.Str("pool"), r.Bool("ha-managed")
	storageOnly := len(mpParams) == 0

	return s.startTask(r, node, "vzcreate", strconv.Itoa(vmid), func(tc *taskCtx) error {
		fail := func(err error) error {
			delete(s.state.Guests, vmid)
			return fmt.Errorf("unable to create CT %d - %s", vmid, strings.TrimRight(asAPIError(err).Message, "\n"))
		}
		if err := tc.LockGuest(vmid, "lxc"); err != nil {
			delete(s.state.Guests, vmid)
			return err
		}
		if storageOnly {
			mpParams["rootfs"] = storage + ":4"
		}
		created, err := s.lxcCreateDisks(g, mpParams, conf)
		if err != nil {
			return fail(err)
		}
		g.Creating = created
		removeCreated := func() {
			for _, volid := range created {
				s.state.removeVolume(node, volid)
			}
		}
		if tv := s.state.volume(node, ostemplate); tv == nil && strings.Contains(ostemplate, ":") {
			removeCreated()
			return fail(Fail("can't find file '%s'", ostemplate))
		}
		tc.Log("extracting archive '%s'", ostemplate)
		if err := tc.Sleep(durCTCreate); err != nil {
			removeCreated()
			return fail(err)
		}
		tc.Log("Total bytes read: %d (%s)", 150<<20, "150MiB")
		if conf["ostype"] == "" {
			conf["ostype"] = lxcOSType(ostemplate)
		}
		if conf["arch"] == "" {
			conf["arch"] = lxcArch(ostemplate)
		}
		tc.Log("Detected container architecture: %s", conf["arch"])
		if conf["hostname"] == "" {
			conf["hostname"] = "CT" + strconv.Itoa(vmid)
		}
		if conf["memory"] == "" || conf["memory"] == "0" {
			conf["memory"] = "512"
		}
		if _, ok := conf["swap"]; !ok {
			conf["swap"] = "512"
		}
		g.Conf = conf
		g.Creating = nil
		s.state.addVMToPool(vmid, pool)
		if start {
			// Proxmox starts the container through the start API, in a
			// task of its own: the create itself succeeds.
			if err := s.lxcCheckBridges(tc, g); err != nil {
				tc.Log("%s", asAPIError(err).Message)
			} else {
				g.Running = true
				g.StartedAt = s.clock.Now()
			}
		}
		if haAdd {
			s.haAddAfterCreate(tc, g, start, true)
		}
		return nil
	}), nil
}

// lxcCreateDisks is create_disks: new volumes for "storage:size" mount
// points; existing volumes and bind mounts are recorded as given. It
// writes the mount points into conf and returns the new volume ids.
func (s *Server) lxcCreateDisks(g *Guest, mps map[string]string, conf map[string]string) ([]string, error) {
	var created []string
	for _, k := range lxcVolumeKeys() {
		if _, ok := mps[k]; !ok {
			continue
		}
		mp, err := parseLxcVolume(k, mps[k])
		if err != nil {
			return created, err
		}
		if m := reLxcNewDisk.FindStringSubmatch(mp["volume"]); m != nil && mountPointType(mp["volume"]) == "volume" {
			gb, _ := strconv.ParseFloat(m[2], 64)
			sizeKB := int64(gb*1024) * 1024
			v, err := s.lxcAllocDisk(g.Node, m[1], g.VMID, sizeKB*1024)
			if err != nil {
				for _, volid := range created {
					s.state.removeVolume(g.Node, volid)
				}
				return nil, err
			}
			created = append(created, v.VolID())
			mp["volume"] = v.VolID()
			mp["size"] = FormatSize(sizeKB * 1024)
		}
		conf[k] = printLxcVolume(k, mp)
	}
	return created, nil
}

// lxcAllocDisk is alloc_disk: a raw image, or a subvolume for size 0 on
// a directory storage.
func (s *Server) lxcAllocDisk(node, storage string, vmid int, size int64) (*Volume, error) {
	st, err := s.storageConfig(storage)
	if err != nil {
		return nil, err
	}
	if !st.allows("rootdir") {
		return nil, Fail("content type 'rootdir' is not available or configured on storage '%s'", storage)
	}
	if size == 0 {
		if !st.fileBased() {
			return nil, Fail("unable to allocate an empty volume on storage '%s' (type %s)", storage, st.Type)
		}
		name := fmt.Sprintf("subvol-%d-disk-%d", vmid, s.lxcFreeIndex(node, st, vmid))
		v, err := s.allocImage(node, storage, vmid, 0, "subvol", name+".subvol")
		if v != nil {
			v.Content = "rootdir"
		}
		return v, err
	}
	v, err := s.allocImage(node, storage, vmid, size, "raw", "")
	if v != nil {
		v.Content = "rootdir"
	}
	return v, err
}

func (s *Server) lxcFreeIndex(node string, st *Storage, vmid int) int {
	used := map[string]bool{}
	for _, v := range s.state.volumesOn(node, st.ID) {
		used[v.Name] = true
	}
	for i := 0; ; i++ {
		if !used[fmt.Sprintf("%d/subvol-%d-disk-%d.subvol", vmid, vmid, i)] && !used[fmt.Sprintf("%d/vm-%d-disk-%d.raw", vmid, vmid, i)] {
			return i
		}
	}
}

// lxcUpdate is PUT .../config (update_vm): synchronous, under the lock.
func (s *Server) lxcUpdate(r *Request) (any, error) {
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	params := map[string]string{}
	for k, v := range r.Params {
		switch k {
		case "node", "vmid", "digest", "delete", "revert":
			continue
		}
		params[k] = v
	}
	if len(params) == 0 && !r.Has("delete") && !r.Has("revert") {
		return nil, Fail("no options specified")
	}
	deletes := splitList(r.Str("delete"))
	reverts := splitList(r.Str("revert"))
	digest := r.Str("digest")
	return s.withGuestLock(g.VMID, "lxc", func() (any, error) {
		if err := checkLock(g); err != nil {
			return nil, err
		}
		if digest != "" && digest != g.Digest() {
			return nil, Fail("detected modified configuration - file changed by other user? Try again.")
		}
		unpriv := g.Conf["unprivileged"] == "1"
		if err := s.checkCTModifyPerm(r.User, g.VMID, g.Conf, nil, append(append([]string(nil), deletes...), reverts...), unpriv); err != nil {
			return nil, err
		}
		for _, opt := range reverts {
			if lxcConfigTypes.Lookup(opt) == nil {
				return nil, ParamErr("revert", fmt.Sprintf("unknown option '%s'", opt))
			}
			if _, ok := params[opt]; ok {
				return nil, ParamErr("revert", fmt.Sprintf("you can't use '-%s' and '-revert %s' at the same time", opt, opt))
			}
		}
		for _, opt := range deletes {
			if lxcConfigTypes.Lookup(opt) == nil {
				return nil, ParamErr("delete", fmt.Sprintf("unknown option '%s'", opt))
			}
			if _, ok := params[opt]; ok {
				return nil, ParamErr("delete", fmt.Sprintf("you can't use '-%s' and -delete %s' at the same time", opt, opt))
			}
			for _, rv := range reverts {
				if rv == opt {
					return nil, ParamErr("delete", fmt.Sprintf("you can't use '-delete %s' and '-revert %s' at the same time", opt, opt))
				}
			}
		}
		if err := s.checkCTModifyPerm(r.User, g.VMID, g.Conf, params, nil, unpriv); err != nil {
			return nil, err
		}
		errs, err := s.lxcUpdateConfig(g, params, deletes, reverts)
		if err != nil {
			return nil, err
		}
		if len(errs) > 0 {
			return nil, ParamError(errs)
		}
		return nil, nil
	})
}

// lxcUpdateConfig is update_pct_config: record the changes as pending,
// then hot-plug them (running) or apply them (stopped).
func (s *Server) lxcUpdateConfig(g *Guest, params map[string]string, deletes, reverts []string) (map[string]string, error) {
	for _, opt := range reverts {
		delete(g.Pending, opt)
		delete(g.PendingDelete, opt)
	}
	modified := map[string]bool{}
	for _, opt := range deletes {
		_, cur := g.Conf[opt]
		_, pend := g.Pending[opt]
		if !cur && !pend {
			continue // Proxmox warns: cannot delete '...' - not set in current configuration!
		}
		modified[opt] = true
		switch {
		case opt == "memory" || opt == "rootfs" || opt == "ostype":
			return nil, Fail("unable to delete required option '%s'", opt)
		case strings.HasPrefix(opt, "unused") || isLxcVolumeKey(opt):
			if g.Conf["protection"] == "1" {
				return nil, Fail("can't remove CT %d drive '%s' - protection mode enabled", g.VMID, opt)
			}
		case opt == "unprivileged":
			return nil, Fail("unable to delete read-only option: '%s'", opt)
		}
		g.PendingDelete[opt] = false
	}
	prepared, err := s.lxcPrepareOptions(g, params)
	if err != nil {
		return nil, err
	}
	for opt, v := range prepared {
		modified[opt] = true
		g.Pending[opt] = v
		delete(g.PendingDelete, opt)
	}
	cleanupPending(g)
	errs := map[string]string{}
	if g.Running {
		s.lxcHotplugPending(g, modified, errs)
	} else {
		s.lxcApplyPending(g, modified, errs)
	}
	return errs, nil
}

// lxcFastplug are the options a running container takes at once.
var lxcFastplug = map[string]bool{
	"description": true, "onboot": true, "startup": true, "protection": true, "hostname": true,
	"hookscript": true, "cores": true, "tags": true, "lock": true,
}

// lxcHotplugPending is vmconfig_hotplug_pending: what cgroups and veth
// devices allow is changed live, the rest stays pending until restart.
func (s *Server) lxcHotplugPending(g *Guest, selection map[string]bool, errs map[string]string) {
	sel := func(opt string) bool { return selection == nil || selection[opt] }
	for _, opt := range sortedKeys(g.Pending) {
		if sel(opt) && lxcFastplug[opt] {
			g.Conf[opt] = g.Pending[opt]
			delete(g.Pending, opt)
		}
	}
	for _, opt := range sortedKeys(g.PendingDelete) {
		if !sel(opt) {
			continue
		}
		apply := false
		switch {
		case lxcFastplug[opt], opt == "swap", opt == "cpulimit", opt == "cpuunits":
			apply = true
		case strings.HasPrefix(opt, "unused"):
			if !lxcVolumeInUse(g, g.Conf[opt]) {
				s.state.removeVolume(g.Node, g.Conf[opt])
			}
			apply = true
		case strings.HasPrefix(opt, "net"):
			apply = true
		}
		if apply {
			delete(g.Conf, opt)
			delete(g.PendingDelete, opt)
		}
	}
	for _, opt := range sortedKeys(g.Pending) {
		if !sel(opt) {
			continue
		}
		v := g.Pending[opt]
		apply := false
		switch {
		case opt == "cpulimit", opt == "cpuunits", opt == "memory", opt == "swap":
			apply = true
		case strings.HasPrefix(opt, "net"):
			if b := netBridge(v); b != "" && !s.bridgeExists(g.Node, b) {
				errs[opt] = fmt.Sprintf("unable to hotplug %s: bridge '%s' does not exist", opt, b)
				continue
			}
			v = s.normaliseLxcNet(v)
			apply = true
		case isLxcVolumeKey(opt) && opt != "rootfs":
			if _, exists := g.Conf[opt]; exists {
				continue
			}
			nv, err := s.lxcApplyPendingMountPoint(g, opt)
			if err != nil {
				errs[opt] = "unable to hotplug " + opt + ": " + strings.TrimRight(asAPIError(err).Message, "\n")
				continue
			}
			v = nv
			apply = true
		case strings.HasPrefix(opt, "dev"):
			_, exists := g.Conf[opt]
			apply = !exists
		}
		if apply {
			g.Conf[opt] = v
			delete(g.Pending, opt)
		}
	}
}

func netBridge(v string) string {
	n, err := parsePropString(lxcNetFormat, v, "")
	if err != nil {
		return ""
	}
	return n["bridge"]
}

// lxcApplyPending is vmconfig_apply_pending for a stopped container.
func (s *Server) lxcApplyPending(g *Guest, selection map[string]bool, errs map[string]string) {
	sel := func(opt string) bool { return selection == nil || selection[opt] }
	for _, opt := range sortedKeys(g.PendingDelete) {
		if !sel(opt) {
			continue
		}
		switch {
		case isLxcVolumeKey(opt) && opt != "rootfs":
			if mp, err := parseLxcVolume(opt, g.Conf[opt]); err == nil && mountPointType(mp["volume"]) == "volume" {
				old := g.Conf[opt]
				delete(g.Conf, opt)
				if !lxcVolumeInUse(g, mp["volume"]) {
					addUnusedVolume(g.Conf, mp["volume"])
				}
				g.Conf[opt] = old
			}
		case strings.HasPrefix(opt, "unused"):
			volid := g.Conf[opt]
			delete(g.Conf, opt)
			if !lxcVolumeInUse(g, volid) {
				s.state.removeVolume(g.Node, volid)
			}
		}
		delete(g.Conf, opt)
		delete(g.PendingDelete, opt)
	}
	cleanupPending(g)
	for _, opt := range sortedKeys(g.Pending) {
		if !sel(opt) {
			continue
		}
		v := g.Pending[opt]
		switch {
		case isLxcVolumeKey(opt) && opt != "rootfs":
			nv, err := s.lxcApplyPendingMountPoint(g, opt)
			if err != nil {
				errs[opt] = "unable to apply pending change " + opt + " : " + strings.TrimRight(asAPIError(err).Message, "\n")
				continue
			}
			v = nv
		case strings.HasPrefix(opt, "net"):
			v = s.normaliseLxcNet(v)
		}
		g.Conf[opt] = v
		delete(g.Pending, opt)
	}
}

// lxcApplyPendingMountPoint is apply_pending_mountpoint: allocate a new
// volume for "storage:size", record the size of an existing one, and turn
// a replaced volume into an unused one. It returns the value to store.
func (s *Server) lxcApplyPendingMountPoint(g *Guest, opt string) (string, error) {
	mp, err := parseLxcVolume(opt, g.Pending[opt])
	if err != nil {
		return "", err
	}
	if mountPointType(mp["volume"]) == "volume" {
		if m := reLxcNewDisk.FindStringSubmatch(mp["volume"]); m != nil {
			gb, _ := strconv.ParseFloat(m[2], 64)
			size := int64(gb*1024) * 1024 * 1024
			v, err := s.lxcAllocDisk(g.Node, m[1], g.VMID, size)
			if err != nil {
				return "", err
			}
			mp["volume"] = v.VolID()
			mp["size"] = FormatSize(size)
		} else if v := s.state.volume(g.Node, mp["volume"]); v != nil {
			mp["size"] = FormatSize(v.Size)
		}
	}
	if old, ok := g.Conf[opt]; ok {
		if om, err := parseLxcVolume(opt, old); err == nil && mountPointType(om["volume"]) == "volume" && om["volume"] != mp["volume"] {
			addUnusedVolume(g.Conf, om["volume"])
		}
	}
	return printLxcVolume(opt, mp), nil
}

var reSubvol = regexp.MustCompile(`(?:^|/)subvol-(\d+)-disk-\d+`)

// lxcVolumeOwner is the owner vmid parse_volname finds in a volume id.
func lxcVolumeOwner(volid string) int {
	_, name, _ := strings.Cut(volid, ":")
	if m := reSubvol.FindStringSubmatch(name); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return volumeVMID(name)
}

// lxcVolumeInUse says whether a volume is mounted by the config or a snapshot.
func lxcVolumeInUse(g *Guest, volid string) bool {
	confs := []map[string]string{g.Conf}
	for _, sn := range g.Snapshots {
		confs = append(confs, sn.Conf)
	}
	for _, conf := range confs {
		for k, v := range conf {
			if !isLxcVolumeKey(k) {
				continue
			}
			if mp, err := parseLxcVolume(k, v); err == nil && mp["volume"] == volid {
				return true
			}
		}
	}
	return false
}

// lxcVolumes lists the storage volumes a config references (mount points and unused).
func lxcVolumes(conf map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(conf) {
		switch {
		case isLxcVolumeKey(k):
			if mp, err := parseLxcVolume(k, conf[k]); err == nil && mountPointType(mp["volume"]) == "volume" {
				out = append(out, mp["volume"])
			}
		case strings.HasPrefix(k, "unused"):
			out = append(out, conf[k])
		}
	}
	return out
}

// lxcCheckBridges fails a start when a NIC's bridge is missing on the
// node: the lxcnetaddbr hook dies with "bridge '...' does not exist", the
// container stops during startup and vm_start reports that.
func (s *Server) lxcCheckBridges(tc *taskCtx, g *Guest) error {
	for i := 0; i < lxcMaxNetworks; i++ {
		k := "net" + strconv.Itoa(i)
		v, ok := g.Conf[k]
		if !ok {
			continue
		}
		if b := netBridge(v); b != "" && !s.bridgeExists(g.Node, b) {
			tc.Log("bridge '%s' does not exist", b)
			return Fail("startup for container '%d' failed", g.VMID)
		}
	}
	return nil
}

func (s *Server) lxcStart(r *Request) (any, error) {
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	if err := s.rootOnly(r, "skiplock"); err != nil {
		return nil, err
	}
	if g.Running {
		return nil, Fail("CT %d already running", g.VMID)
	}
	skiplock := r.Bool("skiplock")
	if s.haManaged(g) {
		return s.haPowerRequest(r, g, false, 0), nil
	}
	return s.startTask(r, g.Node, "vzstart", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		return s.lxcStartGuest(tc, g, skiplock)
	}), nil
}

// lxcStartGuest is the vzstart worker: under the config lock, apply
// pending changes and start the container, which fails on a missing bridge.
func (s *Server) lxcStartGuest(tc *taskCtx, g *Guest, skiplock bool) error {
	if err := tc.LockGuest(g.VMID, "lxc"); err != nil {
		return err
	}
	if err := s.lxcGone(g); err != nil {
		return err
	}
	if g.IsTemplate() {
		return Fail("you can't start a CT if it's a template")
	}
	if !skiplock {
		if err := checkLock(g); err != nil {
			return err
		}
	}
	if g.Running {
		return Fail("CT %d already running", g.VMID)
	}
	if err := tc.Sleep(durCTStart); err != nil {
		return err
	}
	errs := map[string]string{}
	s.lxcApplyPending(g, nil, errs)
	if err := s.lxcCheckBridges(tc, g); err != nil {
		return err
	}
	g.Running = true
	g.StartedAt = s.clock.Now()
	return nil
}

func (s *Server) lxcStop(r *Request, typ string) (any, error) {
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	if err := s.rootOnly(r, "skiplock"); err != nil {
		return nil, err
	}
	if !g.Running {
		return nil, Fail("CT %d not running", g.VMID)
	}
	skiplock := r.Bool("skiplock")
	if s.haManaged(g) {
		if typ == "vzshutdown" {
			return s.haPowerRequest(r, g, true, r.IntOr("timeout", 60)), nil
		}
		if r.Bool("overrule-shutdown") {
			return nil, ParamErr("overrule-shutdown", "Not applicable for HA resources.")
		}
		return s.haPowerRequest(r, g, true, 0), nil
	}
	return s.startTask(r, g.Node, typ, strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		return s.stopGuest(tc, g, typ == "vzshutdown", skiplock)
	}), nil
}

func (s *Server) lxcReboot(r *Request) (any, error) {
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	if !g.Running {
		// pve-container says "VM" here.
		return nil, Fail("VM %d not running", g.VMID)
	}
	return s.startTask(r, g.Node, "vzreboot", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.LockGuest(g.VMID, "lxc"); err != nil {
			return err
		}
		if err := checkLock(g); err != nil {
			return err
		}
		if err := tc.Sleep(durCTShutdown + durCTStart); err != nil {
			return err
		}
		s.lxcApplyPending(g, nil, map[string]string{})
		if err := s.lxcCheckBridges(tc, g); err != nil {
			g.Running = false
			return err
		}
		g.Running = true
		g.StartedAt = s.clock.Now()
		return nil
	}), nil
}

func (s *Server) lxcResize(r *Request) (any, error) {
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	disk, digest := r.Str("disk"), r.Str("digest")
	sizeStr := r.Str("size")
	grow := strings.HasPrefix(sizeStr, "+")
	req, ok := ParseSize(strings.TrimPrefix(sizeStr, "+"))
	if !ok {
		return nil, Fail("invalid size string")
	}
	check := func() (*Volume, map[string]string, int64, error) {
		if err := checkLock(g); err != nil {
			return nil, nil, 0, err
		}
		if digest != "" && digest != g.Digest() {
			return nil, nil, 0, Fail("detected modified configuration - file changed by other user? Try again.")
		}
		mp, err := parseLxcVolume(disk, g.Conf[disk])
		if err != nil || mountPointType(mp["volume"]) != "volume" {
			return nil, nil, 0, Fail("unable to parse volume ID '%s'", mp["volume"])
		}
		if owner := lxcVolumeOwner(mp["volume"]); owner != g.VMID {
			return nil, nil, 0, Fail("can't resize mount point owned by another container (%d)", owner)
		}
		// resize_vm: space on the volume's storage.
		if err := s.check(r.User, "/storage/"+storageOfVolume(mp["volume"]), "Datastore.AllocateSpace"); err != nil {
			return nil, nil, 0, err
		}
		v := s.state.volume(g.Node, mp["volume"])
		if v == nil {
			return nil, nil, 0, Fail("Could not determine current size of volume '%s'", mp["volume"])
		}
		newSize := req
		if grow {
			newSize += v.Size
		}
		if newSize < v.Size {
			return nil, nil, 0, Fail("unable to shrink disk size")
		}
		if newSize == v.Size {
			return nil, nil, 0, Fail("disk is already at specified size")
		}
		return v, mp, newSize, nil
	}
	if _, _, _, err := check(); err != nil {
		return nil, err
	}
	return s.startTask(r, g.Node, "resize", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.LockGuest(g.VMID, "lxc"); err != nil {
			return err
		}
		if err := s.lxcGone(g); err != nil {
			return err
		}
		v, mp, newSize, err := check()
		if err != nil {
			return err
		}
		if err := tc.Sleep(durCTResize); err != nil {
			return err
		}
		v.Size = newSize
		mp["size"] = FormatSize(newSize)
		g.Conf[disk] = printLxcVolume(disk, mp)
		tc.Log("Resizing image: %s", v.VolID())
		return nil
	}), nil
}

func (s *Server) lxcTemplate(r *Request) (any, error) {
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	_, err = s.withGuestLock(g.VMID, "lxc", func() (any, error) {
		if err := checkLock(g); err != nil {
			return nil, err
		}
		if len(g.Snapshots) > 0 {
			return nil, Fail("unable to create template, because CT contains snapshots")
		}
		if g.IsTemplate() {
			return nil, Fail("you can't convert a template to a template")
		}
		if g.Running {
			return nil, Fail("you can't convert a CT to template if the CT is running")
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	// Proxmox forks the worker but answers null, not its UPID.
	s.startTask(r, g.Node, "vztemplate", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.LockGuest(g.VMID, "lxc"); err != nil {
			return err
		}
		if err := tc.Sleep(durCTTemplate); err != nil {
			return err
		}
		for _, k := range sortedKeys(g.Conf) {
			if !isLxcVolumeKey(k) {
				continue
			}
			mp, err := parseLxcVolume(k, g.Conf[k])
			if err != nil || mountPointType(mp["volume"]) != "volume" {
				continue
			}
			v := s.state.volume(g.Node, mp["volume"])
			if v == nil || !strings.Contains(v.Name, "vm-") {
				continue
			}
			mp["volume"] = s.renameToBase(g.Node, v)
			g.Conf[k] = printLxcVolume(k, mp)
		}
		g.Conf["template"] = "1"
		return nil
	})
	return nil, nil
}

func (s *Server) lxcClone(r *Request) (any, error) {
	// pve-container API2/LXC.pm clone_vm checks the pool before reading
	// the source's config.
	if err := s.checkPoolExist(r); err != nil {
		return nil, err
	}
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	newid, _ := r.Int("newid")
	storage, target, snapname, pool := r.Str("storage"), r.Str("target"), r.Str("snapname"), r.Str("pool")
	if target == g.Node || target == "localhost" {
		target = ""
	}
	if target != "" && s.state.node(target) == nil {
		return nil, Fail("no such cluster node '%s'", target)
	}
	if storage != "" {
		st, err := s.storageConfig(storage)
		if err != nil {
			return nil, err
		}
		if target != "" && !st.Shared {
			return nil, Fail("can't clone to non-shared storage '%s'", storage)
		}
	}
	if err := checkLock(g); err != nil {
		return nil, err
	}
	if err := s.vmidUnusedErr(newid); err != nil {
		return nil, err
	}
	full := r.BoolOr("full", !g.IsTemplate())
	if storage != "" && !full {
		return nil, Fail("parameter 'storage' not allowed for linked clones")
	}
	if snapname != "" && g.Snapshots[snapname] == nil {
		return nil, Fail("snapshot '%s' does not exist", snapname)
	}
	src := g.Conf
	if snapname != "" {
		src = g.Snapshots[snapname].Conf
	}
	shared := true
	newConf := map[string]string{}
	mounts := map[string]map[string]string{}
	for _, k := range sortedKeys(src) {
		v := src[k]
		switch {
		case strings.HasPrefix(k, "unused"):
		case isLxcVolumeKey(k):
			mp, err := parseLxcVolume(k, v)
			if err != nil {
				return nil, Fail("unable to parse mount point '%s'", k)
			}
			if t := mountPointType(mp["volume"]); t != "volume" {
				return nil, Fail("unable to clone mountpoint '%s' (type %s)", k, t)
			}
			sid, _, _ := strings.Cut(mp["volume"], ":")
			if storage != "" {
				sid = storage
			}
			if st := s.state.storage(sid); st == nil || !st.Shared {
				shared = false
			}
			if err := s.check(r.User, "/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
				return nil, err
			}
			if full {
				if g.Running && snapname == "" {
					return nil, Fail("Full clone of a running container is only possible from a snapshot")
				}
			} else if sv := s.state.volume(g.Node, mp["volume"]); sv == nil || !strings.Contains(sv.Name, "base-") {
				return nil, Fail("Linked clone feature for '%s' is not available", mp["volume"])
			}
			mounts[k] = mp
		case strings.HasPrefix(k, "net"):
			if n, err := parsePropString(lxcNetFormat, v, ""); err == nil {
				n["hwaddr"] = s.randomMAC()
				newConf[k] = printPropStringOrdered(lxcNetFormat, n)
				if err := s.lxcBridgeAccess(r.User, newConf[k]); err != nil {
					return nil, err
				}
			}
		case k == "parent" || k == "snaptime" || k == "snapstate" || k == "template" || k == "lock":
		default:
			newConf[k] = v
		}
	}
	if target != "" && !shared {
		return nil, Fail("can't clone CT to node '%s' (CT uses local storage)", target)
	}
	if h := r.Str("hostname"); h != "" {
		newConf["hostname"] = h
	}
	if d := r.Str("description"); d != "" {
		newConf["description"] = d
	}
	newConf["lock"] = "create"
	ng := &Guest{VMID: newid, Node: g.Node, Type: "lxc", Conf: newConf}
	ng.ensureMaps()
	s.state.Guests[newid] = ng
	g.Conf["lock"] = "disk"
	upid := s.startTask(r, g.Node, "vzclone", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		tc.Log("creating a clone of container %d with ID %d", g.VMID, newid)
		var created []string
		cleanup := func(err error) error {
			delete(g.Conf, "lock")
			for _, volid := range created {
				s.state.removeVolume(g.Node, volid)
			}
			delete(s.state.Guests, newid)
			return fmt.Errorf("clone failed: %s", strings.TrimRight(asAPIError(err).Message, "\n"))
		}
		var bytes int64
		for _, k := range sortedKeys(mounts) {
			mp := mounts[k]
			sv := s.state.volume(g.Node, mp["volume"])
			if sv == nil {
				return cleanup(Fail("volume '%s' does not exist", mp["volume"]))
			}
			dst := sv.Storage
			if storage != "" {
				dst = storage
			}
			var nv *Volume
			var err error
			if full {
				tc.Log("create full clone of mountpoint %s (%s)", k, sv.VolID())
				bytes += sv.Size
				nv, err = s.lxcAllocDisk(g.Node, dst, newid, sv.Size)
			} else {
				tc.Log("create linked clone of mount point %s (%s)", k, sv.VolID())
				nv, err = s.allocImage(g.Node, dst, newid, sv.Size, sv.Format, "")
				if nv != nil {
					nv.Parent = sv.VolID()
					nv.Content = "rootdir"
				}
			}
			if err != nil {
				return cleanup(err)
			}
			created = append(created, nv.VolID())
			mp["volume"] = nv.VolID()
			ng.Conf[k] = printLxcVolume(k, mp)
		}
		if err := tc.Sleep(durCTClone + time.Duration(float64(bytes)/importRate*float64(time.Second))); err != nil {
			return cleanup(err)
		}
		s.state.addVMToPool(newid, pool)
		delete(g.Conf, "lock")
		delete(ng.Conf, "lock")
		if target != "" {
			ng.Node = target
		}
		return nil
	})
	s.setTaskTarget(upid, newid)
	return upid, nil
}

func (s *Server) lxcDestroy(r *Request) (any, error) {
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	force, purgeUnref, purge := r.Bool("force"), r.Bool("destroy-unreferenced-disks"), r.Bool("purge")
	early := func() error {
		if g.Conf["protection"] == "1" {
			return Fail("can't remove CT %d - protection mode enabled", g.VMID)
		}
		if err := checkLock(g); err != nil {
			return err
		}
		if !purge && s.haConfigured(haSID(g)) {
			return Fail("unable to remove CT %d - used in HA resources and purge parameter not set.", g.VMID)
		}
		if g.Running && !force {
			return Fail("unable to destroy CT %d - container is running", g.VMID)
		}
		return nil
	}
	if err := early(); err != nil {
		return nil, err
	}
	return s.startTask(r, g.Node, "vzdestroy", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.LockGuest(g.VMID, "lxc"); err != nil {
			return err
		}
		if err := s.lxcGone(g); err != nil {
			return err
		}
		if err := early(); err != nil {
			return err
		}
		vols := lxcVolumes(g.Conf)
		for _, sn := range g.Snapshots {
			vols = append(vols, lxcVolumes(sn.Conf)...)
		}
		for _, volid := range vols {
			if s.linkedChildren(volid) > 0 {
				return Fail("base volume '%s' is still in use by linked cloned", volid)
			}
		}
		if g.Running {
			tc.Log("forced to stop CT %d before destroying!", g.VMID)
			if sid := haSID(g); s.haConfigured(sid) {
				// ha-manager crm-command stop ct:ID 120; the destroy goes on.
				s.ha().Commands = append(s.ha().Commands, "stop "+sid+" 120")
			}
			g.Running = false
		}
		if err := tc.Sleep(durCTDestroy); err != nil {
			return err
		}
		for _, volid := range vols {
			if v := s.state.volume(g.Node, volid); v != nil && v.VMID == g.VMID {
				s.state.removeVolume(g.Node, volid)
				tc.Log("Removed volume '%s'", volid)
			}
		}
		if purgeUnref {
			for _, v := range append([]*Volume(nil), s.state.Volumes...) {
				if v.VMID == g.VMID && (v.Content == "images" || v.Content == "rootdir") && (v.Node == "" || v.Node == g.Node) {
					s.state.removeVolume(g.Node, v.VolID())
				}
			}
		}
		s.purgeGuest(tc, g, purge)
		delete(s.state.Guests, g.VMID)
		// destroy_vm: remove_vm_access takes the container out of its pool.
		s.state.removeVMAccess(g.VMID)
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
