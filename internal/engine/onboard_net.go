package engine

import (
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
)

// netReaders read the interface keys the Network table manages (netPaths),
// by manifest path.
var netReaders = map[string]func(s *manifest.NetworkSpec, k, v string){
	"spec.ports":         func(s *manifest.NetworkSpec, _, v string) { s.Ports = strings.Fields(v) },
	"spec.vlanAware":     func(s *manifest.NetworkSpec, _, v string) { s.VLANAware = truthy(v) },
	"spec.vlanIds":       func(s *manifest.NetworkSpec, _, v string) { s.VLANIDs = v },
	"spec.bondMode":      func(s *manifest.NetworkSpec, _, v string) { s.BondMode = v },
	"spec.hashPolicy":    func(s *manifest.NetworkSpec, _, v string) { s.HashPolicy = v },
	"spec.bondPrimary":   func(s *manifest.NetworkSpec, _, v string) { s.BondPrimary = v },
	"spec.vlanId":        func(s *manifest.NetworkSpec, _, v string) { s.VLANID, _ = atoiOK(v) },
	"spec.vlanRawDevice": func(s *manifest.NetworkSpec, _, v string) { s.VLANRawDevice = v },
	"spec.cidr":          func(s *manifest.NetworkSpec, _, v string) { s.CIDR = v },
	"spec.gateway":       func(s *manifest.NetworkSpec, _, v string) { s.Gateway = v },
	"spec.cidr6":         func(s *manifest.NetworkSpec, _, v string) { s.CIDR6 = v },
	"spec.gateway6":      func(s *manifest.NetworkSpec, _, v string) { s.Gateway6 = v },
	"spec.mtu":           func(s *manifest.NetworkSpec, _, v string) { s.MTU, _ = atoiOK(v) },
	"spec.autostart":     func(s *manifest.NetworkSpec, _, v string) { s.Autostart = boolP(truthy(v)) },
}

// exportedNet is an interface worth a manifest.
type exportedNet struct {
	node string
	cfg  pve.ConfigValues
}

// exportNetworks reads the bridges, bonds and VLANs of the read nodes,
// leaving out the management interfaces: those holding a default gateway
// (the node's own address).
func (es *ExportSnapshot) exportNetworks() []Exported {
	var list []exportedNet
	count := map[string]int{}
	for _, node := range sortedKeys(es.kinds.networks) {
		for _, cfg := range es.kinds.networks[node].Interfaces {
			switch cfg["type"] {
			case "bridge", "bond", "vlan":
			default:
				continue
			}
			if cfg["gateway"] != "" || cfg["gateway6"] != "" {
				continue
			}
			list = append(list, exportedNet{node, cfg})
			count[dnsLabel(cfg["iface"])]++
		}
	}
	var out []Exported
	for _, n := range list {
		iface := n.cfg["iface"]
		name := dnsLabel(iface)
		if count[name] > 1 {
			name = dnsLabel(n.node + "-" + iface)
		}
		owned, comment := parseOwned(n.cfg["comments"])
		s := manifest.NetworkSpec{Type: n.cfg["type"], Comments: comment}
		if name != iface {
			s.Iface = iface
		}
		for _, k := range sortedKeys(netPaths) {
			if k == "bridge_ports" && s.Type != "bridge" || k == "slaves" && s.Type != "bond" {
				continue
			}
			if (k == "vlan-id" || k == "vlan-raw-device") && strings.Contains(iface, ".") {
				continue
			}
			if v, ok := n.cfg[k]; ok && v != "" {
				netReaders[netPaths[k]](&s, k, v)
			}
		}
		if s.Autostart == nil {
			s.Autostart = boolP(false)
		}
		var notes []string
		if !owned {
			notes = append(notes, "proxmops does not own this interface: the plan reports it as a Conflict and leaves it alone until its comments on the node carry "+OwnerMark)
		}
		out = append(out, Exported{Dir: "networks", File: name + ".yaml", Notes: notes,
			Resource: &manifest.Network{Object: manifest.Object{Metadata: manifest.Metadata{Name: name, Node: n.node}}, Spec: s}})
	}
	return out
}

// exportSDN reads the SDN zones and vnets (only when asked).
func (es *ExportSnapshot) exportSDN() []Exported {
	return nil
}
