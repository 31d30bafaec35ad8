package pvesim

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Host network configuration (/nodes/{node}/network, pve-manager's
// API2/Network.pm): every change is written to /etc/network/interfaces.new
// and only takes effect when PUT /nodes/{node}/network reloads it; reads
// show the staged file plus a unified diff in "changes"; DELETE drops the
// staged file. The file's checks, rendering and diff are in network_file.go.

// netIface is one interface stanza, with Proxmox's API keys as strings.
type netIface map[string]string

// HostNetwork is one node's network configuration: the running
// /etc/network/interfaces and, when changes are staged, interfaces.new.
type HostNetwork struct {
	Running map[string]netIface `json:"running"`
	Staged  map[string]netIface `json:"staged,omitempty"`
	// NextPriority orders stanzas as the file does.
	NextPriority int `json:"nextPriority"`
}

// physicalNICs are the network cards every simulated node has.
var physicalNICs = []string{"eno1", "eno2", "eno3", "eno4"}

const defaultGateway = "192.0.2.1"

// hostNet returns a node's network, creating the installer's default
// (eno1..eno4, vmbr0 on eno1 with the node's address) on first use.
func (s *Server) hostNet(node string) *HostNetwork {
	if s.state.HostNet == nil {
		s.state.HostNet = map[string]*HostNetwork{}
	}
	hn := s.state.HostNet[node]
	if hn != nil {
		return hn
	}
	n := s.state.node(node)
	hn = &HostNetwork{Running: map[string]netIface{}}
	prio := 1
	for _, nic := range physicalNICs {
		hn.Running[nic] = netIface{"type": "eth", "method": "manual", "method6": "manual", "families": "inet", "priority": strconv.Itoa(prio)}
		prio++
	}
	hn.Running["vmbr0"] = netIface{
		"type": "bridge", "method": "static", "method6": "manual", "families": "inet", "autostart": "1",
		"address": n.IP, "netmask": "24", "gateway": defaultGateway,
		"bridge_ports": "eno1", "bridge_stp": "off", "bridge_fd": "0", "priority": strconv.Itoa(prio),
	}
	hn.NextPriority = prio + 1
	s.state.HostNet[node] = hn
	return hn
}

// current is what reads and writes see: the staged file when there is one.
func (hn *HostNetwork) current() map[string]netIface {
	if hn.Staged != nil {
		return hn.Staged
	}
	return hn.Running
}

func copyIfaces(m map[string]netIface) map[string]netIface {
	out := make(map[string]netIface, len(m))
	for k, v := range m {
		out[k] = netIface(copyConf(v))
	}
	return out
}

// bridgeExists says whether a guest NIC may plug into the named bridge:
// an active Linux or OVS bridge of the node, or an SDN vnet the node's
// last network reload brought up.
func (s *Server) bridgeExists(node, name string) bool {
	if d, ok := s.hostNet(node).Running[name]; ok && (d["type"] == "bridge" || d["type"] == "OVSBridge") {
		return true
	}
	return s.sdnVnetUp(node, name)
}

// bridgeMTU is read_bridge_mtu for an active bridge (1500 by default).
func (s *Server) bridgeMTU(node, name string) int {
	if d, ok := s.hostNet(node).Running[name]; ok {
		if m, err := strconv.Atoi(d["mtu"]); err == nil {
			return m
		}
	}
	return 1500
}

func init() {
	route.RegisterFormat("ipv4mask", func(v string) error {
		if _, ok := ipv4MaskBits(v); !ok {
			return errors.New("value does not look like a valid IP netmask\n")
		}
		return nil
	})
	route.RegisterFormat("pve-vlan-id-or-range", func(v string) error {
		m := regexp.MustCompile(`^(\d+)(?:-(\d+))?$`).FindStringSubmatch(v)
		if m == nil {
			return fmt.Errorf("invalid VLAN tag or range '%s'\n", v)
		}
		for _, n := range m[1:] {
			if n == "" {
				continue
			}
			if id, _ := strconv.Atoi(n); id < 1 || id > 4094 {
				return fmt.Errorf("invalid VLAN tag '%s'\n", n)
			}
		}
		return nil
	})
	registerRoutes(func(s *Server) {
		iface := func() *route.Param { return route.Str("iface").Fmt("pve-iface").MinLen(2).MaxLen(20) }
		types := []string{"bridge", "bond", "eth", "alias", "vlan", "fabric", "OVSBridge", "OVSBond", "OVSPort", "OVSIntPort", "vnet"}
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/network", Perm: route.PermUser(), ProxyTo: "node",
			Params:  route.NewParams(pNode(), route.Str("type").Opt().Enum(append(append([]string(nil), types...), "any_bridge", "any_local_bridge", "include_sdn")...)),
			Handler: s.networkList})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/network", Perm: route.PermCheck("/nodes/{node}", "Sys.Modify"), ProxyTo: "node",
			Params: networkConfigParams(types).With(pNode(), iface()), Handler: s.networkCreate})
		s.Handle(&route.Route{Method: "PUT", Path: "/nodes/{node}/network", Perm: route.PermCheck("/nodes/{node}", "Sys.Modify"), ProxyTo: "node",
			Params: route.NewParams(pNode(), route.Bool("regenerate-frr").Opt().Default("0")), Handler: s.networkApply})
		s.Handle(&route.Route{Method: "DELETE", Path: "/nodes/{node}/network", Perm: route.PermCheck("/nodes/{node}", "Sys.Modify"), ProxyTo: "node",
			Params: route.NewParams(pNode()), Handler: func(r *route.Request) (any, error) {
				s.hostNet(r.Str("node")).Staged = nil
				return nil, nil
			}})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/network/{iface}", Perm: route.PermCheck("/nodes/{node}", "Sys.Audit"), ProxyTo: "node",
			Params: route.NewParams(pNode(), iface()), Handler: s.networkGet})
		s.Handle(&route.Route{Method: "PUT", Path: "/nodes/{node}/network/{iface}", Perm: route.PermCheck("/nodes/{node}", "Sys.Modify"), ProxyTo: "node",
			Params: networkConfigParams(types).With(pNode(), iface(), route.Str("delete").Opt().Fmt("pve-configid-list")), Handler: s.networkUpdate})
		s.Handle(&route.Route{Method: "DELETE", Path: "/nodes/{node}/network/{iface}", Perm: route.PermCheck("/nodes/{node}", "Sys.Modify"), ProxyTo: "node",
			Params: route.NewParams(pNode(), iface()), Handler: s.networkDelete})
	})
}

// networkConfigParams is $confdesc of API2/Network.pm.
func networkConfigParams(types []string) *route.Params {
	return route.NewParams(
		route.Str("type").Enum(append(append([]string(nil), types...), "unknown")...),
		route.Str("comments").Opt(),
		route.Str("comments6").Opt(),
		route.Bool("autostart").Opt(),
		route.Bool("bridge_vlan_aware").Opt(),
		route.Str("bridge_vids").Opt().Fmt("pve-vlan-id-or-range-list"),
		route.Str("bridge_ports").Opt().Fmt("pve-iface-list"),
		route.Str("ovs_ports").Opt().Fmt("pve-iface-list"),
		route.Int("ovs_tag").Opt().Min(1).Max(4094),
		route.Str("ovs_options").Opt().MaxLen(1024),
		route.Str("ovs_bridge").Opt().Fmt("pve-iface"),
		route.Str("slaves").Opt().Fmt("pve-iface-list"),
		route.Str("ovs_bonds").Opt().Fmt("pve-iface-list"),
		route.Str("bond_mode").Opt().Enum("balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb", "balance-slb", "lacp-balance-slb", "lacp-balance-tcp"),
		route.Str("bond-primary").Opt().Fmt("pve-iface"),
		route.Str("bond_xmit_hash_policy").Opt().Enum("layer2", "layer2+3", "layer3+4"),
		route.Str("vlan-raw-device").Opt().Fmt("pve-iface"),
		route.Int("vlan-id").Opt().Min(1).Max(4094),
		route.Str("gateway").Opt().Fmt("ipv4"),
		route.Str("netmask").Opt().Fmt("ipv4mask").Requires("address"),
		route.Str("address").Opt().Fmt("ipv4").Requires("netmask"),
		route.Str("cidr").Opt().Fmt("CIDRv4"),
		route.Int("mtu").Opt().Min(1280).Max(65520),
		route.Str("gateway6").Opt().Fmt("ipv6"),
		route.Int("netmask6").Opt().Min(0).Max(128).Requires("address6"),
		route.Str("address6").Opt().Fmt("ipv6").Requires("netmask6"),
		route.Str("cidr6").Opt().Fmt("CIDRv6"),
	)
}

// ipv4MaskBits turns a dotted netmask into its prefix length.
func ipv4MaskBits(mask string) (int, bool) {
	a, err := netip.ParseAddr(mask)
	if err != nil || !a.Is4() {
		return 0, false
	}
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	bits := 0
	for v&0x80000000 != 0 {
		bits++
		v <<= 1
	}
	if v != 0 {
		return 0, false
	}
	return bits, true
}

// networkIfaceJSON is one interface as the API lists it.
func (s *Server) networkIfaceJSON(hn *HostNetwork, name string, d netIface) map[string]any {
	m := map[string]any{"iface": name}
	for k, v := range d {
		switch k {
		case "families":
			m[k] = strings.Split(v, ",")
		case "autostart", "priority", "bridge_vlan_aware":
			n, _ := strconv.Atoi(v)
			m[k] = n
		default:
			m[k] = v
		}
	}
	if a, ok := d["address"]; ok {
		m["cidr"] = a + "/" + d["netmask"]
	}
	if a, ok := d["address6"]; ok {
		m["cidr6"] = a + "/" + d["netmask6"]
	}
	if d["type"] == "eth" {
		m["exists"] = 1
	}
	if _, running := hn.Running[name]; running {
		m["active"] = 1
	}
	return m
}

func (s *Server) networkList(r *route.Request) (any, error) {
	hn := s.hostNet(r.Str("node"))
	cur := hn.current()
	filter := r.Str("type")
	out := []map[string]any{}
	for _, name := range sortedKeys(cur) {
		d := cur[name]
		if filter != "" && filter != "include_sdn" {
			isBridge := d["type"] == "bridge" || d["type"] == "OVSBridge"
			if !(filter == d["type"] || (isBridge && (filter == "any_bridge" || filter == "any_local_bridge"))) {
				continue
			}
		}
		// Network.pm index: bridges only for callers with SDN.Audit or
		// SDN.Use on the bridge in zone localnetwork (or one of its VLANs).
		if (d["type"] == "bridge" || d["type"] == "OVSBridge") && !s.canSeeBridge(r.User, name) {
			continue
		}
		out = append(out, s.networkIfaceJSON(hn, name, d))
	}
	if filter == "any_bridge" || filter == "include_sdn" || filter == "vnet" {
		for _, id := range s.sdnAppliedVnets() {
			out = append(out, map[string]any{"iface": id, "type": "vnet", "active": 1, "zone": s.sdnRunningZoneOf(id)})
		}
	}
	return Result{Data: out, Changes: s.networkChanges(hn)}, nil
}

func (s *Server) networkGet(r *route.Request) (any, error) {
	hn := s.hostNet(r.Str("node"))
	d, ok := hn.current()[r.Str("iface")]
	if !ok {
		return nil, route.ParamErr("iface", "interface does not exist")
	}
	m := s.networkIfaceJSON(hn, r.Str("iface"), d)
	delete(m, "iface")
	return m, nil
}

// networkParams collects the interface options of a create or update.
func networkParams(r *route.Request) map[string]string {
	p := paramsExcept(r, "node", "iface", "delete")
	return p
}

// checkDuplicate is $check_duplicate (gateways).
func checkDuplicate(ifaces map[string]netIface, newIface, key, what string) error {
	for _, name := range sortedKeys(ifaces) {
		if name != newIface && ifaces[name][key] != "" {
			return route.ParamErr(key, fmt.Sprintf("%s already exists on interface '%s'.", what, name))
		}
	}
	return nil
}

var portKeys = []string{"bridge_ports", "ovs_ports", "slaves", "ovs_bonds"}

func portList(d map[string]string) (ports []string, param string) {
	for _, k := range portKeys {
		if d[k] != "" {
			ports = append(ports, splitList(d[k])...)
			if param == "" {
				param = k
			}
		}
	}
	return ports, param
}

// checkShared is what create and update both check of what only one
// interface may hold: the default gateways, then the bridge ports.
func checkShared(work map[string]netIface, name string, p map[string]string) error {
	if p["gateway"] != "" {
		if err := checkDuplicate(work, name, "gateway", "Default gateway"); err != nil {
			return err
		}
	}
	if p["gateway6"] != "" {
		if err := checkDuplicate(work, name, "gateway6", "Default ipv6 gateway"); err != nil {
			return err
		}
	}
	return checkDuplicatePorts(work, name, p)
}

// checkDuplicatePorts is $check_duplicate_ports.
func checkDuplicatePorts(ifaces map[string]netIface, newIface string, p map[string]string) error {
	ports, param := portList(p)
	want := map[string]bool{}
	for _, x := range ports {
		want[x] = true
	}
	for _, name := range sortedKeys(ifaces) {
		if name == newIface {
			continue
		}
		used, _ := portList(ifaces[name])
		for _, x := range used {
			if want[x] {
				return route.ParamErr(param, fmt.Sprintf("%s is already used on interface '%s'.", x, name))
			}
		}
	}
	return nil
}

// mapCIDR is $map_cidr_to_address_netmask.
func mapCIDR(p map[string]string) error {
	for _, fam := range []string{"", "6"} {
		c, ok := p["cidr"+fam]
		if !ok {
			continue
		}
		if p["address"+fam] != "" {
			return route.ParamErr("address"+fam, "address"+fam+" conflicts with cidr"+fam)
		}
		if p["netmask"+fam] != "" {
			return route.ParamErr("netmask"+fam, "netmask"+fam+" conflicts with cidr"+fam)
		}
		addr, bits, _ := strings.Cut(c, "/")
		p["address"+fam], p["netmask"+fam] = addr, bits
		delete(p, "cidr"+fam)
	}
	if m, ok := p["netmask"]; ok && strings.Contains(m, ".") {
		bits, _ := ipv4MaskBits(m)
		p["netmask"] = strconv.Itoa(bits)
	}
	return nil
}

// checkIPv6 is $check_ipv6_settings.
func checkIPv6(address, netmask string) error {
	a, err := netip.ParseAddr(address)
	if err != nil || !a.Is6() {
		return route.ParamErr("address", fmt.Sprintf("%s is not a valid host IPv6 address.", address))
	}
	if !(a.IsGlobalUnicast() || a.IsLinkLocalUnicast()) {
		return route.ParamErr("address", fmt.Sprintf("%s with type '%s', cannot be used as host IPv6 address.", address, ipv6Type(a)))
	}
	return nil
}

func ipv6Type(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "LOOPBACK"
	case a.IsMulticast():
		return "MULTICAST"
	case a.IsUnspecified():
		return "UNSPECIFIED"
	}
	return "RESERVED"
}

// setFamilies records the address families and methods of an interface.
func setFamilies(d netIface, p map[string]string) {
	var fam []string
	if p["address"] != "" {
		fam = append(fam, "inet")
	}
	if p["address6"] != "" {
		fam = append(fam, "inet6")
	}
	if len(fam) == 0 {
		fam = []string{"inet"}
	}
	d["families"] = strings.Join(fam, ",")
	d["method"], d["method6"] = "manual", "manual"
	if p["address"] != "" {
		d["method"] = "static"
	}
	if p["address6"] != "" {
		d["method6"] = "static"
	}
}

func (s *Server) networkCreate(r *route.Request) (any, error) {
	hn := s.hostNet(r.Str("node"))
	name := r.Str("iface")
	p := networkParams(r)
	work := copyIfaces(hn.current())
	if _, ok := work[name]; ok {
		return nil, route.ParamErr("iface", "interface already exists")
	}
	if err := checkShared(work, name, p); err != nil {
		return nil, err
	}
	if err := mapCIDR(p); err != nil {
		return nil, err
	}
	if p["address6"] != "" {
		if err := checkIPv6(p["address6"], p["netmask6"]); err != nil {
			return nil, err
		}
	}
	if strings.HasPrefix(p["type"], "OVS") {
		return nil, route.Fail("Open VSwitch is not installed (need package 'openvswitch-switch')")
	}
	if v, ok := p["bridge_vids"]; ok {
		if len(splitList(v)) == 0 {
			return nil, route.ParamErr("bridge_vids", "VLAN list items are empty")
		}
		p["bridge_vids"] = strings.Join(splitList(v), " ")
	}
	d := netIface{}
	for k, v := range p {
		d[k] = v
	}
	setFamilies(d, p)
	d["priority"] = strconv.Itoa(hn.NextPriority)
	work[name] = d
	if err := validateInterfaces(work); err != nil {
		return nil, err
	}
	hn.NextPriority++
	hn.Staged = work
	return nil, nil
}

func (s *Server) networkUpdate(r *route.Request) (any, error) {
	hn := s.hostNet(r.Str("node"))
	name := r.Str("iface")
	p := networkParams(r)
	work := copyIfaces(hn.current())
	d, ok := work[name]
	if !ok {
		return nil, route.ParamErr("iface", "interface does not exist")
	}
	for _, k := range splitList(r.Str("delete")) {
		delete(d, k)
		switch k {
		case "cidr":
			delete(d, "netmask")
			delete(d, "address")
		case "cidr6":
			delete(d, "netmask6")
			delete(d, "address6")
		}
	}
	if err := mapCIDR(p); err != nil {
		return nil, err
	}
	if err := checkShared(work, name, p); err != nil {
		return nil, err
	}
	if p["address6"] != "" {
		if err := checkIPv6(p["address6"], p["netmask6"]); err != nil {
			return nil, err
		}
	}
	// Proxmox derives the methods from this request alone: an update
	// without an address turns a static interface into a manual one.
	setFamilies(d, p)
	if v, ok := p["bridge_vids"]; ok {
		if len(splitList(v)) == 0 {
			return nil, route.ParamErr("bridge_vids", "VLAN list items are empty")
		}
		p["bridge_vids"] = strings.Join(splitList(v), " ")
	}
	for k, v := range p {
		d[k] = v
	}
	if err := validateInterfaces(work); err != nil {
		return nil, err
	}
	hn.Staged = work
	return nil, nil
}

func (s *Server) networkDelete(r *route.Request) (any, error) {
	hn := s.hostNet(r.Str("node"))
	name := r.Str("iface")
	work := copyIfaces(hn.current())
	d, ok := work[name]
	if !ok {
		return nil, route.ParamErr("iface", "interface does not exist")
	}
	delete(work, name)
	if d["type"] == "eth" {
		// A physical port stays: the reader lists every NIC that exists.
		for _, nic := range physicalNICs {
			if nic == name {
				work[name] = netIface{"type": "eth", "method": "manual", "method6": "manual", "families": "inet", "priority": d["priority"]}
			}
		}
	}
	if err := validateInterfaces(work); err != nil {
		return nil, err
	}
	hn.Staged = work
	return nil, nil
}

func (s *Server) networkApply(r *route.Request) (any, error) {
	node := r.Str("node")
	hn := s.hostNet(node)
	return s.startTask(r, node, "srvreload", "networking", func(tc *taskCtx) error {
		return s.networkReload(tc, node, hn)
	}), nil
}
