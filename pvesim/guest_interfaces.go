package pvesim

// A guest's network interfaces as seen from inside: the QEMU guest agent's
// network-get-interfaces (qemu-server PVE/API2/Qemu/Agent.pm) and a
// container's interfaces (pve-container PVE/API2/LXC.pm "ip"). Clients
// read them for the addresses a guest got. The simulated guest has a
// loopback device and one device per NIC with the NIC's MAC address, its
// static addresses (a VM's ipconfigN, a container's ip=/ip6=; none for
// DHCP) and its IPv6 link-local address.

import (
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

func init() {
	registerRoutes(func(s *Server) {
		nv := route.NewParams(pNode(), pVMID())
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces",
			Perm: route.PermAny("/vms/{vmid}", "VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted"), ProxyTo: "node",
			Params: nv, Handler: s.onGuest(s.qemuGuest, s.agentNetworkInterfaces)})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/lxc/{vmid}/interfaces",
			Perm: route.PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node", Params: nv, Handler: s.lxcInterfaces})
	})
}

// guestIface is one device inside a guest.
type guestIface struct {
	name, mac string
	addrs     []netip.Prefix
}

// guestIfaces lists a guest's devices: lo, then one per netN in order,
// named as the guest names them (a container's name=, ens18 onwards for
// a VM's virtio NICs in their PCI slots).
func guestIfaces(g *Guest) []guestIface {
	out := []guestIface{{name: "lo", mac: "00:00:00:00:00:00",
		addrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/8"), netip.MustParsePrefix("::1/128")}}}
	for i := range lxcMaxNetworks {
		n := strconv.Itoa(i)
		raw, ok := g.Conf["net"+n]
		if !ok {
			continue
		}
		ifc, ipconf := guestIface{name: "ens" + strconv.Itoa(18+i)}, g.Conf["ipconfig"+n]
		if g.Type == "lxc" {
			ifc.name, ifc.mac, ipconf = propValue(raw, "name"), propValue(raw, "hwaddr"), raw
		} else if d, err := parsePropString(qemuNetFormat, raw, ""); err == nil {
			ifc.mac = d["macaddr"]
		}
		ifc.mac = strings.ToLower(ifc.mac)
		for _, key := range []string{"ip", "ip6"} {
			if p, err := netip.ParsePrefix(propValue(ipconf, key)); err == nil {
				ifc.addrs = append(ifc.addrs, p)
			}
		}
		if ll, ok := linkLocal(ifc.mac); ok {
			ifc.addrs = append(ifc.addrs, ll)
		}
		out = append(out, ifc)
	}
	return out
}

// linkLocal is the EUI-64 IPv6 link-local address a kernel gives a MAC.
func linkLocal(mac string) (netip.Prefix, bool) {
	hw, err := net.ParseMAC(mac)
	if err != nil || len(hw) != 6 {
		return netip.Prefix{}, false
	}
	a := [16]byte{0xfe, 0x80, 8: hw[0] ^ 2, hw[1], hw[2], 0xff, 0xfe, hw[3], hw[4], hw[5]}
	return netip.PrefixFrom(netip.AddrFrom16(a), 64), true
}

// agentNetworkInterfaces is the guest agent's network-get-interfaces after
// assert_agent_available (agent.go).
func (s *Server) agentNetworkInterfaces(r *route.Request, g *Guest) (any, error) {
	if err := s.assertAgentAvailable(g); err != nil {
		return nil, err
	}
	var list []map[string]any
	for _, ifc := range guestIfaces(g) {
		addrs := []map[string]any{}
		for _, p := range ifc.addrs {
			typ := "ipv4"
			if p.Addr().Is6() {
				typ = "ipv6"
			}
			addrs = append(addrs, map[string]any{"ip-address-type": typ, "ip-address": p.Addr().String(), "prefix": p.Bits()})
		}
		stats := map[string]any{}
		for _, k := range []string{"rx-bytes", "rx-dropped", "rx-errs", "rx-packets", "tx-bytes", "tx-dropped", "tx-errs", "tx-packets"} {
			stats[k] = 0
		}
		list = append(list, map[string]any{"name": ifc.name, "hardware-address": ifc.mac, "ip-addresses": addrs, "statistics": stats})
	}
	return map[string]any{"result": list}, nil
}

// lxcInterfaces is get_interfaces (pve-container src/PVE/LXC.pm): `ip
// --json a` in the container's network namespace, or null when it does
// not run (the config is not read: an unknown container is null too). The
// deprecated inet and inet6 keep the last address of each family.
func (s *Server) lxcInterfaces(r *route.Request) (any, error) {
	vmid, _ := r.Int("vmid")
	g := s.state.Guests[vmid]
	if g == nil || g.Type != "lxc" || g.Node != r.Str("node") || !g.Running {
		return nil, nil
	}
	var out []map[string]any
	for _, ifc := range guestIfaces(g) {
		m := map[string]any{"name": ifc.name, "hardware-address": ifc.mac, "hwaddr": ifc.mac}
		addrs := []map[string]any{}
		for _, p := range ifc.addrs {
			family := "inet"
			if p.Addr().Is6() {
				family = "inet6"
			}
			m[family] = p.String()
			addrs = append(addrs, map[string]any{"ip-address-type": family, "ip-address": p.Addr().String(), "prefix": p.Bits()})
		}
		m["ip-addresses"] = addrs
		out = append(out, m)
	}
	return out, nil
}
