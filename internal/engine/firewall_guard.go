package engine

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
)

// Never cut its own cord: a plan that leaves the cluster firewall on with
// an input policy of DROP or REJECT is refused unless the resulting rules
// let TCP 8006 (the API) and 22 (SSH) in from proxmops' own address (the
// local address of its connection to the API) and from the management IP
// set. pve-firewall's host input chain (Firewall.pm
// ruleset_generate_host_rules) takes the node's rules, then the cluster's,
// first match deciding (ACCEPT, DROP, REJECT; a group's rules in its
// place), then lets the "management" IP set (plus the local network, which
// proxmops cannot see) reach 8006, 22 and the consoles, then applies the
// policy. The check is cautious: a DROP or REJECT rule that may match
// (an interface, a source port, an IP set or alias or group proxmops
// cannot see) cuts; an ACCEPT counts only when it surely matches.

// guardPorts are the ports that must stay open.
var guardPorts = []int{8006, 22}

// guardInputs is what the check reads: only when the plan's result is a
// firewall on with a dropping input policy.
type guardInputs struct {
	needed        bool
	policy        string
	local, remote string
	mgmt          []collItem // the management IP set's entries
	err           error
}

func fwTruthy(v string) bool { return v != "" && v != "0" }

func readGuardInputs(ctx context.Context, pc *planContext, s *ClusterFirewallSpec, options collItem) guardInputs {
	g := guardInputs{policy: s.PolicyIn}
	if g.policy == "" {
		g.policy = options["policy_in"]
	}
	if g.policy == "" {
		g.policy = "DROP"
	}
	on := fwTruthy(options["enable"])
	if s.Enabled != nil {
		on = *s.Enabled
	}
	if g.needed = on && g.policy != "ACCEPT"; !g.needed {
		return g
	}
	g.local, g.remote = pc.e.client.ConnAddrs()
	var sets []map[string]any
	if g.err = pc.e.client.Get(ctx, fwBase+"/ipset", nil, &sets); g.err != nil {
		return g
	}
	for _, set := range sets {
		if name, _ := set["name"].(string); name == "management" {
			var entries []map[string]any
			if g.err = pc.e.client.Get(ctx, fwBase+"/ipset/management", nil, &entries); g.err != nil {
				return g
			}
			for _, e := range entries {
				g.mgmt = append(g.mgmt, stringValues(e))
			}
		}
	}
	return g
}

// guardRefusal says why the plan is refused, "" when it is not; where
// says where the rule to add goes.
func (r *clusterFirewallReconciler) guardRefusal(pc *planContext, where string, rules *rulePlan) string {
	g := r.guard
	if !g.needed {
		return ""
	}
	cut := fmt.Sprintf("refused: this plan leaves the cluster firewall on with input policy %s", g.policy)
	if g.err != nil {
		return fmt.Sprintf("%s and could not read the management IP set to prove proxmops keeps its access: %v", cut, g.err)
	}
	own, err := netip.ParseAddr(g.local)
	if err != nil {
		return cut + " and proxmops does not know its own address to prove it keeps its access"
	}
	result := r.rules
	if rules != nil {
		result = rules.result()
	}
	ev := &guardEval{pc: pc, remote: g.remote, mgmt: g.mgmt}
	type source struct {
		addr netip.Addr
		what string
		rule string
	}
	sources := []source{{own.Unmap(), "proxmops' own address " + own.Unmap().String(), own.Unmap().String()}}
	for _, e := range g.mgmt {
		if fwTruthy(e["nomatch"]) {
			continue
		}
		if a, ok := guardAddr(e["cidr"]); ok {
			sources = append(sources, source{a, "the management IP set (" + e["cidr"] + ")", "+management"})
		}
	}
	var problems, adds []string
	for _, src := range sources {
		for _, port := range guardPorts {
			by := ev.verdict(result, src.addr, port, ev.inMgmt(src.addr))
			if by == "" {
				continue
			}
			problems = append(problems, fmt.Sprintf("TCP %d from %s is dropped by %s", port, src.what, by))
			add := fmt.Sprintf("{ type: in, action: ACCEPT, proto: tcp, dport: \"8006,22\", source: %s }", src.rule)
			if !strings.Contains(strings.Join(adds, " "), add) {
				adds = append(adds, add)
			}
		}
	}
	if len(problems) == 0 {
		return ""
	}
	return fmt.Sprintf("%s, which would cut proxmops off: %s. Add %s to %s, before any rule that drops it",
		cut, strings.Join(problems, "; "), strings.Join(adds, " and "), where)
}

// guardEval evaluates rules for one packet.
type guardEval struct {
	pc     *planContext
	remote string
	mgmt   []collItem
}

// inMgmt: an address the management IP set holds (not as nomatch).
func (ev *guardEval) inMgmt(a netip.Addr) bool {
	in := false
	for _, e := range ev.mgmt {
		if p, ok := guardPrefix(e["cidr"]); ok && p.Contains(a) {
			if fwTruthy(e["nomatch"]) {
				return false
			}
			in = true
		}
	}
	return in
}

// verdict walks the rules as the host input chain does: "" when the
// packet gets in, else what drops it.
func (ev *guardEval) verdict(rules []collItem, src netip.Addr, port int, mgmt bool) string {
	for i, f := range rules {
		switch v := ev.rule(f, src, port, 0); v {
		case "accept":
			return ""
		case "drop":
			return fmt.Sprintf("the cluster's rule %d (%s)", i, ruleLine(f))
		}
	}
	if mgmt {
		return ""
	}
	return "the input policy"
}

// rule is one rule's outcome for the packet: "accept", "drop" or "" (no
// decision).
func (ev *guardEval) rule(f collItem, src netip.Addr, port, depth int) string {
	if f["enable"] == "0" || (f["type"] != "in" && f["type"] != "group") {
		return ""
	}
	if f["type"] == "group" {
		rules, known := ev.group(f["action"])
		if !known || depth > 0 {
			return "drop" // a group proxmops cannot see may drop it
		}
		for _, g := range rules {
			if v := ev.rule(g, src, port, depth+1); v != "" {
				return v
			}
		}
		return ""
	}
	m := ev.matches(f, src, port)
	switch {
	case m == matchNo:
		return ""
	case f["action"] == "ACCEPT" && m == matchSure:
		return "accept"
	case f["action"] == "ACCEPT":
		return ""
	}
	return "drop"
}

type match int

const (
	matchNo match = iota
	matchMaybe
	matchSure
)

func worst(ms ...match) match {
	out := matchSure
	for _, m := range ms {
		out = min(out, m)
	}
	return out
}

func (ev *guardEval) matches(f collItem, src netip.Addr, port int) match {
	m := worst(ev.addrMatch(f["source"], src), ev.addrMatch(f["dest"], ev.remoteAddr()))
	if f["iface"] != "" || f["sport"] != "" {
		m = worst(m, matchMaybe)
	}
	if f["macro"] == "" {
		return worst(m, protoPortMatch(f["proto"], f["dport"], port))
	}
	best := matchNo
	for _, t := range manifest.FirewallMacroTemplates(f["macro"]) {
		proto, dport := t["proto"], t["dport"]
		if f["proto"] != "" {
			proto = f["proto"]
		}
		if f["dport"] != "" {
			dport = f["dport"]
		}
		tm := protoPortMatch(proto, dport, port)
		if t["sport"] != "" {
			tm = worst(tm, matchMaybe)
		}
		best = max(best, tm)
	}
	return worst(m, best)
}

func (ev *guardEval) remoteAddr() netip.Addr {
	a, _ := netip.ParseAddr(ev.remote)
	return a.Unmap()
}

func protoPortMatch(proto, dport string, port int) match {
	if proto != "" && proto != "tcp" && proto != "6" {
		return matchNo
	}
	if dport == "" {
		return matchSure
	}
	for _, item := range strings.Split(dport, ",") {
		lo, hi, isRange := strings.Cut(item, ":")
		if !isRange {
			hi = lo
		}
		if item == "ssh" && port == 22 {
			return matchSure
		}
		l, err1 := strconv.Atoi(lo)
		h, err2 := strconv.Atoi(hi)
		if err1 == nil && err2 == nil && l <= port && port <= h {
			return matchSure
		}
	}
	return matchNo
}

// addrMatch: whether an address is in a rule's source or dest.
func (ev *guardEval) addrMatch(spec string, a netip.Addr) match {
	switch {
	case spec == "":
		return matchSure
	case !a.IsValid():
		return matchMaybe
	case spec == "+management" || spec == "+dc/management":
		return map[bool]match{true: matchSure, false: matchNo}[ev.inMgmt(a)]
	case strings.HasPrefix(spec, "+"):
		return ev.setMatch(strings.TrimPrefix(strings.TrimPrefix(spec, "+"), "dc/"), a)
	}
	if p, ok := ev.alias(spec); ok {
		return map[bool]match{true: matchSure, false: matchNo}[p.Contains(a)]
	}
	if !strings.ContainsAny(spec, ".:") {
		return matchMaybe // an alias proxmops cannot see
	}
	for _, e := range strings.Split(spec, ",") {
		if lo, hi, ok := strings.Cut(e, "-"); ok {
			l, err1 := netip.ParseAddr(lo)
			h, err2 := netip.ParseAddr(hi)
			if err1 == nil && err2 == nil && l.Compare(a) <= 0 && a.Compare(h) <= 0 {
				return matchSure
			}
			continue
		}
		if p, ok := guardPrefix(e); ok && p.Contains(a) {
			return matchSure
		}
	}
	return matchNo
}

// setMatch looks in a declared IP set (its entries as the manifest wants
// them); another set is unknown.
func (ev *guardEval) setMatch(name string, a netip.Addr) match {
	for _, sp := range specsOf[*FirewallIPSetSpec](ev.pc.d, KindFirewallIPSet) {
		if sp.Name != strings.ToLower(name) {
			continue
		}
		in := matchNo
		for _, e := range sp.Entries {
			p, ok := guardPrefix(manifest.FirewallEntryCIDR(e.CIDR))
			if !ok {
				if p, ok = ev.alias(e.CIDR); !ok {
					return matchMaybe
				}
			}
			if p.Contains(a) {
				if e.Nomatch {
					return matchNo
				}
				in = matchSure
			}
		}
		return in
	}
	return matchMaybe
}

// alias is a declared alias's network.
func (ev *guardEval) alias(name string) (netip.Prefix, bool) {
	name = strings.ToLower(strings.TrimPrefix(name, "dc/"))
	for _, sp := range specsOf[*FirewallAliasSpec](ev.pc.d, KindFirewallAlias) {
		if sp.Name == name {
			return guardPrefix(sp.CIDR)
		}
	}
	return netip.Prefix{}, false
}

// group is a declared group's wanted rules.
func (ev *guardEval) group(name string) ([]collItem, bool) {
	for _, sp := range specsOf[*FirewallGroupSpec](ev.pc.d, KindFirewallGroup) {
		if sp.Name == strings.ToLower(name) {
			var out []collItem
			for _, r := range sp.Rules {
				out = append(out, ruleFields(r))
			}
			return out, true
		}
	}
	return nil, false
}

func guardPrefix(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}

// guardAddr is a representative address of an entry: its first.
func guardAddr(s string) (netip.Addr, bool) {
	p, ok := guardPrefix(s)
	return p.Addr(), ok
}
