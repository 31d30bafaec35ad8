package pvefields_test

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pvefields"
)

// The manifest field of each Proxmox key the engine manages, written out by
// hand from the Proxmox keys (pve-common's network interface options,
// pve-network's zone and vnet plugins, pve-ha-manager's rules) and the
// manifest's field names, so a key dropped from, added to or re-pointed in
// the engine's table shows here.
var wantFieldPaths = map[string]map[string]string{
	string(manifest.KindNetwork): {
		"type": "spec.type", "iface": "spec.iface", "comments": "spec.comments",
		"autostart": "spec.autostart", "mtu": "spec.mtu",
		"bridge_ports": "spec.ports", "slaves": "spec.ports",
		"bridge_vlan_aware": "spec.vlanAware", "bridge_vids": "spec.vlanIds",
		"bond_mode": "spec.bondMode", "bond-primary": "spec.bondPrimary", "bond_xmit_hash_policy": "spec.hashPolicy",
		"vlan-id": "spec.vlanId", "vlan-raw-device": "spec.vlanRawDevice",
		"cidr": "spec.cidr", "cidr6": "spec.cidr6", "gateway": "spec.gateway", "gateway6": "spec.gateway6",
	},
	string(manifest.KindSdnZone): {
		"zone": "metadata.name", "type": "spec.type",
		"bridge": "spec.bridge", "tag": "spec.tag", "vlan-protocol": "spec.vlanProtocol", "mtu": "spec.mtu",
		"peers": "spec.peers", "controller": "spec.controller", "vrf-vxlan": "spec.vrfVxlan",
		"exitnodes": "spec.exitNodes", "advertise-subnets": "spec.advertiseSubnets", "nodes": "spec.nodes",
		"ipam": "spec.ipam", "dhcp": "spec.dhcp", "dns": "spec.dns", "reversedns": "spec.reverseDns", "dnszone": "spec.dnsZone",
	},
	string(manifest.KindSdnVnet): {
		"vnet": "metadata.name", "zone": "spec.zone", "alias": "spec.alias",
		"tag": "spec.tag", "vlanaware": "spec.vlanAware", "isolate-ports": "spec.isolatePorts",
	},
	// An HA rule's section id, its HA resource ids ("vm:100") and its
	// disable flag, which the manifest turns round as enabled.
	string(manifest.KindHARule): {"rule": "metadata.name", "resources": "spec.guests", "disable": "spec.enabled"},
}

// FieldPaths gives each key the manifest field the hand-written table
// names, no more keys and no fewer.
func TestFieldPathsMatchAHandWrittenTable(t *testing.T) {
	for kind, want := range wantFieldPaths {
		got := pvefields.FieldPaths(kind)
		for _, k := range slices.Sorted(maps.Keys(want)) {
			if got[k] != want[k] {
				t.Errorf("%s: key %s is at %q, want %q", kind, k, got[k], want[k])
			}
		}
		for _, k := range slices.Sorted(maps.Keys(got)) {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: key %s (at %s) is not known to this test", kind, k, got[k])
			}
		}
	}
	// Every kind with renamed keys is in the hand-written table: a kind
	// that gains a row in the engine's table fails here until it is.
	for _, k := range manifest.Kinds() {
		if _, ok := wantFieldPaths[string(k)]; !ok && pvefields.FieldPaths(string(k)) != nil {
			t.Errorf("%s has renamed keys %v this test does not know", k, pvefields.FieldPaths(string(k)))
		}
	}
	if p := pvefields.FieldPaths(string(manifest.KindVirtualMachine)); p != nil {
		t.Errorf("a guest's keys are its manifest's, got %v", p)
	}
	// A copy: the caller may not change the engine's table.
	pvefields.FieldPaths(string(manifest.KindNetwork))["mtu"] = "x"
	if p := pvefields.FieldPaths(string(manifest.KindNetwork))["mtu"]; p != "spec.mtu" {
		t.Fatalf("FieldPaths handed out the engine's own table: mtu now at %q", p)
	}
}

// Each path names a field the manifest really has: its spec's JSON names.
func TestFieldPathsAreManifestFields(t *testing.T) {
	specs := map[string]reflect.Type{
		string(manifest.KindNetwork): reflect.TypeFor[manifest.NetworkSpec](),
		string(manifest.KindSdnZone): reflect.TypeFor[manifest.SdnZoneSpec](),
		string(manifest.KindSdnVnet): reflect.TypeFor[manifest.SdnVnetSpec](),
		string(manifest.KindHARule):  reflect.TypeFor[manifest.HARuleSpec](),
	}
	for kind, spec := range specs {
		fields := map[string]bool{}
		for i := range spec.NumField() {
			name, _, _ := strings.Cut(spec.Field(i).Tag.Get("json"), ",")
			fields["spec."+name] = true
		}
		for key, path := range pvefields.FieldPaths(kind) {
			if path != "metadata.name" && !fields[path] {
				t.Errorf("%s: key %s points at %s, which %s does not have", kind, key, path, spec.Name())
			}
		}
	}
}
