package engine

import (
	"testing"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pvefields"
)

// Every key the engine manages has its manifest field in FieldPaths, so the
// drawer never shows a managed value apart from its manifest row.
func TestFieldPathsNameEveryManagedKey(t *testing.T) {
	for _, tc := range []struct {
		kind string
		keys []string
	}{
		{KindNetwork, append([]string{"type", "iface", "comments"}, networkKeys()...)},
		{KindSdnZone, append([]string{"type", "zone"}, keysOf(fullZone().Options)...)},
		{KindSdnVnet, append([]string{"zone", "alias", "vnet"}, vnetOptionKeys...)},
	} {
		paths := pvefields.FieldPaths(tc.kind)
		for _, k := range tc.keys {
			if paths[k] == "" {
				t.Errorf("%s: FieldPaths has no manifest field for %s", tc.kind, k)
			}
		}
	}
	if p := pvefields.FieldPaths(KindVirtualMachine); p != nil {
		t.Errorf("a guest's keys are its manifest's, got %v", p)
	}
	// A copy: the caller may not change the engine's table.
	pvefields.FieldPaths(KindNetwork)["mtu"] = "x"
	if pvefields.FieldPaths(KindNetwork)["mtu"] != "spec.mtu" {
		t.Fatal("FieldPaths handed out the engine's own table")
	}
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// fullZone is a zone declaring every option zoneFromManifest writes.
func fullZone() *SdnZoneSpec {
	return zoneFromManifest(&manifest.SdnZone{Object: manifest.Object{Metadata: manifest.Metadata{Name: "z"}}, Spec: manifest.SdnZoneSpec{
		Type: "evpn", Bridge: "vmbr0", Tag: 10, VLANProtocol: "802.1q", Peers: []string{"10.0.0.1"}, Controller: "c",
		VRFVXLAN: 100, ExitNodes: []string{"pve1"}, AdvertiseSubnets: true, MTU: 1450, Nodes: []string{"pve1"},
		IPAM: "pve", DNS: "d", ReverseDNS: "r", DNSZone: "example.org", DHCP: "dnsmasq"}}, nil)
}

// networkKeys are the keys networkParams manages for a bridge, a bond and
// a VLAN declaring every field.
func networkKeys() []string {
	var out []string
	for _, s := range []*NetworkSpec{
		{Type: "bridge", Ports: []string{"eno1"}, VLANAware: true, VLANIDs: "2-4094", CIDR: "10.0.0.2/24", Gateway: "10.0.0.1",
			CIDR6: "fd00::2/64", Gateway6: "fd00::1", MTU: 9000, Autostart: true},
		{Type: "bond", Ports: []string{"eno1", "eno2"}, BondMode: "active-backup", HashPolicy: "layer2", BondPrimary: "eno1"},
		{Type: "vlan", Iface: "vlan10", VLANID: 10, VLANRawDevice: "eno1"},
	} {
		for _, p := range networkParams(s) {
			out = append(out, p.key)
		}
	}
	return out
}
