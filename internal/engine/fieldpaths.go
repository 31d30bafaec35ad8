package engine

import "maps"

// zonePaths are the manifest fields of the SDN zone options zoneFromManifest
// writes (and zoneReaders reads back).
var zonePaths = map[string]string{"type": "spec.type", "bridge": "spec.bridge", "tag": "spec.tag",
	"vlan-protocol": "spec.vlanProtocol", "peers": "spec.peers", "controller": "spec.controller",
	"vrf-vxlan": "spec.vrfVxlan", "exitnodes": "spec.exitNodes", "advertise-subnets": "spec.advertiseSubnets",
	"mtu": "spec.mtu", "nodes": "spec.nodes", "ipam": "spec.ipam", "dns": "spec.dns",
	"reversedns": "spec.reverseDns", "dnszone": "spec.dnsZone", "dhcp": "spec.dhcp"}

// vnetPaths are the manifest fields of the vnet keys (vnetOptionKeys, zone, alias).
var vnetPaths = map[string]string{"zone": "spec.zone", "alias": "spec.alias", "tag": "spec.tag",
	"vlanaware": "spec.vlanAware", "isolate-ports": "spec.isolatePorts"}

// FieldPaths maps the Proxmox keys of a kind's observed configuration to the
// manifest fields they come from, for the kinds whose keys are not the
// manifest's field names (Network, SdnZone, SdnVnet); nil for the others.
// The drawer's aligned diff puts each cluster value on its manifest row with it.
func FieldPaths(kind string) map[string]string {
	var m map[string]string
	switch kind {
	case KindNetwork:
		m = maps.Clone(netPaths)
		m["type"], m["iface"], m["comments"] = "spec.type", "spec.iface", "spec.comments"
	case KindSdnZone:
		m = maps.Clone(zonePaths)
		m["zone"] = "metadata.name"
	case KindSdnVnet:
		m = maps.Clone(vnetPaths)
		m["vnet"] = "metadata.name"
	}
	return m
}
