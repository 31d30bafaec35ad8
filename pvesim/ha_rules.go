package pvesim

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// HA rules, PVE 9's replacement of HA groups: /cluster/ha/rules
// (pve-ha-manager src/PVE/API2/HA/Rules.pm) over rules.cfg, with the rule
// plugins src/PVE/HA/Rules/NodeAffinity.pm and ResourceAffinity.pm and the
// feasibility checks of src/PVE/HA/Rules.pm. A rule names configured HA
// resources only; deleting a resource with purge takes it out of every
// rule (src/PVE/HA/Config.pm delete_service_from_config). The cluster has
// no HA groups, so every rule call finds them migrated.

// haRuleOptions are the plugins' "options": required unless optional.
var haRuleOptions = map[string]map[string]bool{
	"node-affinity":     {"resources": false, "nodes": false, "strict": true, "disable": true, "comment": true},
	"resource-affinity": {"resources": false, "affinity": false, "disable": true, "comment": true},
}

var haRuleTypes = []string{"node-affinity", "resource-affinity"}

var reHANode = regexp.MustCompile(`^([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)(:(\d+))?$`)

func init() {
	// PVE/HA/Tools.pm pve_verify_ha_resource_id and pve_verify_ha_node.
	route.RegisterFormat("pve-ha-resource-id", func(s string) error {
		if !regexp.MustCompile(`^[a-z]+:\S+$`).MatchString(s) {
			return fmt.Errorf("value does not look like a valid ha resource id\n")
		}
		return nil
	})
	route.RegisterFormat("pve-ha-node", func(s string) error {
		if !reHANode.MatchString(s) {
			return fmt.Errorf("value does not look like a valid ha node\n")
		}
		return nil
	})
	registerRoutes(func(s *Server) {
		rule := func() *route.Param { return route.Str("rule").Fmt("pve-configid") }
		ruleProps := func(create bool) []*route.Param {
			res := route.Str("resources").Fmt("pve-ha-resource-id-list")
			if !create {
				res = res.Opt()
			}
			return []*route.Param{rule(), route.Str("type").Enum(haRuleTypes...), res,
				route.Str("affinity").Opt().Enum("positive", "negative"),
				route.Str("comment").Opt().MaxLen(4096),
				route.Bool("disable").Opt(),
				route.Str("nodes").Opt().Fmt("pve-ha-node-list"),
				route.Bool("strict").Opt().Default("0"),
			}
		}
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/ha/rules", Perm: route.PermCheck("/", "Sys.Audit"),
			Params: route.NewParams(route.Str("type").Opt().Enum(haRuleTypes...), route.Str("resource").Opt()), Handler: s.haRuleList})
		s.Handle(&route.Route{Method: "POST", Path: "/cluster/ha/rules", Perm: route.PermCheck("/", "Sys.Console"),
			Params: route.NewParams(ruleProps(true)...), Handler: s.haRuleCreate})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/ha/rules/{rule}", Perm: route.PermCheck("/", "Sys.Audit"),
			Params: route.NewParams(rule()), Handler: s.haRuleRead})
		s.Handle(&route.Route{Method: "PUT", Path: "/cluster/ha/rules/{rule}", Perm: route.PermCheck("/", "Sys.Console"),
			Params: route.NewParams(append(ruleProps(false), route.Str("delete").Opt().Fmt("pve-configid-list").MaxLen(4096),
				route.Str("digest").Opt().MaxLen(64))...), Handler: s.haRuleUpdate})
		s.Handle(&route.Route{Method: "DELETE", Path: "/cluster/ha/rules/{rule}", Perm: route.PermCheck("/", "Sys.Console"),
			Params: route.NewParams(rule()), Handler: s.haRuleDelete})
	})
}

// haRuleSet is one rule decoded: its resources and nodes as sets.
type haRuleSet struct {
	id, typ, affinity string
	resources         map[string]bool
	nodes             map[string]int // node: priority
}

func (cs *clusterState) haRuleSets(enabledOnly bool) []*haRuleSet {
	var out []*haRuleSet
	for _, id := range cs.HARuleOrder {
		r := cs.HARules[id]
		if r == nil || enabledOnly && hasKey(r, "disable") {
			continue
		}
		out = append(out, &haRuleSet{id: id, typ: r["type"], affinity: r["affinity"],
			resources: haDecodeResources(r["resources"]), nodes: haDecodeNodes(r["nodes"])})
	}
	return out
}

// haDecodeResources is Rules.pm decode_value for resources: invalid ids
// are dropped.
func haDecodeResources(v string) map[string]bool {
	out := map[string]bool{}
	for _, sid := range splitList(v) {
		if checkFormat("pve-ha-resource-id", sid, "") == nil {
			out[sid] = true
		}
	}
	return out
}

// haDecodeNodes is NodeAffinity.pm decode_plugin_value: parse_node_priority
// without errors.
func haDecodeNodes(v string) map[string]int {
	out := map[string]int{}
	for _, n := range splitList(v) {
		if m := reHANode.FindStringSubmatch(n); m != nil {
			p, _ := strconv.Atoi(m[4])
			out[m[1]] = p
		}
	}
	return out
}

// haEncodeNodes is encode_plugin_value: sorted, ":priority" when not 0.
func haEncodeNodes(nodes map[string]int) string {
	var parts []string
	for _, n := range sortedKeys(nodes) {
		if p := nodes[n]; p != 0 {
			parts = append(parts, fmt.Sprintf("%s:%d", n, p))
		} else {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, ",")
}

// haRulesFile is rules.cfg as written: sections in order, keys sorted;
// its SHA-1 is the digest.
func (cs *clusterState) haRulesFile() string {
	var b strings.Builder
	for _, id := range cs.HARuleOrder {
		r := cs.HARules[id]
		fmt.Fprintf(&b, "%s: %s\n", r["type"], id)
		for _, k := range sortedKeys(r) {
			if k != "type" {
				fmt.Fprintf(&b, "\t%s %s\n", k, r[k])
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (cs *clusterState) haRulesDigest() string {
	return sha1Hex(cs.haRulesFile())
}

// haRuleJSON is $get_api_ha_rule: the section with rule, digest, order
// (its position), booleans as numbers and the feasibility errors.
func (s *Server) haRuleJSON(id string, errs map[string][]string) map[string]any {
	r := s.state.HARules[id]
	out := map[string]any{"rule": id, "digest": s.state.haRulesDigest(), "order": slices.Index(s.state.HARuleOrder, id) + 1}
	for k, v := range r {
		switch k {
		case "disable", "strict":
			out[k] = typedValue(route.TBoolean, v)
		default:
			out[k] = v
		}
	}
	if len(errs) > 0 {
		out["errors"] = errs
	}
	return out
}

func (s *Server) haRuleList(r *route.Request) (any, error) {
	errs := s.haRuleFeasibility()
	out := []map[string]any{}
	for _, rs := range s.state.haRuleSets(false) {
		if t := r.Str("type"); t != "" && rs.typ != t {
			continue
		}
		if sid := r.Str("resource"); r.Has("resource") && !rs.resources[sid] {
			continue
		}
		out = append(out, s.haRuleJSON(rs.id, errs[rs.id]))
	}
	return out, nil
}

func (s *Server) haRuleRead(r *route.Request) (any, error) {
	id := r.Str("rule")
	if s.state.HARules[id] == nil {
		return nil, route.Fail("no such ha rule '%s'", id)
	}
	return s.haRuleJSON(id, s.haRuleFeasibility()[id]), nil
}

// haRuleCheckConfig is SectionConfig::check_config for a rule plugin
// (skipSchemaCheck): unknown keys, line feeds, required keys on create.
func haRuleCheckConfig(typ string, param map[string]string, create bool) (map[string]string, error) {
	opts := haRuleOptions[typ]
	out := map[string]string{}
	for _, k := range sortedKeys(param) {
		v := param[k]
		if k == "type" && v == typ {
			continue
		}
		if _, ok := opts[k]; !ok {
			return nil, fmt.Errorf("unexpected property '%s'", k)
		}
		if strings.ContainsAny(v, "\r\n") {
			return nil, fmt.Errorf("property contains a line feed")
		}
		switch k {
		case "resources":
			v = strings.Join(sortedKeys(haDecodeResources(v)), ",")
		case "nodes":
			v = haEncodeNodes(haDecodeNodes(v))
		}
		out[k] = v
	}
	if create {
		for _, k := range sortedKeys(opts) {
			if !opts[k] && !hasKey(param, k) {
				return nil, fmt.Errorf("missing value for required option '%s'", k)
			}
		}
	}
	return out, nil
}

// haAssertResources is $assert_valid_resources_param.
func (s *Server) haAssertResources(v string) error {
	return haAssertListed(haDecodeResources(v), "no resources were specified", "cannot use unmanaged resource(s) %s.", s.haConfigured)
}

// haAssertNodes is $assert_valid_nodes_param (the local node always exists).
func (s *Server) haAssertNodes(v string) error {
	return haAssertListed(haDecodeNodes(v), "no nodes were specified", "cannot use non-existent node(s) %s.", func(n string) bool {
		return n == s.state.Nodes[0].Name || s.state.node(n) != nil
	})
}

// haAssertListed is the shape both assert subs share: a list that is not
// empty, else none, and whose entries are all valid, else the invalid ones
// sorted and joined into invalid.
func haAssertListed[V any](list map[string]V, none, invalid string, valid func(string) bool) error {
	if len(list) == 0 {
		return errors.New(none)
	}
	var bad []string
	for _, k := range sortedKeys(list) {
		if !valid(k) {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf(invalid, strings.Join(bad, ", "))
	}
	return nil
}

// haAssertFeasible is $assert_feasibility: the rule's errors as a 400
// exception, which lock_ha_domain turns into text (a 500).
func (s *Server) haAssertFeasible(id string) error {
	errs := s.haRuleFeasibility()[id]
	if len(errs) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "400 Rule '%s' is invalid.\n", id)
	for _, opt := range sortedKeys(errs) {
		fmt.Fprintf(&b, "%s: %s\n", opt, strings.Join(errs[opt], ", "))
	}
	return fmt.Errorf("%s", strings.TrimSuffix(b.String(), "\n"))
}

// haRuleParams are the request's rule keys; disable=0 is dropped, as
// create_rule and update_rule do.
func haRuleParams(r *route.Request) map[string]string {
	out := paramsExcept(r, "rule", "digest", "delete")
	if out["disable"] != "1" {
		delete(out, "disable")
	}
	return out
}

func (s *Server) haRuleCreate(r *route.Request) (any, error) {
	id, typ := r.Str("rule"), r.Str("type")
	param := haRuleParams(r)
	delete(param, "type")
	opts, err := haRuleCheckConfig(typ, param, true)
	if err != nil {
		return nil, route.Fail("%s", err)
	}
	fail := func(err error) error { return route.Fail("create ha rule failed: %s", err) }
	if s.state.HARules[id] != nil {
		return nil, fail(fmt.Errorf("HA rule '%s' already defined", id))
	}
	if err := s.haAssertResources(opts["resources"]); err != nil {
		return nil, fail(err)
	}
	if hasKey(opts, "nodes") {
		if err := s.haAssertNodes(opts["nodes"]); err != nil {
			return nil, fail(err)
		}
	}
	opts["type"] = typ
	saved := s.haRulesSnapshot()
	s.haRuleInsert(id, opts)
	if err := s.haAssertFeasible(id); err != nil {
		s.haRulesRestore(saved)
		return nil, fail(err)
	}
	return nil, nil
}

// haRuleInsert places a new rule where rules.cfg puts it:
// get_next_ordinal gives it the lowest order plus one, and write_config
// sorts by order, a new rule after the rules it ties with.
func (s *Server) haRuleInsert(id string, opts map[string]string) {
	if s.state.HARules == nil {
		s.state.HARules = map[string]map[string]string{}
	}
	s.state.HARules[id] = opts
	pos := min(len(s.state.HARuleOrder), 2)
	s.state.HARuleOrder = slices.Insert(s.state.HARuleOrder, pos, id)
}

type haRulesSaved struct {
	rules map[string]map[string]string
	order []string
}

func (s *Server) haRulesSnapshot() haRulesSaved {
	c := map[string]map[string]string{}
	for id, r := range s.state.HARules {
		m := map[string]string{}
		for k, v := range r {
			m[k] = v
		}
		c[id] = m
	}
	return haRulesSaved{c, slices.Clone(s.state.HARuleOrder)}
}

func (s *Server) haRulesRestore(saved haRulesSaved) {
	s.state.HARules, s.state.HARuleOrder = saved.rules, saved.order
}

func (s *Server) haRuleUpdate(r *route.Request) (any, error) {
	id := r.Str("rule")
	fail := func(err error) error { return route.Fail("update HA rules failed: %s", err) }
	if d := r.Str("digest"); d != "" && d != s.state.haRulesDigest() {
		return nil, fail(fmt.Errorf("detected modified configuration - file changed by other user? Try again."))
	}
	rule := s.state.HARules[id]
	if rule == nil {
		return nil, fail(fmt.Errorf("HA rule '%s' does not exist", id))
	}
	typ := rule["type"]
	opts, err := haRuleCheckConfig(typ, haRuleParams(r), false)
	if err != nil {
		return nil, fail(err)
	}
	// The decoded sets are hashes, true in Perl even when empty.
	if hasKey(opts, "resources") {
		if err := s.haAssertResources(opts["resources"]); err != nil {
			return nil, fail(err)
		}
	}
	if hasKey(opts, "nodes") {
		if err := s.haAssertNodes(opts["nodes"]); err != nil {
			return nil, fail(err)
		}
	}
	saved := s.haRulesSnapshot()
	rule = s.state.HARules[id]
	// SectionConfig::delete_from_config.
	for _, k := range splitList(r.Str("delete")) {
		optional, ok := haRuleOptions[typ][k]
		switch {
		case !ok:
			return nil, fail(fmt.Errorf("no such option '%s'", k))
		case !optional:
			return nil, fail(fmt.Errorf("unable to delete required option '%s'", k))
		case hasKey(opts, k):
			return nil, fail(fmt.Errorf("cannot set and delete property '%s' at the same time!", k))
		}
		delete(rule, k)
	}
	for k, v := range opts {
		rule[k] = v
	}
	if err := s.haAssertFeasible(id); err != nil {
		s.haRulesRestore(saved)
		return nil, fail(err)
	}
	return nil, nil
}

// haRuleDelete is delete_rule: an unknown rule is no error.
func (s *Server) haRuleDelete(r *route.Request) (any, error) {
	id := r.Str("rule")
	delete(s.state.HARules, id)
	s.state.HARuleOrder = slices.DeleteFunc(s.state.HARuleOrder, func(x string) bool { return x == id })
	return nil, nil
}

// haRulesForget is delete_service_from_config's purge: the resource leaves
// every rule, and a rule left without resources goes.
func (s *Server) haRulesForget(sid string) {
	for _, id := range slices.Clone(s.state.HARuleOrder) {
		r := s.state.HARules[id]
		res := haDecodeResources(r["resources"])
		if !res[sid] {
			continue
		}
		delete(res, sid)
		if len(res) == 0 {
			delete(s.state.HARules, id)
			s.state.HARuleOrder = slices.DeleteFunc(s.state.HARuleOrder, func(x string) bool { return x == id })
			continue
		}
		r["resources"] = strings.Join(sortedKeys(res), ",")
	}
}

// haRuleFeasibility is Rules.pm check_feasibility over the enabled rules
// and the cluster's nodes: per rule and option, the messages.
func (s *Server) haRuleFeasibility() map[string]map[string][]string {
	errs := map[string]map[string][]string{}
	add := func(id, msg string) {
		if errs[id] == nil {
			errs[id] = map[string][]string{}
		}
		errs[id]["resources"] = append(errs[id]["resources"], msg)
	}
	var na, ra, pos, neg []*haRuleSet
	for _, rs := range s.state.haRuleSets(true) {
		switch {
		case rs.typ == "node-affinity":
			na = append(na, rs)
		case rs.typ == "resource-affinity":
			ra = append(ra, rs)
			if rs.affinity == "positive" {
				pos = append(pos, rs)
			} else {
				neg = append(neg, rs)
			}
		}
	}
	byID := func(list []*haRuleSet) []*haRuleSet {
		out := slices.Clone(list)
		sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
		return out
	}
	// NodeAffinity.pm check_single_resource_reference.
	users := map[string][]string{}
	for _, rs := range na {
		for sid := range rs.resources {
			users[sid] = append(users[sid], rs.id)
		}
	}
	type conflict struct{ a, b string }
	var cs []conflict
	for sid, ids := range users {
		if len(ids) > 1 {
			for _, id := range ids {
				cs = append(cs, conflict{id, sid})
			}
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].a < cs[j].a || cs[i].a == cs[j].a && cs[i].b < cs[j].b })
	for _, c := range cs {
		add(c.a, fmt.Sprintf("resource '%s' is already used in another node affinity rule", c.b))
	}
	// ResourceAffinity.pm check_resource_affinity_resources_count and
	// check_negative_resource_affinity_resources_count.
	for _, rs := range byID(ra) {
		if len(rs.resources) < 2 {
			add(rs.id, "rule is ineffective as there are less than two resources")
		}
	}
	for _, rs := range byID(neg) {
		if len(rs.resources) > len(s.state.Nodes) {
			add(rs.id, "rule defines more resources than available nodes")
		}
	}
	s.haRuleInterChecks(na, pos, neg, ra, add)
	return errs
}

// haDisjoint is Helpers.pm find_disjoint_rules_resource_sets: rules
// sorted by their lowest resource, merged while they share resources.
type haDisjointSet struct {
	ids       []string
	resources map[string]bool
}

func haDisjoint(rules []*haRuleSet) []*haDisjointSet {
	sorted := slices.Clone(rules)
	lowest := func(rs *haRuleSet) string { k := sortedKeys(rs.resources); return append(k, "")[0] }
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].id < sorted[j].id })
	sort.SliceStable(sorted, func(i, j int) bool { return lowest(sorted[i]) < lowest(sorted[j]) })
	var out []*haDisjointSet
	for _, rs := range sorted {
		found := false
		for _, e := range out {
			if haSetsDisjoint(rs.resources, e.resources) {
				continue
			}
			found = true
			e.ids = append(e.ids, rs.id)
			for sid := range rs.resources {
				e.resources[sid] = true
			}
			break
		}
		if !found {
			res := map[string]bool{}
			for sid := range rs.resources {
				res[sid] = true
			}
			out = append(out, &haDisjointSet{ids: []string{rs.id}, resources: res})
		}
	}
	return out
}

func haSetsDisjoint(a, b map[string]bool) bool {
	for k := range a {
		if b[k] {
			return false
		}
	}
	return true
}

func haCommon(a, b map[string]bool) int {
	n := 0
	for k := range a {
		if b[k] {
			n++
		}
	}
	return n
}

// haConflicts are one check's [type, ruleid] pairs.
type haConflicts []struct{ typ, id string }

func (cs *haConflicts) add(typ string, ids ...string) {
	for _, id := range ids {
		*cs = append(*cs, struct{ typ, id string }{typ, id})
	}
}

// report sorts the pairs as the checks sort them (by type, then rule id)
// and names each rule of type typ with msg, every other with otherMsg.
func (cs haConflicts) report(add func(id, msg string), typ, msg, otherMsg string) {
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].typ < cs[j].typ || cs[i].typ == cs[j].typ && cs[i].id < cs[j].id })
	for _, c := range cs {
		if c.typ == typ {
			add(c.id, msg)
		} else {
			add(c.id, otherMsg)
		}
	}
}

// haRuleInterChecks are check_inter_resource_affinity_rules_consistency
// (ResourceAffinity.pm) and Rules.pm's global checks, in their order.
func (s *Server) haRuleInterChecks(na, pos, neg, ra []*haRuleSet, add func(id, msg string)) {
	haAffinityOverlap(pos, neg).report(add, "positive",
		"rule shares two or more resources with a negative resource affinity rule",
		"rule shares two or more resources with a positive resource affinity rule")
	haSinglePriority(na, ra).report(add, "node-affinity",
		"resources are in a resource affinity rule and cannot be in a node affinity rule with multiple priorities",
		"resources are in node affinity rules with multiple priorities")
	haSingleNodeAffinity(na, pos).report(add, "positive",
		"resources are in multiple node affinity rules",
		"at least one resource is in a positive resource affinity rule and there are other resources in at least one other node affinity rule already")
	haNegativeNodeAffinity(na, neg).report(add, "negative",
		"two or more resources are restricted to less nodes than available to the resources",
		"at least one resource is in a negative resource affinity rule and this rule would restrict these to less nodes than available to the resources")
}

// haAffinityOverlap is check_inter_resource_affinity_rules_consistency:
// positive and negative rules sharing two or more resources.
func haAffinityOverlap(pos, neg []*haRuleSet) haConflicts {
	var cs haConflicts
	for _, e := range haDisjoint(pos) {
		for _, n := range neg {
			if haCommon(e.resources, n.resources) < 2 {
				continue
			}
			cs.add("negative", n.id)
			cs.add("positive", e.ids...)
		}
	}
	return cs
}

// haSinglePriority is
// check_single_priority_node_affinity_in_resource_affinity_rules.
func haSinglePriority(na, ra []*haRuleSet) haConflicts {
	var cs haConflicts
	for _, r := range ra {
		conflicts := false
		var paired []string
		for _, n := range na {
			if haSetsDisjoint(r.resources, n.resources) {
				continue
			}
			conflicts = conflicts || haMultiplePriorities(n)
			paired = append(paired, n.id)
		}
		if conflicts {
			cs.add("resource-affinity", r.id)
			cs.add("node-affinity", paired...)
		}
	}
	return cs
}

// haSingleNodeAffinity is
// check_single_node_affinity_per_positive_resource_affinity_rule.
func haSingleNodeAffinity(na, pos []*haRuleSet) haConflicts {
	var cs haConflicts
	for _, e := range haDisjoint(pos) {
		var paired []string
		for _, n := range na {
			if !haSetsDisjoint(e.resources, n.resources) {
				paired = append(paired, n.id)
			}
		}
		if len(paired) > 1 {
			cs.add("positive", e.ids...)
			cs.add("node-affinity", paired...)
		}
	}
	return cs
}

// haNegativeNodeAffinity is
// check_negative_resource_affinity_node_affinity_consistency.
func haNegativeNodeAffinity(na, neg []*haRuleSet) haConflicts {
	var cs haConflicts
	for _, r := range neg {
		allowed, located := map[string]bool{}, map[string]bool{}
		var paired []string
		for _, n := range na {
			if haCommon(r.resources, n.resources) < 1 {
				continue
			}
			for sid := range r.resources {
				if n.resources[sid] {
					located[sid] = true
				}
			}
			for node := range n.nodes {
				allowed[node] = true
			}
			paired = append(paired, n.id)
		}
		if len(allowed) < len(located) {
			cs.add("negative", r.id)
			cs.add("node-affinity", paired...)
		}
	}
	return cs
}

// haMultiplePriorities is Rules.pm $has_multiple_priorities.
func haMultiplePriorities(n *haRuleSet) bool {
	first, seen := 0, false
	for _, p := range n.nodes {
		if !seen {
			first, seen = p, true
		} else if p != first {
			return true
		}
	}
	return false
}

// The HA groups API (src/PVE/API2/HA/Groups.pm) is still served in 9.x,
// but on a cluster without groups.cfg sections every call fails first
// thing: the groups count as migrated to rules.
func init() {
	registerRoutes(func(s *Server) {
		migrated := func(what string) route.HandlerFunc {
			return func(*route.Request) (any, error) {
				return nil, route.Fail("cannot %s: ha groups have been migrated to rules", what)
			}
		}
		group := func() *route.Param { return route.Str("group").Fmt("pve-configid") }
		groupOpts := func(nodesRequired bool) []*route.Param {
			nodes := route.Str("nodes").Fmt("pve-ha-node-list")
			if !nodesRequired {
				nodes = nodes.Opt()
			}
			return []*route.Param{group(), nodes, route.Str("comment").Opt().MaxLen(4096),
				route.Bool("nofailback").Opt().Default("0"), route.Bool("restricted").Opt().Default("0")}
		}
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/ha/groups", Perm: route.PermCheck("/", "Sys.Audit"), Handler: migrated("index groups")})
		s.Handle(&route.Route{Method: "POST", Path: "/cluster/ha/groups", Perm: route.PermCheck("/", "Sys.Console"),
			Params: route.NewParams(append(groupOpts(true), route.Str("type").Opt().Enum("group"))...), Handler: migrated("create group")})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/ha/groups/{group}", Perm: route.PermCheck("/", "Sys.Audit"),
			Params: route.NewParams(group()), Handler: migrated("read group")})
		s.Handle(&route.Route{Method: "PUT", Path: "/cluster/ha/groups/{group}", Perm: route.PermCheck("/", "Sys.Console"),
			Params: route.NewParams(append(groupOpts(false), route.Str("delete").Opt().Fmt("pve-configid-list").MaxLen(4096),
				route.Str("digest").Opt().MaxLen(64))...), Handler: migrated("update group")})
		s.Handle(&route.Route{Method: "DELETE", Path: "/cluster/ha/groups/{group}", Perm: route.PermCheck("/", "Sys.Console"),
			Params: route.NewParams(group()), Handler: migrated("delete group")})
	})
}
