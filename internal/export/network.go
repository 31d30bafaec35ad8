package export

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
)

// netReaders read the interface keys the Network table manages, by manifest
// path (pvefields.FieldPaths; type, iface and comments are read apart).
var netReaders = map[string]func(s *manifest.NetworkSpec, k, v string){
	"spec.ports":         func(s *manifest.NetworkSpec, _, v string) { s.Ports = strings.Fields(v) },
	"spec.vlanAware":     func(s *manifest.NetworkSpec, _, v string) { s.VLANAware = pvefields.ParseBool(v) },
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
	"spec.autostart":     func(s *manifest.NetworkSpec, _, v string) { s.Autostart = boolP(pvefields.ParseBool(v)) },
}

// exportedNet is an interface worth a manifest.
type exportedNet struct {
	node string
	cfg  pve.ConfigValues
}

// exportNetworks reads the bridges, bonds and VLANs of the read nodes,
// leaving out the management interfaces: those holding a default gateway
// (the node's own address).
func (es *cluster) exportNetworks() []Exported {
	var list []exportedNet
	count := map[string]int{}
	for _, node := range slices.Sorted(maps.Keys(es.Networks)) {
		for _, cfg := range es.Networks[node].Interfaces {
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
		owned, comment := engine.ParseOwned(n.cfg["comments"])
		s := manifest.NetworkSpec{Type: n.cfg["type"], Comments: comment}
		if name != iface {
			s.Iface = iface
		}
		paths := pvefields.FieldPaths(engine.KindNetwork)
		for _, k := range slices.Sorted(maps.Keys(paths)) {
			read := netReaders[paths[k]]
			if read == nil {
				continue // type, iface, comments
			}
			if k == "bridge_ports" && s.Type != "bridge" || k == "slaves" && s.Type != "bond" {
				continue
			}
			if (k == "vlan-id" || k == "vlan-raw-device") && strings.Contains(iface, ".") {
				continue
			}
			if v, ok := n.cfg[k]; ok && v != "" {
				read(&s, k, v)
			}
		}
		if s.Autostart == nil {
			s.Autostart = boolP(false)
		}
		var notes []string
		if !owned {
			notes = append(notes, "proxmops does not own this interface: the plan reports it as a Conflict and leaves it alone until its comments on the node carry "+engine.OwnerMark)
		}
		out = append(out, Exported{Dir: manifest.KindNetwork.Info().Folder, File: name + ".yaml", Notes: notes,
			Resource: &manifest.Network{Object: manifest.Object{Metadata: manifest.Metadata{Name: name, Node: n.node}}, Spec: s}})
	}
	return out
}

// zoneReaders read the zone options the engine's SdnZone spec writes, by key.
var zoneReaders = map[string]func(s *manifest.SdnZoneSpec, v string){
	"bridge":            func(s *manifest.SdnZoneSpec, v string) { s.Bridge = v },
	"tag":               func(s *manifest.SdnZoneSpec, v string) { s.Tag, _ = atoiOK(v) },
	"vlan-protocol":     func(s *manifest.SdnZoneSpec, v string) { s.VLANProtocol = v },
	"peers":             func(s *manifest.SdnZoneSpec, v string) { s.Peers = splitSDNList(v) },
	"controller":        func(s *manifest.SdnZoneSpec, v string) { s.Controller = v },
	"vrf-vxlan":         func(s *manifest.SdnZoneSpec, v string) { s.VRFVXLAN, _ = atoiOK(v) },
	"exitnodes":         func(s *manifest.SdnZoneSpec, v string) { s.ExitNodes = splitSDNList(v) },
	"advertise-subnets": func(s *manifest.SdnZoneSpec, v string) { s.AdvertiseSubnets = pvefields.ParseBool(v) },
	"mtu":               func(s *manifest.SdnZoneSpec, v string) { s.MTU, _ = atoiOK(v) },
	"nodes":             func(s *manifest.SdnZoneSpec, v string) { s.Nodes = splitSDNList(v) },
	"ipam":              func(s *manifest.SdnZoneSpec, v string) { s.IPAM = v },
	"dns":               func(s *manifest.SdnZoneSpec, v string) { s.DNS = v },
	"reversedns":        func(s *manifest.SdnZoneSpec, v string) { s.ReverseDNS = v },
	"dnszone":           func(s *manifest.SdnZoneSpec, v string) { s.DNSZone = v },
	"dhcp":              func(s *manifest.SdnZoneSpec, v string) { s.DHCP = v },
}

func splitSDNList(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == ' ' })
}

// exportSDN reads the SDN zones and vnets (only when asked), as they will
// be once pending changes are applied. Each zone is checked against the
// engine's own reading of it (engine.ZoneDrift): an option the manifest
// cannot say is noted.
func (es *cluster) exportSDN() (out []Exported, skipped []string) {
	for _, z := range es.Zones {
		if z.State == "deleted" {
			continue
		}
		switch z.Config["type"] {
		case "simple", "vlan", "qinq", "vxlan", "evpn":
		default:
			skipped = append(skipped, fmt.Sprintf("SDN zone %s: a %s zone, which SdnZone does not declare", z.ID, z.Config["type"]))
			continue
		}
		s := manifest.SdnZoneSpec{Type: z.Config["type"]}
		for _, k := range slices.Sorted(maps.Keys(zoneReaders)) {
			if v := z.Config[k]; v != "" {
				zoneReaders[k](&s, v)
			}
		}
		m := &manifest.SdnZone{Object: manifest.Object{Metadata: manifest.Metadata{Name: z.ID}}, Spec: s}
		var notes []string
		if f := engine.ZoneDrift(m, z.Config); f != "" {
			notes = append(notes, fmt.Sprintf("the manifest cannot say the zone's %s as it is: review it", f))
		}
		notes = append(notes, "Proxmox zones have no comment: proxmops changes this zone only once every vnet in it is its own")
		out = append(out, Exported{Dir: manifest.KindSdnZone.Info().Folder, File: "zone-" + z.ID + ".yaml", Notes: notes, Resource: m})
	}
	for _, v := range es.Vnets {
		if v.State == "deleted" {
			continue
		}
		owned, alias := engine.ParseOwned(engine.VnetAlias(v))
		s := manifest.SdnVnetSpec{Zone: engine.VnetZone(v), Alias: alias, VLANAware: pvefields.ParseBool(v.Config["vlanaware"]),
			IsolatePorts: pvefields.ParseBool(v.Config["isolate-ports"])}
		s.Tag, _ = atoiOK(v.Config["tag"])
		for _, sub := range es.Subnets[v.ID] {
			if sub.State == "deleted" {
				continue
			}
			c := sub.Config
			ms := manifest.Subnet{Subnet: engine.SubnetCIDR(sub), Gateway: c["gateway"], SNAT: pvefields.ParseBool(c["snat"]),
				DHCPDNSServer: c["dhcp-dns-server"], DNSZonePrefix: c["dnszoneprefix"]}
			for _, r := range strings.Fields(pvefields.NormalRanges(c["dhcp-range"])) {
				if a, b, ok := strings.Cut(r, "-"); ok {
					ms.DHCPRange = append(ms.DHCPRange, manifest.DHCPRange{Start: a, End: b})
				}
			}
			s.Subnets = append(s.Subnets, ms)
		}
		var notes []string
		if !owned {
			notes = append(notes, "proxmops does not own this vnet: the plan reports it as a Conflict and leaves it alone until its alias carries "+engine.OwnerMark)
		}
		out = append(out, Exported{Dir: manifest.KindSdnVnet.Info().Folder, File: "vnet-" + v.ID + ".yaml", Notes: notes,
			Resource: &manifest.SdnVnet{Object: manifest.Object{Metadata: manifest.Metadata{Name: v.ID}}, Spec: s}})
	}
	return out, skipped
}
