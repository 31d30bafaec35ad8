package pvesim

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Containers (pve-container): the routes and what only containers need
// (mount points, features, OS type, volume ownership). The verbs live in the
// guest_*.go files beside the QEMU ones.

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
		nv := func(extra ...*route.Param) *route.Params {
			return route.NewParams(append([]*route.Param{pNode(), pVMID()}, extra...)...)
		}
		snap := func() *route.Param { return route.Str("snapname").MaxLen(40).Fmt("pve-configid") }
		base := "/nodes/{node}/lxc"
		s.Handle(&route.Route{Method: "GET", Path: base, Perm: route.PermUser(), ProxyTo: "node", Params: route.NewParams(pNode()), Handler: s.lxcList})
		s.Handle(&route.Route{Method: "POST", Path: base, Perm: route.PermUser(), ProxyTo: "node", Params: lxcCreateParams(), Handler: s.lxcCreate})
		s.Handle(&route.Route{Method: "GET", Path: base + "/{vmid}", Perm: route.PermUser(), ProxyTo: "node", Params: nv(),
			Handler: func(r *route.Request) (any, error) {
				if _, err := s.lxcGuest(r); err != nil {
					return nil, err
				}
				return subdirs("config", "status", "vncproxy", "termproxy", "vncwebsocket", "spiceproxy", "migrate", "clone", "rrd", "firewall", "snapshot", "resize", "move_volume", "pending", "template", "feature", "interfaces", "remote_migrate", "mtunnel", "mtunnelwebsocket"), nil
			}})
		s.Handle(&route.Route{Method: "DELETE", Path: base + "/{vmid}", Perm: route.PermCheck("/vms/{vmid}", "VM.Allocate"), ProxyTo: "node",
			Params:  nv(route.Bool("destroy-unreferenced-disks").Opt(), route.Bool("force").Opt().Default("0"), route.Bool("purge").Opt().Default("0")),
			Handler: s.onGuest(s.lxcGuest, s.lxcDestroy)})
		s.Handle(&route.Route{Method: "GET", Path: base + "/{vmid}/config", Perm: route.PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node",
			Params:  nv(route.Bool("current").Opt().Default("0"), route.Str("snapshot").Opt().MaxLen(40).Fmt("pve-configid")),
			Handler: s.lxcGetConfig})
		s.Handle(&route.Route{Method: "PUT", Path: base + "/{vmid}/config", Perm: route.PermAny("/vms/{vmid}", "VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options"), ProxyTo: "node", Params: lxcUpdateParams(), Handler: s.onGuest(s.lxcGuest, s.lxcUpdate)})
		s.Handle(&route.Route{Method: "GET", Path: base + "/{vmid}/pending", Perm: route.PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node", Params: nv(),
			Handler: func(r *route.Request) (any, error) {
				g, err := s.lxcGuest(r)
				if err != nil {
					return nil, err
				}
				return pendingJSON(g, lxcKeyType, nil, []string{"lock", "parent"}), nil // internal keys are not listed as options
			}})
		s.Handle(&route.Route{Method: "PUT", Path: base + "/{vmid}/resize", Perm: route.PermAny("/vms/{vmid}", "VM.Config.Disk"), ProxyTo: "node",
			Params:  nv(route.Str("disk").Enum(lxcVolumeKeys()...), route.Str("size").Pattern(`\+?\d+(\.\d+)?[KMGT]?`), route.Str("digest").Opt().MaxLen(40)),
			Handler: s.onGuest(s.lxcGuest, s.lxcResize)})
		s.Handle(&route.Route{Method: "POST", Path: base + "/{vmid}/template", Perm: route.PermCheck("/vms/{vmid}", "VM.Allocate"), ProxyTo: "node", Params: nv(), Handler: s.onGuest(s.lxcGuest, s.lxcTemplate)})
		s.Handle(&route.Route{Method: "POST", Path: base + "/{vmid}/clone", Perm: route.PermAnd(route.PermCheck("/vms/{vmid}", "VM.Clone"), route.PermOr(route.PermCheck("/vms/{newid}", "VM.Allocate"), route.PermCheck("/pool/{pool}", "VM.Allocate").RequireParam("pool"))), ProxyTo: "node",
			Params: nv(
				route.Int("newid").Fmt("pve-vmid").Min(100).Max(999999999),
				route.Num("bwlimit").Opt().Min(0),
				route.Str("description").Opt(),
				route.Bool("full").Opt(),
				route.Str("hostname").Opt().Fmt("dns-name"),
				route.Str("pool").Opt().Fmt("pve-poolid"),
				route.Str("snapname").Opt().MaxLen(40).Fmt("pve-configid"),
				route.Str("storage").Opt().Fmt("pve-storage-id"),
				route.Str("target").Opt().Fmt("pve-node"),
			),
			Handler: s.lxcClone})
		s.Handle(&route.Route{Method: "GET", Path: base + "/{vmid}/status", Perm: route.PermUser(), ProxyTo: "node", Params: nv(),
			Handler: func(r *route.Request) (any, error) {
				if _, err := s.lxcGuest(r); err != nil {
					return nil, err
				}
				return subdirs("current", "start", "stop", "shutdown", "reboot", "suspend", "resume"), nil
			}})
		s.Handle(&route.Route{Method: "GET", Path: base + "/{vmid}/status/current", Perm: route.PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node", Params: nv(), Handler: s.onGuest(s.lxcGuest, s.lxcStatusCurrent)})
		s.Handle(&route.Route{Method: "POST", Path: base + "/{vmid}/status/start", Perm: route.PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params: nv(route.Bool("debug").Opt().Default("0"), route.Bool("skiplock").Opt()), Handler: s.onGuest(s.lxcGuestSkiplock, s.lxcStart)})
		s.Handle(&route.Route{Method: "POST", Path: base + "/{vmid}/status/stop", Perm: route.PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params:  nv(route.Bool("overrule-shutdown").Opt().Default("0"), route.Bool("skiplock").Opt()),
			Handler: s.onGuest(s.lxcGuestSkiplock, func(r *route.Request, g *Guest) (any, error) { return s.lxcStop(r, g, "vzstop") })})
		s.Handle(&route.Route{Method: "POST", Path: base + "/{vmid}/status/shutdown", Perm: route.PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params:  nv(route.Bool("forceStop").Opt().Default("0"), route.Int("timeout").Opt().Min(0).Default("60")),
			Handler: s.onGuest(s.lxcGuestSkiplock, func(r *route.Request, g *Guest) (any, error) { return s.lxcStop(r, g, "vzshutdown") })})
		s.Handle(&route.Route{Method: "POST", Path: base + "/{vmid}/status/reboot", Perm: route.PermCheck("/vms/{vmid}", "VM.PowerMgmt"), ProxyTo: "node",
			Params: nv(route.Int("timeout").Opt().Min(0)), Handler: s.onGuest(s.lxcGuest, s.lxcReboot)})
		s.Handle(&route.Route{Method: "GET", Path: base + "/{vmid}/snapshot", Perm: route.PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node", Params: nv(),
			Handler: func(r *route.Request) (any, error) {
				g, err := s.lxcGuest(r)
				if err != nil {
					return nil, err
				}
				return snapshotListJSON(g), nil
			}})
		s.Handle(&route.Route{Method: "POST", Path: base + "/{vmid}/snapshot", Perm: route.PermCheck("/vms/{vmid}", "VM.Snapshot"), ProxyTo: "node",
			Params: nv(snap(), route.Str("description").Opt()), Handler: s.onGuest(s.lxcGuest, s.lxcSnapshotCreate)})
		s.Handle(&route.Route{Method: "GET", Path: base + "/{vmid}/snapshot/{snapname}", Perm: route.PermUser(), Params: nv(snap()),
			Handler: s.snapshotIndex(s.lxcGuest)})
		s.Handle(&route.Route{Method: "DELETE", Path: base + "/{vmid}/snapshot/{snapname}", Perm: route.PermCheck("/vms/{vmid}", "VM.Snapshot"), ProxyTo: "node",
			Params: nv(snap(), route.Bool("force").Opt()), Handler: s.onGuest(s.lxcGuest, s.lxcSnapshotDelete)})
		s.Handle(&route.Route{Method: "POST", Path: base + "/{vmid}/snapshot/{snapname}/rollback", Perm: route.PermAny("/vms/{vmid}", "VM.Snapshot", "VM.Snapshot.Rollback"), ProxyTo: "node",
			Params: nv(snap(), route.Bool("start").Opt().Default("0")), Handler: s.onGuest(s.lxcGuest, s.lxcSnapshotRollback)})
		s.Handle(&route.Route{Method: "GET", Path: base + "/{vmid}/snapshot/{snapname}/config", Perm: route.PermAny("/vms/{vmid}", "VM.Snapshot", "VM.Snapshot.Rollback", "VM.Audit"), ProxyTo: "node",
			Params: nv(snap()), Handler: s.snapshotConfig(s.lxcGuest, lxcKeyType)})
		s.Handle(&route.Route{Method: "PUT", Path: base + "/{vmid}/snapshot/{snapname}/config", Perm: route.PermCheck("/vms/{vmid}", "VM.Snapshot"), ProxyTo: "node",
			Params: nv(snap(), route.Str("description").Opt()), Handler: s.snapshotUpdate(s.lxcGuest, "lxc")})
	})
}

// lxcGuest loads the container of the request, failing as load_config does.
func (s *Server) lxcGuest(r *route.Request) (*Guest, error) {
	return s.pathGuest(r, "lxc")
}

// vmidUnusedErr is PVE::Cluster::check_vmid_unused.
func (s *Server) vmidUnusedErr(vmid int) error {
	if old := s.state.Guests[vmid]; old != nil {
		kind := "VM"
		if old.Type == "lxc" {
			kind = "CT"
		}
		return route.Fail("%s %d already exists on node '%s'", kind, vmid, old.Node)
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
		case opt == "tags":
			// LXC.pm check_ct_modify_config_perm: assert_tag_permissions.
			if err := s.check(user, vm, "VM.Config.Options"); err != nil {
				return err
			}
			newTags := newConf[opt]
			if del {
				newTags = ""
			}
			return s.assertTagPermissions(user, oldConf[opt], newTags)
		default:
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
				return nil, route.Fail("can't update CT %d drive '%s' - protection mode enabled", g.VMID, opt)
			}
			mp, err := parseLxcVolume(opt, v)
			if err != nil {
				return nil, route.ParamErr(opt, "invalid format - "+err.Error())
			}
			if mountPointType(mp["volume"]) == "volume" {
				sid, _, _ := strings.Cut(mp["volume"], ":")
				st, err := s.storageConfig(sid)
				if err != nil {
					return nil, err
				}
				if !st.allows("rootdir") {
					return nil, route.Fail("storage '%s' does not allow content type 'rootdir' (Container)", sid)
				}
			}
		case opt == "nameserver" || opt == "searchdomain":
			v = strings.Join(splitList(v), " ")
		case opt == "unprivileged":
			return nil, route.Fail("unable to modify read-only option: 'unprivileged'")
		case opt == "tags":
			v = s.uniqueTags(v)
		case strings.HasPrefix(opt, "net"):
			n, err := parsePropString(lxcNetFormat, v, opt)
			if err != nil {
				return nil, route.ParamErr(opt, "invalid format - "+err.Error())
			}
			if mtu, _ := strconv.Atoi(n["mtu"]); mtu > 0 {
				if bmtu := s.bridgeMTU(g.nodeOr(""), n["bridge"]); mtu > bmtu {
					return nil, route.Fail("%s: MTU size '%d' is bigger than bridge MTU '%d'", opt, mtu, bmtu)
				}
			}
			if n["link_down"] != "1" && n["host-managed"] == "1" && n["ip6"] == "auto" {
				return nil, route.Fail("%s: SLAAC is not supported for host-managed network configuration.", opt)
			}
		case strings.HasPrefix(opt, "dev"):
			d, _ := parsePropString(lxcDevFormat, v, opt)
			if d["path"] == "" {
				return nil, route.Fail("Path is not defined for passthrough device %s", opt)
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
