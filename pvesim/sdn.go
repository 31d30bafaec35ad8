package pvesim

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Software-defined networking (/cluster/sdn, pve-network): zones, vnets
// and subnets are edited in the cluster-wide configuration; PUT
// /cluster/sdn commits it as the running configuration and reloads the
// network of every node. Reads with pending=1 compare both and show each
// object's state (new, changed, deleted) and its pending values. Writes are in
// sdn_write.go.

// extState is the part of the cluster state added for host networks and
// SDN; clusterState embeds it so the JSON snapshot includes it.
type extState struct {
	HostNet map[string]*HostNetwork `json:"hostnet,omitempty"`
	SDN     *SDNState               `json:"sdn,omitempty"`
	HA      *HAState                `json:"ha,omitempty"`
	// Firewall is each VMID's firewall options (firewall.go).
	Firewall map[int]map[string]string `json:"firewall,omitempty"`
	// FirewallFiles are the other firewall files by path below
	// /etc/pve/firewall (firewall_conf.go).
	FirewallFiles map[string]string `json:"firewall_files,omitempty"`
}

// sdnSection is one section config (zones.cfg, vnets.cfg, subnets.cfg):
// object id to its keys, "type" included.
type sdnSection map[string]map[string]string

// SDNState is the SDN configuration and what was last applied.
type SDNState struct {
	Zones       sdnSection `json:"zones"`
	Vnets       sdnSection `json:"vnets"`
	Subnets     sdnSection `json:"subnets"`
	Controllers sdnSection `json:"controllers"`
	Running     *struct {
		Zones   sdnSection `json:"zones"`
		Vnets   sdnSection `json:"vnets"`
		Subnets sdnSection `json:"subnets"`
	} `json:"running,omitempty"`
	Version int `json:"version"`
	// NodeVnets are the vnets each node's last network reload brought up
	// (nil in a state saved before they were tracked).
	NodeVnets map[string]sdnSection `json:"node_vnets,omitempty"`
	// LockToken is the SDN configuration lock (/etc/pve/sdn/.lock).
	LockToken    string                     `json:"lock_token,omitempty"`
	reloadFaults map[string]*sdnReloadFault // FailNetworkReload, HoldNetworkReload
}

func (s *Server) sdn() *SDNState {
	if s.state.SDN == nil {
		s.state.SDN = &SDNState{Zones: sdnSection{}, Vnets: sdnSection{}, Subnets: sdnSection{}, Controllers: sdnSection{}}
	}
	st := s.state.SDN
	for _, sec := range []*sdnSection{&st.Zones, &st.Vnets, &st.Subnets, &st.Controllers} {
		if *sec == nil {
			*sec = sdnSection{}
		}
	}
	return st
}

func (sec sdnSection) clone() sdnSection {
	out := sdnSection{}
	for id, o := range sec {
		out[id] = copyConf(o)
	}
	return out
}

// running returns the applied section of a kind (empty before the first apply).
func (st *SDNState) running(kind string) sdnSection {
	if st.Running == nil {
		return sdnSection{}
	}
	switch kind {
	case "zones":
		return st.Running.Zones
	case "vnets":
		return st.Running.Vnets
	}
	return st.Running.Subnets
}

func (st *SDNState) config(kind string) sdnSection {
	switch kind {
	case "zones":
		return st.Zones
	case "vnets":
		return st.Vnets
	}
	return st.Subnets
}

// digest is the SHA-1 of the section config file, as SectionConfig computes it.
func (sec sdnSection) digest() string {
	var b strings.Builder
	for _, id := range sortedKeys(sec) {
		o := sec[id]
		fmt.Fprintf(&b, "%s: %s\n", o["type"], id)
		for _, k := range sortedKeys(o) {
			if k != "type" {
				fmt.Fprintf(&b, "\t%s %s\n", k, o[k])
			}
		}
		b.WriteString("\n")
	}
	return sha1Hex(b.String())
}

func (s *Server) sdnAppliedVnets() []string { return sortedKeys(s.sdn().running("vnets")) }

func (s *Server) sdnRunningZoneOf(vnet string) string { return s.sdn().running("vnets")[vnet]["zone"] }

// AddSDNController defines an SDN controller (the simulator does not serve
// /cluster/sdn/controllers); EVPN zones need an "evpn" one.
func (s *Server) AddSDNController(id, typ string, opts map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touch()
	o := copyConf(opts)
	o["type"] = typ
	s.sdn().Controllers[id] = o
}

// Key types of SDN objects, for typed read-back.
var sdnKeyTypes = func() map[string]route.Type {
	m := map[string]route.Type{}
	for _, p := range append(append(sdnZoneParams().All(), sdnVnetParams().All()...), sdnSubnetParams().All()...) {
		m[p.Name] = p.Type
	}
	return m
}()

func sdnIDFormat(kind string) func(string) error {
	re := regexp.MustCompile(`(?i)^[a-z][a-z0-9]*[a-z0-9]$`)
	return func(s string) error {
		if !re.MatchString(s) {
			return fmt.Errorf("%s ID '%s' contains illegal characters\n", kind, s)
		}
		if len(s) > 8 {
			return fmt.Errorf("%s ID '%s' can't be more length than 8 characters\n", kind, s)
		}
		return nil
	}
}

func init() {
	// pve-network's own ID rules (formats.go's generic definition of the
	// zone format is replaced here; this file's init runs after it).
	route.RegisterFormat("pve-sdn-zone-id", sdnIDFormat("zone"))
	route.RegisterFormat("pve-sdn-vnet-id", sdnIDFormat("vnet"))
	route.RegisterFormat("pve-sdn-subnet-id", func(s string) error {
		cidr := s
		if !strings.Contains(s, "/") {
			parts := strings.Split(s, "-")
			if len(parts) < 3 {
				return fmt.Errorf("value does not look like a valid CIDR network\n")
			}
			cidr = parts[1] + "/" + parts[2]
		}
		if cidrCheck(cidr, true, true, "") != nil {
			return fmt.Errorf("value does not look like a valid CIDR network\n")
		}
		return nil
	})
	route.RegisterFormat("pve-sdn-fabric-id", matchOr(regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9-]{0,6}[a-zA-Z0-9]?$`), "invalid fabric id"))
	route.RegisterFormat("pve-sdn-bgp-rt", func(s string) error {
		m := regexp.MustCompile(`^(\d+):(\d+)$`).FindStringSubmatch(s)
		if m == nil {
			return fmt.Errorf("value does not look like a valid bgp route-target\n")
		}
		for _, n := range m[1:] {
			if v, err := strconv.ParseUint(n, 10, 64); err != nil || v > 4294967295 {
				return fmt.Errorf("value does not look like a valid bgp route-target\n")
			}
		}
		return nil
	})
	route.RegisterPropFormat("pve-sdn-dhcp-range", route.Props(
		route.Str("start-address").Fmt("ip"),
		route.Str("end-address").Fmt("ip"),
	))
	registerRoutes(func(s *Server) {
		view := func() []*route.Param { return []*route.Param{route.Bool("pending").Opt(), route.Bool("running").Opt()} }
		lock := func() *route.Param { return route.Str("lock-token").Opt() }
		zoneTypes := []string{"evpn", "faucet", "qinq", "simple", "vlan", "vxlan"}
		zoneID := func() *route.Param { return route.Str("zone").Fmt("pve-sdn-zone-id") }
		vnetID := func() *route.Param { return route.Str("vnet").Fmt("pve-sdn-vnet-id") }
		update := func() []*route.Param {
			return []*route.Param{route.Str("delete").Opt().Fmt("pve-configid-list").MaxLen(4096), route.Str("digest").Opt().MaxLen(64), lock()}
		}
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/sdn", Perm: route.PermCheck("/sdn", "SDN.Audit"), Handler: func(*route.Request) (any, error) {
			out := []map[string]any{}
			for _, id := range []string{"vnets", "zones", "controllers", "ipams", "dns", "fabrics"} {
				out = append(out, map[string]any{"id": id})
			}
			return out, nil
		}})
		s.Handle(&route.Route{Method: "PUT", Path: "/cluster/sdn", Perm: route.PermCheck("/sdn", "SDN.Allocate"), Params: route.NewParams(lock(), route.Bool("release-lock").Opt().Default("1")), Handler: s.sdnApply})

		s.Handle(&route.Route{Method: "GET", Path: "/cluster/sdn/zones", Perm: route.PermUser(),
			Params: route.NewParams(append(view(), route.Str("type").Opt().Enum(zoneTypes...))...), Handler: s.sdnZoneList})
		s.Handle(&route.Route{Method: "POST", Path: "/cluster/sdn/zones", Perm: route.PermCheck("/sdn/zones", "SDN.Allocate"),
			Params: sdnZoneParams().With(zoneID(), route.Str("type").Enum(zoneTypes...).Fmt("pve-configid"), lock()), Handler: s.sdnZoneCreate})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/sdn/zones/{zone}", Perm: route.PermCheck("/sdn/zones/{zone}", "SDN.Allocate"), Params: route.NewParams(append(view(), zoneID())...),
			Handler: func(r *route.Request) (any, error) { return s.sdnRead(r, "zones", r.Str("zone")) }})
		s.Handle(&route.Route{Method: "PUT", Path: "/cluster/sdn/zones/{zone}", Perm: route.PermCheck("/sdn/zones/{zone}", "SDN.Allocate"), Params: sdnZoneParams().With(append(update(), zoneID())...), Handler: s.sdnZoneUpdate})
		s.Handle(&route.Route{Method: "DELETE", Path: "/cluster/sdn/zones/{zone}", Perm: route.PermCheck("/sdn/zones/{zone}", "SDN.Allocate"), Params: route.NewParams(zoneID(), lock()), Handler: s.sdnZoneDelete})

		s.Handle(&route.Route{Method: "GET", Path: "/cluster/sdn/vnets", Perm: route.PermUser(), Params: route.NewParams(view()...),
			Handler: func(r *route.Request) (any, error) { return s.sdnList(r, "vnets", nil) }})
		s.Handle(&route.Route{Method: "POST", Path: "/cluster/sdn/vnets", Perm: route.PermCheck("/sdn/zones/{zone}", "SDN.Allocate"),
			Params: sdnVnetParams().With(vnetID(), route.Str("zone"), route.Str("type").Opt().Enum("vnet"), lock()), Handler: s.sdnVnetCreate})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/sdn/vnets/{vnet}", Perm: route.PermUser(), Params: route.NewParams(append(view(), vnetID())...),
			Handler: s.vnetGuard(sdnRead, func(r *route.Request) (any, error) { return s.sdnRead(r, "vnets", r.Str("vnet")) })})
		s.Handle(&route.Route{Method: "PUT", Path: "/cluster/sdn/vnets/{vnet}", Perm: route.PermUser(),
			Params: sdnVnetParams().With(append(update(), vnetID(), route.Str("zone").Opt())...), Handler: s.vnetGuard(sdnAllocate, s.sdnVnetUpdate)})
		s.Handle(&route.Route{Method: "DELETE", Path: "/cluster/sdn/vnets/{vnet}", Perm: route.PermUser(), Params: route.NewParams(vnetID(), lock()), Handler: s.vnetGuard(sdnAllocate, s.sdnVnetDelete)})

		subnetID := func() *route.Param { return route.Str("subnet").Fmt("pve-sdn-subnet-id") }
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/sdn/vnets/{vnet}/subnets", Perm: route.PermUser(), Params: route.NewParams(append(view(), vnetID())...),
			Handler: s.vnetGuard(sdnRead, func(r *route.Request) (any, error) {
				vnet := r.Str("vnet")
				return s.sdnList(r, "subnets", func(o map[string]string) bool { return o["vnet"] == vnet })
			})})
		s.Handle(&route.Route{Method: "POST", Path: "/cluster/sdn/vnets/{vnet}/subnets", Perm: route.PermUser(),
			Params: sdnSubnetParams().With(subnetID(), route.Str("vnet"), route.Str("type").Enum("subnet"), lock()), Handler: s.vnetGuard(sdnAllocate, s.sdnSubnetCreate)})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/sdn/vnets/{vnet}/subnets/{subnet}", Perm: route.PermUser(), Params: route.NewParams(append(view(), vnetID(), subnetID())...),
			Handler: s.vnetGuard(sdnRead, func(r *route.Request) (any, error) {
				id, err := s.sdnSubnetID(r)
				if err != nil {
					return nil, err
				}
				return s.sdnRead(r, "subnets", id)
			})})
		s.Handle(&route.Route{Method: "PUT", Path: "/cluster/sdn/vnets/{vnet}/subnets/{subnet}", Perm: route.PermUser(),
			Params: sdnSubnetParams().With(append(update(), subnetID(), route.Str("vnet").Opt())...), Handler: s.vnetGuard(sdnAllocate, s.sdnSubnetUpdate)})
		s.Handle(&route.Route{Method: "DELETE", Path: "/cluster/sdn/vnets/{vnet}/subnets/{subnet}", Perm: route.PermUser(),
			Params: route.NewParams(vnetID(), subnetID(), lock()), Handler: s.vnetGuard(sdnAllocate, s.sdnSubnetDelete)})
	})
}

// sdnZoneParams are the zone plugins' properties (all optional in the API;
// each type requires its own, see sdnZoneOptions).
func sdnZoneParams() *route.Params {
	return route.NewParams(
		route.Bool("advertise-subnets").Opt(),
		route.Str("bridge").Opt(),
		route.Bool("bridge-disable-mac-learning").Opt(),
		route.Str("controller").Opt(),
		route.Str("dhcp").Opt().Enum("dnsmasq"),
		route.Bool("disable-arp-nd-suppression").Opt(),
		route.Str("dns").Opt(),
		route.Str("dnszone").Opt().Fmt("dns-name"),
		route.Int("dp-id").Opt(),
		route.Str("exitnodes").Opt().Fmt("pve-node-list"),
		route.Bool("exitnodes-local-routing").Opt(),
		route.Str("exitnodes-primary").Opt().Fmt("pve-node"),
		route.Str("fabric").Opt().Fmt("pve-sdn-fabric-id"),
		route.Str("ipam").Opt(),
		route.Str("mac").Opt().Fmt("mac-addr"),
		route.Int("mtu").Opt(),
		route.Str("nodes").Opt().Fmt("pve-node-list"),
		route.Str("peers").Opt().Fmt("ip-list"),
		route.Str("reversedns").Opt(),
		route.Str("rt-import").Opt().Fmt("pve-sdn-bgp-rt-list"),
		route.Int("tag").Opt().Min(0),
		route.Str("vlan-protocol").Opt().Enum("802.1q", "802.1ad").Default("802.1q"),
		route.Int("vrf-vxlan").Opt().Min(1).Max(16777215),
		route.Int("vxlan-port").Opt().Min(1).Max(65536).Default("4789"),
	)
}

func sdnVnetParams() *route.Params {
	return route.NewParams(
		route.Str("alias").Opt().MaxLen(256).Pattern(`(?i:[\(\)-_.\w\d\s]{0,256})`),
		route.Bool("isolate-ports").Opt(),
		route.Int("tag").Opt().Min(1).Max(16777215),
		route.Bool("vlanaware").Opt(),
	)
}

func sdnSubnetParams() *route.Params {
	return route.NewParams(
		route.Str("dhcp-dns-server").Opt().Fmt("ip"),
		route.Arr("dhcp-range").Opt(),
		route.Str("dnszoneprefix").Opt().Fmt("dns-name"),
		route.Str("gateway").Opt().Fmt("ip"),
		route.Bool("snat").Opt(),
	)
}

// sdnZoneOptions are the options of each zone type, true when required
// (the plugins' options()).
var sdnZoneOptions = map[string]map[string]bool{
	"simple": {"nodes": false, "mtu": false, "dns": false, "reversedns": false, "dnszone": false, "ipam": false, "dhcp": false},
	"vlan":   {"nodes": false, "bridge": true, "bridge-disable-mac-learning": false, "mtu": false, "dns": false, "reversedns": false, "dnszone": false, "ipam": false},
	"qinq":   {"nodes": false, "tag": true, "bridge": true, "bridge-disable-mac-learning": false, "mtu": false, "vlan-protocol": false, "dns": false, "reversedns": false, "dnszone": false, "ipam": false},
	"vxlan":  {"nodes": false, "peers": false, "vxlan-port": false, "mtu": false, "dns": false, "reversedns": false, "dnszone": false, "ipam": false, "fabric": false},
	"evpn": {"nodes": false, "vrf-vxlan": true, "controller": true, "exitnodes": false, "exitnodes-local-routing": false, "exitnodes-primary": false,
		"advertise-subnets": false, "disable-arp-nd-suppression": false, "bridge-disable-mac-learning": false, "rt-import": false,
		"vxlan-port": false, "mtu": false, "mac": false, "dns": false, "reversedns": false, "dnszone": false, "ipam": false},
	"faucet": {"nodes": false, "dp-id": true, "dns": false, "reversedns": false, "dnszone": false, "ipam": false},
}

// sdnParams are a request's object options, list values normalised.
func sdnParams(r *route.Request, skip ...string) map[string]string {
	out := map[string]string{}
	drop := map[string]bool{"lock-token": true, "digest": true, "delete": true}
	for _, k := range skip {
		drop[k] = true
	}
	for k, v := range r.Params {
		if drop[k] {
			continue
		}
		switch k {
		case "nodes", "exitnodes", "peers", "rt-import":
			v = strings.Join(splitList(v), ",")
		}
		out[k] = v
	}
	return out
}

// checkSectionOptions is SectionConfig::check_config for one plugin type.
func checkSectionOptions(opts map[string]bool, params map[string]string, create bool) error {
	for _, k := range sortedKeys(params) {
		if _, ok := opts[k]; !ok && k != "type" {
			return route.Fail("unexpected property '%s'", k)
		}
	}
	if create {
		for _, k := range sortedKeys(opts) {
			if opts[k] && params[k] == "" {
				return route.Fail("missing value for required option '%s'", k)
			}
		}
	}
	return nil
}

// sdnObjectJSON types an object's values for the API.
func sdnObjectJSON(o map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range o {
		out[k] = sdnValue(k, v)
	}
	return out
}

// sdnValue types one value: numbers and booleans per the schema, DHCP
// ranges as the list get_dhcp_ranges returns.
func sdnValue(k, v string) any {
	if k == "dhcp-range" {
		return append([]map[string]string{}, splitRanges(v)...)
	}
	return typedValue(sdnKeyTypes[k], v)
}

// sdnView returns the section a read shows: the configuration, the
// running one, or the pending comparison of both.
func (s *Server) sdnView(r *route.Request, kind string) (map[string]map[string]any, string) {
	st := s.sdn()
	cfg := st.config(kind)
	digest := cfg.digest()
	out := map[string]map[string]any{}
	switch {
	case r.Bool("pending"):
		return sdnPending(st.running(kind), cfg), digest
	case r.Bool("running"):
		for id, o := range st.running(kind) {
			out[id] = sdnObjectJSON(o)
		}
	default:
		for id, o := range cfg {
			out[id] = sdnObjectJSON(o)
		}
	}
	return out, digest
}

// sdnPending is PVE::Network::SDN::pending_config.
func sdnPending(running, cfg sdnSection) map[string]map[string]any {
	pending := map[string]map[string]any{}
	get := func(id string) map[string]any {
		if pending[id] == nil {
			pending[id] = map[string]any{}
		}
		return pending[id]
	}
	pend := func(id string) map[string]any {
		p := get(id)
		if p["pending"] == nil {
			p["pending"] = map[string]any{}
		}
		return p["pending"].(map[string]any)
	}
	for _, id := range sortedKeys(running) {
		ro, co := running[id], cfg[id]
		p := get(id)
		for _, k := range sortedKeys(ro) {
			p[k] = sdnValue(k, ro[k])
			switch {
			case len(co) == 0:
				p["state"] = "deleted"
			case co[k] == "":
				pend(id)[k] = "deleted"
				p["state"] = "changed"
			case co[k] != ro[k]:
				p["state"] = "changed"
			}
		}
		if p["state"] != nil {
			pend(id)
		}
	}
	for _, id := range sortedKeys(cfg) {
		ro, co := running[id], cfg[id]
		p := get(id)
		for _, k := range sortedKeys(co) {
			if k == "type" || k == "vnet" {
				p[k] = co[k]
			} else if rv, ok := ro[k]; !ok || rv != co[k] {
				pend(id)[k] = sdnValue(k, co[k])
			}
			if len(ro) == 0 {
				p["state"] = "new"
			} else if _, ok := ro[k]; !ok {
				p["state"] = "changed"
			}
		}
		if p["state"] != nil {
			pend(id)
		}
	}
	return pending
}

var sdnIDKey = map[string]string{"zones": "zone", "vnets": "vnet", "subnets": "subnet"}

func (s *Server) sdnList(r *route.Request, kind string, filter func(map[string]string) bool) (any, error) {
	view, digest := s.sdnView(r, kind)
	out := []map[string]any{}
	for _, id := range sortedKeys(view) {
		o := view[id]
		if !s.sdnCanSee(r.User, kind, id, o) {
			continue
		}
		if filter != nil {
			src := s.sdn().config(kind)[id]
			if src == nil {
				src = s.sdn().running(kind)[id]
			}
			if !filter(src) {
				continue
			}
		}
		out = append(out, s.sdnDecorate(kind, id, o, digest))
	}
	return out, nil
}

// sdnDecorate adds the id, digest and the derived keys of subnets.
func (s *Server) sdnDecorate(kind, id string, o map[string]any, digest string) map[string]any {
	o[sdnIDKey[kind]] = id
	o["digest"] = digest
	if kind == "subnets" {
		parts := strings.Split(id, "-")
		if len(parts) >= 3 {
			o["id"] = id
			o["zone"], o["network"], o["mask"] = parts[0], parts[1], parts[2]
			o["cidr"] = parts[1] + "/" + parts[2]
		}
	}
	return o
}

func (s *Server) sdnZoneList(r *route.Request) (any, error) {
	typ := r.Str("type")
	return s.sdnList(r, "zones", func(o map[string]string) bool { return typ == "" || o["type"] == typ })
}

func (s *Server) sdnRead(r *route.Request, kind, id string) (any, error) {
	view, digest := s.sdnView(r, kind)
	o, ok := view[id]
	if !ok {
		return nil, route.Fail("sdn %s '%s' does not exist", strings.TrimSuffix(kind, "s"), id)
	}
	return s.sdnDecorate(kind, id, o, digest), nil
}

var (
	sdnRead     = []string{"SDN.Audit", "SDN.Allocate"}
	sdnAllocate = []string{"SDN.Allocate"}
)

// vnetGuard runs pve-network's check_vnet_access (API2/Network/SDN/Vnets.pm
// and Subnets.pm) before a handler: one of privs on
// /sdn/zones/<zone of the vnet>/<vnet>.
func (s *Server) vnetGuard(privs []string, h route.HandlerFunc) route.HandlerFunc {
	return func(r *route.Request) (any, error) {
		vnet := r.Str("vnet")
		zone := s.sdn().Vnets[vnet]["zone"]
		if err := s.checkAny(r.User, normalizeACLPath("/sdn/zones/"+zone+"/"+vnet), privs...); err != nil {
			return nil, err
		}
		return h(r)
	}
}

// sdnCanSee is the list filter of the SDN index methods: SDN.Audit or
// SDN.Allocate on the zone (zones), or on the zone's vnet (vnets, subnets).
func (s *Server) sdnCanSee(user, kind, id string, o map[string]any) bool {
	if s.hasAllPrivileges(user) {
		return true
	}
	var path string
	switch kind {
	case "zones":
		path = "/sdn/zones/" + id
	case "vnets":
		path = fmt.Sprintf("/sdn/zones/%v/%s", o["zone"], id)
	default:
		vnet := fmt.Sprint(o["vnet"])
		path = "/sdn/zones/" + s.sdn().Vnets[vnet]["zone"] + "/" + vnet
	}
	return s.checkAny(user, normalizeACLPath(path), sdnRead...) == nil
}
