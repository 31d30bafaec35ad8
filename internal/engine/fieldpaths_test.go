package engine

import (
	"testing"

	"github.com/proxmops/proxmops/internal/manifest"
)

// Every key the engine manages has its manifest field in FieldPaths, so the
// drawer never shows a managed value apart from its manifest row.
func TestFieldPathsNameEveryManagedKey(t *testing.T) {
	for _, tc := range []struct {
		kind string
		keys []string
	}{
		{KindNetwork, append([]string{"type", "iface", "comments"}, keysOf(netPaths)...)},
		{KindSdnZone, append([]string{"type", "zone"}, keysOf(fullZone().Options)...)},
		{KindSdnVnet, append([]string{"zone", "alias", "vnet"}, vnetOptionKeys...)},
	} {
		paths := FieldPaths(tc.kind)
		for _, k := range tc.keys {
			if paths[k] == "" {
				t.Errorf("%s: FieldPaths has no manifest field for %s", tc.kind, k)
			}
		}
	}
	if p := FieldPaths(KindVirtualMachine); p != nil {
		t.Errorf("a guest's keys are its manifest's, got %v", p)
	}
	// A copy: the caller may not change the engine's table.
	FieldPaths(KindNetwork)["mtu"] = "x"
	if netPaths["mtu"] != "spec.mtu" {
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
