package pvefields

import (
	"fmt"
	"maps"
	"reflect"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
)

// The one mapping of Proxmox keys to manifest paths. Guest fields carry
// their path from their row of the guest field tables (qemu.go,
// container.go), also where the key is renamed; every other change finds
// its path here, in the engine's Plan.finish: first the kind's row of
// keyPaths (the keys that are not the manifest's field names: a host
// interface's bridge_ports, an SDN zone's vlan-protocol), then the
// manifest's own struct tags (a field whose JSON name is its Proxmox key
// needs no entry). FieldPaths hands the same rows to the UI, whose drawer
// aligns each cluster value with its manifest row.

// keyPaths are, per kind, the Proxmox keys whose manifest field is not
// named after them.
var keyPaths = map[string]map[string]string{
	string(manifest.KindNetwork): {"type": "spec.type", "iface": "spec.iface", "comments": "spec.comments",
		"bridge_ports": "spec.ports", "slaves": "spec.ports", "bridge_vlan_aware": "spec.vlanAware",
		"bridge_vids": "spec.vlanIds", "bond_mode": "spec.bondMode", "bond_xmit_hash_policy": "spec.hashPolicy",
		"bond-primary": "spec.bondPrimary", "vlan-id": "spec.vlanId", "vlan-raw-device": "spec.vlanRawDevice",
		"cidr": "spec.cidr", "gateway": "spec.gateway", "cidr6": "spec.cidr6", "gateway6": "spec.gateway6",
		"mtu": "spec.mtu", "autostart": "spec.autostart"},
	// The zone options zoneFromManifest writes.
	string(manifest.KindSdnZone): {"zone": "metadata.name", "type": "spec.type", "bridge": "spec.bridge", "tag": "spec.tag",
		"vlan-protocol": "spec.vlanProtocol", "peers": "spec.peers", "controller": "spec.controller",
		"vrf-vxlan": "spec.vrfVxlan", "exitnodes": "spec.exitNodes", "advertise-subnets": "spec.advertiseSubnets",
		"mtu": "spec.mtu", "nodes": "spec.nodes", "ipam": "spec.ipam", "dns": "spec.dns",
		"reversedns": "spec.reverseDns", "dnszone": "spec.dnsZone", "dhcp": "spec.dhcp"},
	// The vnet keys: vnetOptionKeys, zone, alias.
	string(manifest.KindSdnVnet): {"vnet": "metadata.name", "zone": "spec.zone", "alias": "spec.alias", "tag": "spec.tag",
		"vlanaware": "spec.vlanAware", "isolate-ports": "spec.isolatePorts"},
	// An HA rule's keys: its guests' HA resource ids, the disable flag.
	string(manifest.KindHARule): {"rule": "metadata.name", "resources": "spec.guests", "disable": "spec.enabled"},
}

// FieldPaths maps the Proxmox keys of a kind's observed configuration to the
// manifest fields they come from, for the kinds whose keys are not the
// manifest's field names (Network, SdnZone, SdnVnet, HARule); nil for the others.
// The drawer's aligned diff puts each cluster value on its manifest row with it.
func FieldPaths(kind string) map[string]string { return maps.Clone(keyPaths[kind]) }

// KeyPath is the manifest path of one key of FieldPaths(kind), "" when the
// key is named like its manifest field.
func KeyPath(kind, key string) string { return keyPaths[kind][key] }

// Paths maps the Proxmox keys a manifest's fields become to the
// manifest paths they come from: "cores" -> "spec.cores", "net1" ->
// "spec.net[1]" (by the entry's slot, not its index: a slot may be set by
// hand), "vlan-protocol" -> "spec.vlanProtocol" (keyPaths).
type Paths struct {
	top   map[string]string       // lower-case key -> path
	elems map[string]reflect.Type // slot -> element type, for sub-keys
}

// PathsOf maps the keys of r's manifest fields to their paths; nil for
// a resource without a spec (one only on the cluster).
func PathsOf(r manifest.Resource) *Paths {
	v := reflect.ValueOf(r)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	spec := v.FieldByName("Spec")
	for spec.IsValid() && spec.Kind() == reflect.Pointer {
		if spec.IsNil() {
			return nil
		}
		spec = spec.Elem()
	}
	if !spec.IsValid() || spec.Kind() != reflect.Struct {
		return nil
	}
	fp := &Paths{top: map[string]string{"tags": "metadata.tags", "name": "metadata.name"}, elems: map[string]reflect.Type{}}
	fp.addStruct(spec, "spec")
	maps.Copy(fp.top, keyPaths[string(r.Kind())])
	return fp
}

// addStruct records the fields of s (embedded structs flattened).
func (fp *Paths) addStruct(s reflect.Value, prefix string) {
	t := s.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			fp.addStruct(s.Field(i), prefix)
			continue
		}
		name := jsonName(f)
		if name == "" {
			continue
		}
		path := prefix + "." + name
		fp.top[strings.ToLower(name)] = path
		fv := s.Field(i)
		if fv.Kind() != reflect.Slice || f.Type.Elem().Kind() != reflect.Struct {
			continue
		}
		if _, ok := f.Type.Elem().FieldByName("Slot"); !ok {
			continue
		}
		for j := range fv.Len() {
			if slot := fv.Index(j).FieldByName("Slot").String(); slot != "" {
				fp.top[slot] = fmt.Sprintf("%s[%d]", path, j)
				fp.elems[slot] = f.Type.Elem()
			}
		}
	}
}

func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// Path is the manifest path of a change's field, or "" when unknown.
// "net1.bridge" is "spec.net[1].bridge" when the entry has a field bridge.
func (fp *Paths) Path(field string) string {
	if fp == nil {
		return ""
	}
	if p, ok := fp.top[field]; ok {
		return p
	}
	if p, ok := fp.top[strings.ToLower(field)]; ok {
		return p
	}
	head, sub, ok := strings.Cut(field, ".")
	if !ok {
		return ""
	}
	p, ok := fp.top[head]
	if !ok {
		return ""
	}
	if et, ok := fp.elems[head]; ok {
		for i := range et.NumField() {
			if n := jsonName(et.Field(i)); n != "" && strings.EqualFold(n, sub) {
				return p + "." + n
			}
		}
	}
	return p
}
