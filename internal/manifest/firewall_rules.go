package manifest

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/pvefirewall"
)

// FirewallRule is one rule of an ordered rule list (a security group, the
// cluster's rules, a guest's rules): Proxmox's rule fields (pve-firewall
// Firewall.pm $rule_properties) in camelCase.
type FirewallRule struct {
	Type     string `json:"type" pm:"required,enum=in|out|forward|group" doc:"Direction: in, out, forward (security groups and the cluster list only), or group to apply the security group named by action."`
	Action   string `json:"action" pm:"required" doc:"ACCEPT, DROP or REJECT (not REJECT on forward); for type group, the security group's name."`
	Macro    string `json:"macro,omitempty" doc:"A pve-firewall macro (e.g. SSH, HTTP, Web, Ping): its protocol and ports, which the rule must not contradict."`
	Proto    string `json:"proto,omitempty" doc:"IP protocol: a name or number from /etc/protocols (tcp, udp, icmp, icmpv6, 47...)."`
	Dport    string `json:"dport,omitempty" doc:"Destination ports: numbers, service names or ranges (80:85), comma-separated, at most 15 numbers; needs a protocol with ports."`
	Sport    string `json:"sport,omitempty" doc:"Source ports, in dport's form."`
	Source   string `json:"source,omitempty" doc:"Source: addresses, networks or one range (a-b) of one IP version, comma-separated; or an alias (name, dc/name) or an IP set (+name, +dc/name)."`
	Dest     string `json:"dest,omitempty" doc:"Destination, in source's form."`
	Iface    string `json:"iface,omitempty" doc:"Network interface: a guest's netN; a node's interface name in the cluster list; not in a security group."`
	Log      string `json:"log,omitempty" pm:"enum=emerg|alert|crit|err|warning|notice|info|debug|nolog" doc:"Log level of the rule's matches."`
	Enable   *bool  `json:"enable,omitempty" doc:"Whether the rule is active (default true)."`
	Comment  string `json:"comment,omitempty" pm:"format=fw-comment" doc:"Comment (one line); proxmops adds its ownership mark where the list is shared."`
	ICMPType string `json:"icmpType,omitempty" doc:"ICMP type (e.g. echo-request) for proto icmp, icmpv6 or ipv6-icmp; not with dport."`
}

// Enabled is the rule's enable with its default.
func (r FirewallRule) Enabled() bool { return r.Enable == nil || *r.Enable }

// FirewallRuleScope is where a rule list lives, which decides the rule
// types and interfaces Proxmox allows ($rule_env_direction_lookup,
// $rule_env_iface_lookup).
type FirewallRuleScope string

const (
	FirewallRulesGroup   FirewallRuleScope = "group"   // a security group
	FirewallRulesCluster FirewallRuleScope = "cluster" // /cluster/firewall/rules
	FirewallRulesGuest   FirewallRuleScope = "guest"   // a VM's or container's rules
)

var fwScopeTypes = map[FirewallRuleScope][]string{
	FirewallRulesGroup:   {"in", "out", "forward"},
	FirewallRulesCluster: {"in", "out", "forward", "group"},
	FirewallRulesGuest:   {"in", "out", "group"},
}

var (
	// reFWRuleAction is verify_rule's action of an in, out or forward rule.
	reFWRuleAction = regexp.MustCompile(`^(ACCEPT|DROP|REJECT)$`)
	reFWAliasRef   = regexp.MustCompile(`^(dc/|guest/)?([A-Za-z][A-Za-z0-9_-]+)$`)
	reFWIPSetRef   = regexp.MustCompile(`^\+(guest/|dc/|sdn/)?([A-Za-z][A-Za-z0-9_-]+)$`)
	reFWPortRange  = regexp.MustCompile(`^([0-9]+):([0-9]+)$`)
	reFWPortNumber = regexp.MustCompile(`^[0-9]+$`)
	// reFWIface is pve-common's pve_verify_iface.
	reFWIface      = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.\-]*[a-zA-Z0-9]$`)
	reFWGuestIface = regexp.MustCompile(`^net[0-9]+$`)
)

// fwPortProtocols is $PROTOCOLS_WITH_PORTS.
var fwPortProtocols = wordSet("udp 17 udplite 136 tcp 6 dccp 33 sctp 132")

// MaxFirewallGroupName is $max_group_name_length.
const MaxFirewallGroupName = 18

// fwMacroPreferred is $pve_fw_preferred_macro_names: a macro's spelling by
// its lower-case name.
var fwMacroPreferred = func() map[string]string {
	out := map[string]string{}
	for _, m := range []map[string]string{fwMacros, fwMacrosV6} {
		for n := range m {
			out[strings.ToLower(n)] = n
		}
	}
	return out
}()

// checkFirewallRules checks a rule list with verify_rule's rules for its
// scope, normalises macro names to Proxmox's spelling (as verify_rule
// does), and records the IP sets, aliases and security groups the rules
// name as references of r.
func checkFirewallRules(r Resource, scope FirewallRuleScope, path string, rules []FirewallRule, c *checker) {
	for i := range rules {
		p := indexPath(path, i)
		rule := &rules[i]
		for _, e := range FirewallRuleErrors(scope, rule) {
			c.errorf(p+"."+e.Field, "%s", e.Msg)
		}
		addFirewallRuleRefs(r, p, rule)
	}
}

// FirewallRuleError is one problem of a rule: the manifest field (type,
// dport, icmpType...) and the message.
type FirewallRuleError struct{ Field, Msg string }

// FirewallRuleErrors checks one rule as verify_rule does for the scope,
// without the cluster's IP sets and aliases (their existence is a
// reference), and sets the macro's spelling to Proxmox's.
func FirewallRuleErrors(scope FirewallRuleScope, rule *FirewallRule) []FirewallRuleError {
	var errs []FirewallRuleError
	add := func(field, format string, args ...any) {
		errs = append(errs, FirewallRuleError{field, fmt.Sprintf(format, args...)})
	}
	checkFWRuleKind(scope, rule, add)
	if rule.Iface != "" {
		switch {
		case scope == FirewallRulesGroup:
			add("iface", "a security group's rule has no interface (the guest or node using the group decides)")
		case len(rule.Iface) < 2 || len(rule.Iface) > 20 || !reFWIface.MatchString(rule.Iface):
			add("iface", "invalid network interface name %q", rule.Iface)
		case scope == FirewallRulesGuest && !reFWGuestIface.MatchString(rule.Iface):
			add("iface", "a guest's rule names its network device as netN (net0, net1...), not %q", rule.Iface)
		}
	}
	if rule.Type == "group" {
		for _, f := range []struct{ name, v string }{{"macro", rule.Macro}, {"proto", rule.Proto}, {"dport", rule.Dport}, {"sport", rule.Sport},
			{"source", rule.Source}, {"dest", rule.Dest}, {"log", rule.Log}, {"icmpType", rule.ICMPType}} {
			if f.v != "" {
				add(f.name, "a group rule takes only action (the group), iface, enable and comment: Proxmox drops %s when it writes the rule", f.name)
			}
		}
		return errs
	}
	version := checkFWRuleProto(rule, add)
	for _, f := range []struct {
		name string
		v    *string
	}{{"source", &rule.Source}, {"dest", &rule.Dest}} {
		if *f.v == "" {
			continue
		}
		v, err := checkFirewallAddress(*f.v)
		if err != nil {
			add(f.name, "%v", err)
			continue
		}
		if v != 0 && version != 0 && v != version {
			add(f.name, "mixes IPv4 and IPv6 with the rule's other addresses or protocol")
		}
		if v != 0 {
			version = v
		}
	}
	if rule.Macro != "" {
		checkFWRuleMacro(rule, version, add)
	}
	return errs
}

// checkFWRuleKind checks the type and action for the scope.
func checkFWRuleKind(scope FirewallRuleScope, rule *FirewallRule, add func(string, string, ...any)) {
	if rule.Type == "" || rule.Action == "" {
		return // the decoder reports the missing field
	}
	if !slices.Contains(fwScopeTypes[scope], rule.Type) && slices.Contains([]string{"in", "out", "forward", "group"}, rule.Type) {
		what := map[FirewallRuleScope]string{FirewallRulesGroup: "a security group", FirewallRulesCluster: "the cluster's rules", FirewallRulesGuest: "a guest's rules"}[scope]
		add("type", "%s rules are not allowed in %s (allowed: %s)", rule.Type, what, strings.Join(fwScopeTypes[scope], ", "))
	}
	switch rule.Type {
	case "in", "out", "forward":
		if !reFWRuleAction.MatchString(rule.Action) {
			add("action", "unknown action %q (ACCEPT, DROP or REJECT; a security group needs type group)", rule.Action)
		} else if rule.Type == "forward" && rule.Action == "REJECT" {
			add("action", "cannot define REJECT rules on the forward chain (use DROP)")
		}
	case "group":
		switch {
		case !reFWName.MatchString(rule.Action) || len(rule.Action) > MaxFirewallGroupName:
			add("action", "%q is not a security group name (a letter, then letters, digits, '-' or '_'; 2 to %d characters)", rule.Action, MaxFirewallGroupName)
		case rule.Action != strings.ToLower(rule.Action):
			add("action", "security group names are lower case in Proxmox: %q", strings.ToLower(rule.Action))
		}
	}
}

// checkFWRuleProto checks proto, dport, sport and icmpType; it returns the
// IP version the protocol implies (0 for any).
func checkFWRuleProto(rule *FirewallRule, add func(string, string, ...any)) int {
	proto := rule.Proto
	if proto != "" && !fwProtocolNames[proto] {
		add("proto", "unknown protocol %q (a name or number from /etc/protocols)", proto)
	}
	icmp := proto == "icmp" || proto == "icmpv6" || proto == "ipv6-icmp"
	ports := func(field, v string, dport bool) {
		if v == "" {
			return
		}
		if err := checkFirewallPorts(v, dport && icmp); err != nil {
			add(field, "%v", err)
		}
		switch {
		case proto == "":
			add(field, "needs proto (a protocol with ports: tcp, udp, udplite, dccp, sctp)")
		case !fwPortProtocols[proto] && !(dport && icmp):
			add(field, "protocol %q does not support ports", proto)
		}
	}
	ports("dport", rule.Dport, true)
	ports("sport", rule.Sport, false)
	if t := rule.ICMPType; t != "" {
		switch {
		case !icmp:
			add("icmpType", "needs proto icmp, icmpv6 or ipv6-icmp")
		case rule.Dport != "":
			add("icmpType", "cannot be given together with dport")
		case proto == "icmp" && !fwICMPTypes[t]:
			add("icmpType", "invalid icmp type %q for proto icmp", t)
		case proto != "icmp" && !fwICMPv6Types[t]:
			add("icmpType", "invalid icmp type %q for proto %s", t, proto)
		}
	}
	return map[string]int{"icmp": 4, "icmpv6": 6, "ipv6-icmp": 6}[proto]
}

// checkFWRuleMacro is verify_rule's macro check and $apply_macro's: the
// name (any case; Proxmox keeps its own spelling) and no proto, dport or
// sport the macro's templates set otherwise.
func checkFWRuleMacro(rule *FirewallRule, version int, add func(string, string, ...any)) {
	name, ok := fwMacroPreferred[strings.ToLower(rule.Macro)]
	if !ok {
		names := make([]string, 0, len(fwMacroPreferred))
		for _, n := range fwMacroPreferred {
			names = append(names, n)
		}
		add("macro", "unknown macro %q%s", rule.Macro, didYouMean(rule.Macro, names))
		return
	}
	rule.Macro = name
	tmpl, v4 := fwMacros[name]
	if v6, ok := fwMacrosV6[name]; ok && (version == 6 || !v4) {
		if !v4 && version == 4 {
			return // an IPv6-only macro in an IPv4 rule matches nothing
		}
		tmpl = v6
	}
	for _, t := range strings.Split(tmpl, ";") {
		for _, kv := range strings.Fields(t) {
			k, v, _ := strings.Cut(kv, "=")
			have := map[string]string{"proto": rule.Proto, "dport": rule.Dport, "sport": rule.Sport}[k]
			if have != "" && have != v {
				add(k, "macro %s already sets %s (to %s)", name, k, v)
				return
			}
		}
	}
}

// checkFirewallPorts is parse_port_name_number_or_range: numbers, service
// names and ranges, at most 15 numbers (a range counts two); dport of an
// ICMP rule may name ICMP types instead.
func checkFirewallPorts(s string, icmpNames bool) error {
	if s == "" || strings.HasPrefix(s, ",") || strings.HasSuffix(s, ",") || strings.Contains(s, ",,") {
		return fmt.Errorf("%q has extraneous commas", s)
	}
	count, icmp := 0, false
	for _, item := range strings.Split(s, ",") {
		if m := reFWPortRange.FindStringSubmatch(item); m != nil {
			count += 2
			lo, hi := fwPort(m[1]), fwPort(m[2])
			if lo > 65535 || hi > 65535 {
				return fmt.Errorf("invalid port range %q (ports are 0 to 65535)", item)
			}
			if lo > hi {
				return fmt.Errorf("backwards range %q, did you mean %s:%s?", item, m[2], m[1])
			}
		} else if reFWPortNumber.MatchString(item) {
			count++
			if fwPort(item) > 65535 {
				return fmt.Errorf("invalid port %q (ports are 0 to 65535)", item)
			}
		} else if icmpNames && (fwICMPTypes[item] || fwICMPv6Types[item]) {
			icmp = true
		} else if !fwServiceNames[item] {
			return fmt.Errorf("invalid port %q (a number, a range like 80:85 or a service name from /etc/services)", item)
		}
	}
	if icmp && count > 0 {
		return fmt.Errorf("%q mixes ICMP types and port numbers", s)
	}
	if count > 15 {
		return fmt.Errorf("%q has too many entries (more than 15 numbers; a range counts two)", s)
	}
	return nil
}

func fwPort(s string) int {
	s = strings.TrimLeft(s, "0")
	if len(s) > 6 {
		return 1 << 30
	}
	n, _ := strconv.Atoi(s)
	return n
}

// checkFirewallAddress is pve-fw-addr-spec (parse_address_list): an IP set
// or alias reference, or addresses and networks of one IP version, or one
// range; Net::IP refuses a network with host bits. It returns the IP
// version (0 for a reference).
func checkFirewallAddress(s string) (int, error) {
	if len(s) > 512 {
		return 0, fmt.Errorf("longer than 512 characters")
	}
	if strings.HasPrefix(s, "+") {
		m := reFWIPSetRef.FindStringSubmatch(s)
		if m == nil || len(m[2]) > 64 {
			return 0, fmt.Errorf("invalid IP set name %q (+name, +dc/name, +guest/name or +sdn/name)", s)
		}
		return 0, nil
	}
	if m := reFWAliasRef.FindStringSubmatch(s); m != nil {
		if len(s) > 64 {
			return 0, fmt.Errorf("alias name %q too long", s)
		}
		return 0, nil
	}
	if strings.HasPrefix(s, ",") || strings.HasSuffix(s, ",") || strings.Contains(s, ",,") {
		return 0, fmt.Errorf("%q has extraneous commas", s)
	}
	elems := strings.Split(s, ",")
	version := 0
	for _, e := range elems {
		v, err := fwAddressElem(e)
		if err != nil {
			return 0, err
		}
		if strings.Contains(e, "-") && len(elems) > 1 {
			return 0, fmt.Errorf("a range (%s) cannot be part of a list", e)
		}
		if version != 0 && v != version {
			return 0, fmt.Errorf("%q mixes IPv4 and IPv6 addresses", s)
		}
		version = v
	}
	return version, nil
}

// fwAddressElem is one element as Net::IP reads it: an address, a network
// without host bits, or a range begin-end of one version, begin first.
func fwAddressElem(e string) (int, error) {
	version := func(a netip.Addr) int {
		if a.Is4() {
			return 4
		}
		return 6
	}
	if begin, end, ok := strings.Cut(e, "-"); ok {
		b, err1 := fwParseAddr(begin)
		x, err2 := fwParseAddr(end)
		switch {
		case err1 != nil || err2 != nil:
			return 0, fmt.Errorf("invalid IP range %q", e)
		case b.Is4() != x.Is4():
			return 0, fmt.Errorf("range %q mixes IPv4 and IPv6", e)
		case b.Compare(x) > 0:
			return 0, fmt.Errorf("range %q begins after it ends", e)
		}
		return version(b), nil
	}
	if strings.Contains(e, "/") {
		if err := CheckFirewallCIDR(e); err != nil {
			return 0, err
		}
		p := netip.MustParsePrefix(e)
		if p.Masked() != p {
			return 0, fmt.Errorf("%s has host bits set (Proxmox refuses it): did you mean %s?", e, p.Masked())
		}
		return version(p.Addr()), nil
	}
	a, err := fwParseAddr(e)
	if err != nil {
		return 0, fmt.Errorf("%q is not an IP address, network, range, alias or IP set", e)
	}
	return version(a), nil
}

func fwParseAddr(s string) (netip.Addr, error) {
	if err := CheckFirewallCIDR(s); err != nil || strings.Contains(s, "/") {
		return netip.Addr{}, fmt.Errorf("invalid address %q", s)
	}
	return netip.ParseAddr(s)
}

// addFirewallRuleRefs records what a rule names: a security group, cluster
// IP sets and aliases (a guest's own, +guest/ and guest/, are not
// cluster objects; nor are SDN's sets).
func addFirewallRuleRefs(r Resource, p string, rule *FirewallRule) {
	if rule.Type == "group" && rule.Action != "" {
		addRef(r, Ref{Kind: KindFirewallGroup, Name: rule.Action, Path: p + ".action", Relation: RelationProtectedBy})
		return
	}
	for _, f := range []struct{ name, v string }{{"source", rule.Source}, {"dest", rule.Dest}} {
		if m := reFWIPSetRef.FindStringSubmatch(f.v); m != nil {
			if m[1] == "" || m[1] == "dc/" {
				addRef(r, Ref{Kind: KindFirewallIPSet, Name: m[2], Path: p + "." + f.name})
			}
		} else if m := reFWAliasRef.FindStringSubmatch(f.v); m != nil && m[1] != "guest/" {
			addRef(r, Ref{Kind: KindFirewallAlias, Name: strings.ToLower(m[2]), Path: p + "." + f.name})
		}
	}
}

// FirewallMacroTemplates are a macro's template rules as "proto", "dport"
// and "sport" fields (the IPv4 ones; an IPv6-only macro's otherwise), nil
// for an unknown macro.
func FirewallMacroTemplates(name string) []map[string]string {
	tmpl, ok := fwMacros[name]
	if !ok {
		if tmpl, ok = fwMacrosV6[name]; !ok {
			return nil
		}
	}
	return pvefirewall.Macro{Name: name, Rules: tmpl}.Templates()
}
