package pvesim

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Changing the SDN configuration: create, update and delete of zones,
// vnets and subnets with pve-network's checks (PVE/API2/Network/SDN/*.pm
// and the plugins' on_update_hook); the change is pending until applied.
// Each checks the configuration lock where its Perl calls lock_sdn_config.

// sdnCheckZone runs the zone plugins' on_update_hook and the API's checks.
func (s *Server) sdnCheckZone(id string, z map[string]string, zones sdnSection) error {
	if d := z["dns"]; d != "" {
		return route.ParamErr("dns", d+" don't exist")
	}
	if d := z["reversedns"]; d != "" {
		return route.ParamErr("reversedns", d+" don't exist")
	}
	if z["dnszone"] != "" {
		return route.ParamErr("dnszone", "missing dns server")
	}
	if ip := z["ipam"]; ip != "" && ip != "pve" {
		return route.ParamErr("ipam", ip+" not existing")
	}
	switch z["type"] {
	case "simple":
	case "vxlan":
		if (z["peers"] != "") == (z["fabric"] != "") {
			msg := "must have exactly one of peers / fabric defined"
			return route.ParamError(map[string]string{"peers": msg, "fabric": msg})
		}
	case "evpn":
		c := s.sdn().Controllers[z["controller"]]
		if c == nil {
			return route.Fail("controller %s don't exist", z["controller"])
		}
		if c["type"] != "evpn" {
			return route.Fail("%s is not a evpn controller type", z["controller"])
		}
		for _, other := range sortedKeys(zones) {
			if other != id && zones[other]["vrf-vxlan"] == z["vrf-vxlan"] {
				return route.Fail("vrf-vxlan %s is already declared in %s", z["vrf-vxlan"], other)
			}
		}
		if z["mac"] == "" {
			z["mac"] = s.randomMAC()
		}
	}
	return nil
}

func (s *Server) sdnZoneCreate(r *route.Request) (any, error) {
	st := s.sdn()
	id := r.Str("zone")
	p := sdnParams(r, "zone")
	typ := p["type"]
	opts := sdnZoneOptions[typ]
	if err := checkSectionOptions(opts, p, true); err != nil {
		return nil, err
	}
	if err := s.sdnCheckLock(r, "create sdn zone object failed"); err != nil {
		return nil, err
	}
	if _, exists := st.Zones[id]; exists {
		return nil, route.Fail("create sdn zone object failed: sdn zone object ID '%s' already defined", id)
	}
	if typ == "faucet" {
		return nil, route.Fail("create sdn zone object failed: faucet zones are not supported by the simulator")
	}
	work := st.Zones.clone()
	work[id] = p
	if err := s.sdnCheckZone(id, p, work); err != nil {
		return nil, err
	}
	st.Zones = work
	return nil, nil
}

func (s *Server) sdnCheckDigest(r *route.Request, sec sdnSection) error {
	if d := r.Str("digest"); d != "" && d != sec.digest() {
		return route.Fail("detected modified configuration - file changed by other user? Try again.")
	}
	return nil
}

// sdnApplyDelete is SectionConfig::delete_from_config.
func sdnApplyDelete(o map[string]string, opts map[string]bool, params map[string]string, del string) error {
	for _, k := range splitList(del) {
		req, ok := opts[k]
		if !ok {
			return route.Fail("no such option '%s'", k)
		}
		if req {
			return route.Fail("unable to delete required option '%s'", k)
		}
		if _, set := params[k]; set {
			return route.Fail("cannot set and delete property '%s' at the same time!", k)
		}
		delete(o, k)
	}
	return nil
}

func (s *Server) sdnZoneUpdate(r *route.Request) (any, error) {
	if err := s.sdnCheckLock(r, "update sdn zone object failed"); err != nil {
		return nil, err
	}
	st := s.sdn()
	id := r.Str("zone")
	if err := s.sdnCheckDigest(r, st.Zones); err != nil {
		return nil, err
	}
	cur, ok := st.Zones[id]
	if !ok {
		return nil, route.Fail("update sdn zone object failed: sdn zone '%s' does not exist", id)
	}
	p := sdnParams(r, "zone")
	opts := sdnZoneOptions[cur["type"]]
	if err := checkSectionOptions(opts, p, false); err != nil {
		return nil, err
	}
	work := st.Zones.clone()
	z := work[id]
	if err := sdnApplyDelete(z, opts, p, r.Str("delete")); err != nil {
		return nil, err
	}
	oldIpam := z["ipam"]
	for k, v := range p {
		z[k] = v
	}
	if z["ipam"] != oldIpam {
		for _, sid := range sortedKeys(st.Subnets) {
			if strings.HasPrefix(sid, id+"-") {
				return nil, route.ParamErr("ipam", "can't change ipam if a subnet is already defined in this zone")
			}
		}
	}
	if err := s.sdnCheckZone(id, z, work); err != nil {
		return nil, err
	}
	st.Zones = work
	return nil, nil
}

func (s *Server) sdnZoneDelete(r *route.Request) (any, error) {
	if err := s.sdnCheckLock(r, "delete sdn zone object failed"); err != nil {
		return nil, err
	}
	st := s.sdn()
	id := r.Str("zone")
	if _, ok := st.Zones[id]; !ok {
		return nil, route.Fail("delete sdn zone object failed: sdn zone '%s' does not exist", id)
	}
	for _, vid := range sortedKeys(st.Vnets) {
		if st.Vnets[vid]["zone"] == id {
			return nil, route.Fail("delete sdn zone object failed: zone %s is used by vnet %s", id, vid)
		}
	}
	delete(st.Zones, id)
	return nil, nil
}

// sdnCheckVnet runs the zone plugin's vnet_update_hook and the vnet's own hook.
func (s *Server) sdnCheckVnet(id string, vnets sdnSection) error {
	st := s.sdn()
	v := vnets[id]
	z := st.Zones[v["zone"]]
	if z == nil {
		return route.Fail("unknown section type '%s'", "")
	}
	tag, hasTag := v["tag"], v["tag"] != ""
	n, _ := strconv.Atoi(tag)
	sameTag := func(scope func(other map[string]string) bool, msg func(other string) string) error {
		for _, other := range sortedKeys(vnets) {
			if other != id && scope(vnets[other]) && vnets[other]["tag"] == tag {
				return route.ParamErr("tag", msg(other))
			}
		}
		return nil
	}
	switch z["type"] {
	case "simple":
		if hasTag {
			return route.ParamErr("tag", "vlan tag is not allowed on simple zone")
		}
	case "vlan":
		if !hasTag {
			return route.ParamErr("tag", "missing vlan tag")
		}
		if n > 4096 {
			return route.ParamErr("tag", "vlan tag max value is 4096")
		}
		if err := sameTag(func(o map[string]string) bool { return o["zone"] == v["zone"] },
			func(o string) string { return fmt.Sprintf("tag %s already exist in vnet %s", tag, o) }); err != nil {
			return err
		}
	case "qinq":
		if n > 4096 {
			return route.ParamErr("tag", "VLAN tag maximal value is 4096")
		}
		if hasTag {
			if err := sameTag(func(o map[string]string) bool { return o["zone"] == v["zone"] },
				func(o string) string {
					return fmt.Sprintf("tag %s already exist in zone %s vnet %s", tag, v["zone"], o)
				}); err != nil {
				return err
			}
		}
	case "vxlan", "evpn":
		if !hasTag {
			return route.ParamErr("tag", "missing vxlan tag")
		}
		if n > 16777216 {
			return route.ParamErr("tag", "vxlan tag max value is 16777216")
		}
		if err := sameTag(func(o map[string]string) bool {
			t := st.Zones[o["zone"]]["type"]
			return t == "vxlan" || t == "evpn"
		}, func(o string) string { return fmt.Sprintf("tag %s already exist in vnet %s", tag, o) }); err != nil {
			return err
		}
	}
	if v["vlanaware"] == "1" && s.sdnVnetHasSubnets(id) {
		return route.ParamErr("vlanaware", "vlanaware vnet is not compatible with subnets")
	}
	return nil
}

func (s *Server) sdnVnetHasSubnets(vnet string) bool {
	for _, o := range s.sdn().Subnets {
		if o["vnet"] == vnet {
			return true
		}
	}
	return false
}

func (s *Server) sdnVnetCreate(r *route.Request) (any, error) {
	if err := s.sdnCheckLock(r, "create sdn vnet object failed"); err != nil {
		return nil, err
	}
	st := s.sdn()
	id := r.Str("vnet")
	p := sdnParams(r, "vnet")
	p["type"] = "vnet"
	if _, exists := st.Vnets[id]; exists {
		return nil, route.Fail("create sdn vnet object failed: sdn vnet object ID '%s' already defined", id)
	}
	work := st.Vnets.clone()
	work[id] = p
	if err := s.sdnCheckVnet(id, work); err != nil {
		return nil, err
	}
	st.Vnets = work
	return nil, nil
}

func (s *Server) sdnVnetUpdate(r *route.Request) (any, error) {
	if err := s.sdnCheckLock(r, "update sdn vnet object failed"); err != nil {
		return nil, err
	}
	st := s.sdn()
	id := r.Str("vnet")
	if err := s.sdnCheckDigest(r, st.Vnets); err != nil {
		return nil, err
	}
	if _, ok := st.Vnets[id]; !ok {
		return nil, route.Fail("update sdn vnet object failed: sdn vnet '%s' does not exist", id)
	}
	p := sdnParams(r, "vnet")
	work := st.Vnets.clone()
	v := work[id]
	opts := map[string]bool{"zone": true, "tag": false, "alias": false, "vlanaware": false, "isolate-ports": false}
	if err := sdnApplyDelete(v, opts, p, r.Str("delete")); err != nil {
		if strings.Contains(err.Error(), "required option 'zone'") {
			return nil, route.ParamErr("zone", "cannot delete zone")
		}
		return nil, err
	}
	if nz, ok := p["zone"]; ok && nz != v["zone"] && s.sdnVnetHasSubnets(id) {
		return nil, route.ParamErr("zone", "can't change zone if subnets exist")
	}
	for k, val := range p {
		v[k] = val
	}
	if err := s.sdnCheckVnet(id, work); err != nil {
		return nil, err
	}
	st.Vnets = work
	return nil, nil
}

func (s *Server) sdnVnetDelete(r *route.Request) (any, error) {
	if err := s.sdnCheckLock(r, "delete sdn vnet object failed"); err != nil {
		return nil, err
	}
	st := s.sdn()
	id := r.Str("vnet")
	if _, ok := st.Vnets[id]; !ok {
		return nil, route.Fail("delete sdn vnet object failed: sdn vnet '%s' does not exist", id)
	}
	if s.sdnVnetHasSubnets(id) {
		return nil, route.ParamErr("vnet", "Can't delete vnet if subnets exists")
	}
	delete(st.Vnets, id)
	return nil, nil
}

// sdnSubnetID resolves the {subnet} of a path ("zone-10.0.0.0-24" or a CIDR).
func (s *Server) sdnSubnetID(r *route.Request) (string, error) {
	id := r.Str("subnet")
	vnet := r.Str("vnet")
	if strings.Contains(id, "/") {
		v := s.sdn().Vnets[vnet]
		if v == nil {
			v = s.sdn().running("vnets")[vnet]
		}
		id = v["zone"] + "-" + strings.Replace(id, "/", "-", 1)
	}
	o := s.sdn().Subnets[id]
	if o == nil {
		o = s.sdn().running("subnets")[id]
	}
	if o == nil {
		return "", route.Fail("sdn subnet '%s' does not exist", id)
	}
	if o["vnet"] != vnet {
		return "", route.ParamErr("vnet", "wrong vnet")
	}
	return id, nil
}

// sdnCheckSubnet is the subnet plugin's on_update_hook.
func (s *Server) sdnCheckSubnet(id string, o map[string]string) error {
	parts := strings.Split(id, "-")
	cidr := parts[1] + "/" + parts[2]
	v := s.sdn().Vnets[o["vnet"]]
	if v == nil {
		return route.ParamErr("vnet", o["vnet"]+" don't exist")
	}
	if v["vlanaware"] == "1" {
		return route.ParamErr("vnet", "you can't add a subnet on a vlanaware vnet")
	}
	pf, err := netip.ParsePrefix(cidr)
	if err != nil {
		return route.ParamErr("subnet", "value does not look like a valid CIDR network")
	}
	if gw := o["gateway"]; gw != "" {
		a, err := netip.ParseAddr(gw)
		pointToPoint := a.Is4() && pf.Bits() == 32
		if err != nil || (!pf.Contains(a) && !pointToPoint) {
			return route.ParamErr("gateway", fmt.Sprintf("%s is not in subnet %s", gw, cidr))
		}
	}
	for _, rng := range splitRanges(o["dhcp-range"]) {
		start, end := rng["start-address"], rng["end-address"]
		sa, err1 := netip.ParseAddr(start)
		ea, err2 := netip.ParseAddr(end)
		if err1 != nil {
			return route.ParamErr("dhcp-range", "start-address is not a valid IP "+start)
		}
		if err2 != nil {
			return route.ParamErr("dhcp-range", "end-address is not a valid IP "+end)
		}
		if !pf.Contains(sa) {
			return route.ParamErr("dhcp-range", fmt.Sprintf("start-address %s is not in subnet %s", start, cidr))
		}
		if !pf.Contains(ea) {
			return route.ParamErr("dhcp-range", fmt.Sprintf("end-address %s is not in subnet %s", end, cidr))
		}
		if ea.Less(sa) {
			return route.ParamErr("dhcp-range", "start-address must be before end-address")
		}
	}
	return nil
}

// splitRanges parses the NUL-joined dhcp-range values.
func splitRanges(v string) []map[string]string {
	var out []map[string]string
	if v == "" {
		return nil
	}
	for _, item := range strings.Split(v, "\x00") {
		m, err := parsePropString(route.NamedProps("pve-sdn-dhcp-range"), item, "dhcp-range")
		if err == nil {
			out = append(out, m)
		}
	}
	return out
}

func (s *Server) sdnSubnetCreate(r *route.Request) (any, error) {
	if err := s.sdnCheckLock(r, "create sdn subnet object failed"); err != nil {
		return nil, err
	}
	st := s.sdn()
	vnet := r.Str("vnet")
	cidr := r.Str("subnet")
	if !strings.Contains(cidr, "/") {
		return nil, route.ParamErr("subnet", "value does not look like a valid CIDR network")
	}
	v := st.Vnets[vnet]
	zone := ""
	if v != nil {
		zone = v["zone"]
	}
	id := zone + "-" + strings.Replace(cidr, "/", "-", 1)
	p := sdnParams(r, "subnet")
	if _, exists := st.Subnets[id]; exists {
		return nil, route.Fail("create sdn subnet object failed: sdn subnet object ID '%s' already defined", id)
	}
	if err := s.sdnCheckSubnet(id, p); err != nil {
		return nil, err
	}
	work := st.Subnets.clone()
	work[id] = p
	st.Subnets = work
	return nil, nil
}

func (s *Server) sdnSubnetUpdate(r *route.Request) (any, error) {
	if err := s.sdnCheckLock(r, "update sdn subnet object failed"); err != nil {
		return nil, err
	}
	st := s.sdn()
	id, err := s.sdnSubnetID(r)
	if err != nil {
		return nil, err
	}
	if err := s.sdnCheckDigest(r, st.Subnets); err != nil {
		return nil, err
	}
	if st.Subnets[id] == nil {
		return nil, route.Fail("sdn subnet '%s' does not exist", id)
	}
	p := sdnParams(r, "subnet")
	work := st.Subnets.clone()
	o := work[id]
	opts := map[string]bool{"vnet": true, "gateway": false, "snat": false, "dnszoneprefix": false, "dhcp-range": false, "dhcp-dns-server": false}
	if err := sdnApplyDelete(o, opts, p, r.Str("delete")); err != nil {
		return nil, err
	}
	for k, v := range p {
		o[k] = v
	}
	if err := s.sdnCheckSubnet(id, o); err != nil {
		return nil, err
	}
	st.Subnets = work
	return nil, nil
}

func (s *Server) sdnSubnetDelete(r *route.Request) (any, error) {
	if err := s.sdnCheckLock(r, "delete sdn subnet object failed"); err != nil {
		return nil, err
	}
	st := s.sdn()
	id, err := s.sdnSubnetID(r)
	if err != nil {
		return nil, err
	}
	delete(st.Subnets, id)
	return nil, nil
}
