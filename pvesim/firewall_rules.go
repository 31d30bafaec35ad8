package pvesim

import "github.com/proxmops/proxmops/pvesim/route"

// Rule lists: pve-firewall src/PVE/API2/Firewall/Rules.pm (RulesBase and
// its ClusterRules, GroupRules, HostRules, VMRules, CTRules). A list is
// ordered; a rule is addressed by its position. Rules compile to nothing
// here (no packet is filtered) but are verified exactly (verify_rule).

// fwRuleScope is one subclass of RulesBase: where its list lives.
type fwRuleScope struct {
	env    string // rule_env
	path   string
	params []*route.Param // additional_parameters
	audit  *route.Perm    // rules_audit_permissions
	modify *route.Perm    // rules_modify_permissions
	proxy  string         // 'node' for host rules only
	// load is load_config: the cluster configuration (nil where the
	// Perl passes undef), the file and the list.
	load func(s *Server, r *route.Request) (cluster, fw *fwConf, rules []*fwRule, err error)
	// save is save_rules.
	save func(s *Server, r *route.Request, fw *fwConf, rules []*fwRule)
}

func fwRuleScopes() []*fwRuleScope {
	clusterPerm := func(p string) *route.Perm { return route.PermCheck("/", p) }
	scopes := []*fwRuleScope{
		{env: "cluster", path: "/cluster/firewall/rules", audit: clusterPerm("Sys.Audit"), modify: clusterPerm("Sys.Modify"),
			load: func(s *Server, r *route.Request) (*fwConf, *fwConf, []*fwRule, error) {
				c := s.loadClusterFW()
				return nil, c, c.Rules, nil
			},
			save: func(s *Server, r *route.Request, fw *fwConf, rules []*fwRule) {
				fw.Rules = rules
				s.fwWrite(fwClusterFile(), fw.format())
			}},
		{env: "group", path: "/cluster/firewall/groups/{group}", params: []*route.Param{pFWGroup()},
			audit: clusterPerm("Sys.Audit"), modify: clusterPerm("Sys.Modify"),
			load: func(s *Server, r *route.Request) (*fwConf, *fwConf, []*fwRule, error) {
				c := s.loadClusterFW()
				rules, ok := c.Groups[r.Str("group")]
				if !ok {
					return nil, nil, nil, route.Fail("no such security group '%s'", r.Str("group"))
				}
				return nil, c, rules, nil
			},
			save: func(s *Server, r *route.Request, fw *fwConf, rules []*fwRule) {
				fw.Groups[r.Str("group")] = rules
				s.fwWrite(fwClusterFile(), fw.format())
			}},
		{env: "host", path: "/nodes/{node}/firewall/rules", params: []*route.Param{pNode()}, proxy: "node",
			audit: route.PermCheck("/nodes/{node}", "Sys.Audit"), modify: route.PermCheck("/nodes/{node}", "Sys.Modify"),
			load: func(s *Server, r *route.Request) (*fwConf, *fwConf, []*fwRule, error) {
				c := s.loadClusterFW()
				h := s.loadHostFW(c, r.Str("node"))
				return c, h, h.Rules, nil
			},
			save: func(s *Server, r *route.Request, fw *fwConf, rules []*fwRule) {
				fw.Rules = rules
				s.fwWrite(fwHostFile(r.Str("node")), fw.format())
			}},
	}
	for _, typ := range []string{"qemu", "lxc"} {
		env := map[string]string{"qemu": "vm", "lxc": "ct"}[typ]
		scopes = append(scopes, &fwRuleScope{env: env, path: "/nodes/{node}/" + typ + "/{vmid}/firewall/rules",
			params: []*route.Param{pNode(), pVMID()},
			audit:  route.PermCheck("/vms/{vmid}", "VM.Audit"), modify: route.PermCheck("/vms/{vmid}", "VM.Config.Network"),
			load: func(s *Server, r *route.Request) (*fwConf, *fwConf, []*fwRule, error) {
				vmid, _ := r.Int("vmid")
				c := s.loadClusterFW()
				g := s.loadGuestFW(c, env, vmid)
				return c, g, g.Rules, nil
			},
			save: func(s *Server, r *route.Request, fw *fwConf, rules []*fwRule) {
				vmid, _ := r.Int("vmid")
				fw.Rules = rules
				s.fwWrite(fwGuestFile(vmid), fw.format())
			}})
	}
	return scopes
}

func pFWGroup() *route.Param {
	return route.Str("group").Pattern(fwNamePattern).MinLen(2).MaxLen(fwMaxGroupName)
}

// fwRuleProps is Firewall.pm $rule_properties, as add_rule_properties
// copies them.
func fwRuleProps() []*route.Param {
	return []*route.Param{
		route.Int("pos").Min(0).Opt(), route.Str("digest").MaxLen(64).Opt(),
		route.Str("type").Enum("in", "out", "forward", "group").Opt(),
		route.Str("action").Pattern(fwNamePattern).MaxLen(20).MinLen(2).Opt(),
		route.Str("macro").MaxLen(128).Opt(),
		route.Str("iface").Fmt("pve-iface").MinLen(2).MaxLen(20).Opt(),
		route.Str("source").Fmt("pve-fw-addr-spec").MaxLen(512).Opt(),
		route.Str("dest").Fmt("pve-fw-addr-spec").MaxLen(512).Opt(),
		route.Str("proto").Fmt("pve-fw-protocol-spec").Opt(),
		route.Int("enable").Min(0).Opt(),
		route.Str("log").Enum(fwLogLevels...).Opt(),
		route.Str("sport").Fmt("pve-fw-sport-spec").Opt(),
		route.Str("dport").Fmt("pve-fw-dport-spec").Opt(),
		route.Str("comment").Opt(),
		route.Str("icmp-type").Fmt("pve-fw-icmp-type-spec").Opt(),
	}
}

// fwRuleKeys are the keys of $rule_properties.
var fwRuleKeys = []string{"pos", "digest", "type", "action", "macro", "iface", "source", "dest", "proto", "enable", "log", "sport", "dport", "comment", "icmp-type"}

func init() {
	registerRoutes(func(s *Server) {
		for _, sc := range fwRuleScopes() {
			sc.register(s)
		}
	})
}

func (sc *fwRuleScope) register(s *Server) {
	params := func(extra ...*route.Param) *route.Params {
		return route.NewParams(append(append([]*route.Param{}, sc.params...), extra...)...)
	}
	pos := func() *route.Param { return route.Int("pos").Min(0).Opt() }
	create := fwRuleProps()
	for _, p := range create {
		if p.Name == "type" || p.Name == "action" {
			p.Optional = false
		}
	}
	update := append(fwRuleProps(), route.Int("moveto").Min(0).Opt(), route.Str("delete").Fmt("pve-configid-list").Opt())
	s.Handle(&route.Route{Method: "GET", Path: sc.path, Perm: sc.audit, ProxyTo: sc.proxy, Params: params(),
		Handler: func(r *route.Request) (any, error) { return sc.list(s, r) }})
	s.Handle(&route.Route{Method: "POST", Path: sc.path, Perm: sc.modify, ProxyTo: sc.proxy, Params: params(create...),
		Handler: func(r *route.Request) (any, error) { return nil, sc.create(s, r) }})
	s.Handle(&route.Route{Method: "GET", Path: sc.path + "/{pos}", Perm: sc.audit, ProxyTo: sc.proxy, Params: params(pos()),
		Handler: func(r *route.Request) (any, error) { return sc.get(s, r) }})
	s.Handle(&route.Route{Method: "PUT", Path: sc.path + "/{pos}", Perm: sc.modify, ProxyTo: sc.proxy, Params: params(update...),
		Handler: func(r *route.Request) (any, error) { return nil, sc.update(s, r) }})
	s.Handle(&route.Route{Method: "DELETE", Path: sc.path + "/{pos}", Perm: sc.modify, ProxyTo: sc.proxy,
		Params:  params(pos(), route.Str("digest").MaxLen(64).Opt()),
		Handler: func(r *route.Request) (any, error) { return nil, sc.remove(s, r) }})
}

// list is get_rules: copy_list_with_digest, then each rule's position.
func (sc *fwRuleScope) list(s *Server, r *route.Request) (any, error) {
	_, _, rules, err := sc.load(s, r)
	if err != nil {
		return nil, err
	}
	list := fwRulesList(rules)
	fwListDigest(list)
	for i, e := range list {
		e["pos"] = i
	}
	return list, nil
}

// get is get_rule. Its pos is the path's text, so it reads back as a JSON
// string (the list's positions are numbers): get_rule in pve-firewall's
// API2/Firewall/Rules.pm copies $param->{pos}, which JSON::XS writes as
// the string it came as.
func (sc *fwRuleScope) get(s *Server, r *route.Request) (any, error) {
	out, err := sc.list(s, r)
	if err != nil {
		return nil, err
	}
	list := out.([]map[string]any)
	pos, _ := r.Int("pos")
	if pos >= len(list) {
		return nil, route.Fail("no rule at position %s", r.Str("pos"))
	}
	list[pos]["pos"] = r.Str("pos")
	return list[pos], nil
}

// fwCopyRuleData is copy_rule_data: ” or '-' deletes a field.
func fwCopyRuleData(f map[string]string, r *route.Request) {
	for _, k := range fwRuleKeys {
		if !r.Has(k) {
			continue
		}
		if v := r.Str(k); v == "" || v == "-" {
			delete(f, k)
		} else {
			f[k] = v
		}
	}
}

// create is create_rule: the rule is verified and put first in the list
// (unshift: the schema's pos is accepted and ignored), disabled unless
// enable is given; no digest is checked.
func (sc *fwRuleScope) create(s *Server, r *route.Request) error {
	cluster, fw, rules, err := sc.load(s, r)
	if err != nil {
		return err
	}
	rule := &fwRule{F: map[string]string{}}
	fwCopyRuleData(rule.F, r)
	if err := verifyFWRule(rule, cluster, fw, sc.env, false); err != nil {
		return err
	}
	if !r.Has("enable") {
		rule.F["enable"] = "0"
	}
	sc.save(s, r, fw, append([]*fwRule{rule}, rules...))
	return nil
}

// fwAssertDigest is PVE::Tools::assert_if_modified.
func fwAssertDigest(r *route.Request, digest string) error {
	if d := r.Str("digest"); d != "" && d != digest {
		return route.Fail("detected modified configuration - file changed by other user? Try again.")
	}
	return nil
}

// loadAt is how update_rule and delete_rule start: load_config,
// assert_if_modified against the list's digest, then the rule at pos.
func (sc *fwRuleScope) loadAt(s *Server, r *route.Request) (cluster, fw *fwConf, rules []*fwRule, pos int, err error) {
	cluster, fw, rules, err = sc.load(s, r)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	if err := fwAssertDigest(r, fwListDigest(fwRulesList(rules))); err != nil {
		return nil, nil, nil, 0, err
	}
	pos, _ = r.Int("pos")
	if pos >= len(rules) {
		return nil, nil, nil, 0, route.Fail("no rule at position %d", pos)
	}
	return cluster, fw, rules, pos, nil
}

// update is update_rule: digest, position, then either a move (moveto:
// the rule goes before the one now at moveto, or last; other arguments
// are ignored) or the changes, the deletions and verify_rule.
func (sc *fwRuleScope) update(s *Server, r *route.Request) error {
	cluster, fw, rules, pos, err := sc.loadAt(s, r)
	if err != nil {
		return err
	}
	rule := rules[pos]
	if moveto, ok := r.Int("moveto"); ok && moveto != pos {
		moved := []*fwRule{}
		for i, x := range rules {
			if i == pos {
				continue
			}
			if i == moveto {
				moved = append(moved, rule)
			}
			moved = append(moved, x)
		}
		if moveto >= len(rules) {
			moved = append(moved, rule)
		}
		sc.save(s, r, fw, moved)
		return nil
	}
	fwCopyRuleData(rule.F, r)
	if r.Has("delete") {
		if err := fwDeleteRuleProps(rule.F, r.Str("delete")); err != nil {
			return err
		}
	}
	if err := verifyFWRule(rule, cluster, fw, sc.env, false); err != nil {
		return err
	}
	sc.save(s, r, fw, rules)
	return nil
}

// fwDeleteRuleProps is delete_rule_properties.
func fwDeleteRuleProps(f map[string]string, list string) error {
	known := map[string]bool{}
	for _, k := range fwRuleKeys {
		known[k] = true
	}
	for _, k := range splitList(list) {
		if !known[k] {
			return route.ParamErr("delete", "no such property ('"+k+"')")
		}
		if k == "type" || k == "action" {
			return route.ParamErr("delete", "unable to delete required property '"+k+"'")
		}
		delete(f, k)
	}
	return nil
}

// remove is delete_rule.
func (sc *fwRuleScope) remove(s *Server, r *route.Request) error {
	_, fw, rules, pos, err := sc.loadAt(s, r)
	if err != nil {
		return err
	}
	sc.save(s, r, fw, append(append([]*fwRule{}, rules[:pos]...), rules[pos+1:]...))
	return nil
}
