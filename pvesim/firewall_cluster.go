package pvesim

import (
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// The cluster firewall (pve-firewall src/PVE/API2/Firewall/Cluster.pm),
// security groups (Groups.pm, GroupRules in Rules.pm), a node's firewall
// options (Host.pm) and a guest's references (VM.pm refs).

func init() {
	registerRoutes(func(s *Server) {
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/firewall", Perm: route.PermUser(), Params: route.NewParams(),
			Handler: fwIndex("aliases", "rules", "options", "groups", "ipset", "macros", "refs")})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/firewall", Perm: route.PermUser(), Params: route.NewParams(pNode()),
			Handler: fwIndex("rules", "options", "log")})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/firewall/options", Perm: route.PermCheck("/", "Sys.Audit"), Params: route.NewParams(),
			Handler: func(*route.Request) (any, error) {
				return fwOptionsOut(s.loadClusterFW().Options, fwClusterNumeric), nil
			}})
		s.Handle(&route.Route{Method: "PUT", Path: "/cluster/firewall/options", Perm: route.PermCheck("/", "Sys.Modify"),
			Params: route.NewParams(fwClusterOptionParams()...), Handler: s.setClusterFWOptions})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/firewall/macros", Perm: route.PermUser(), Params: route.NewParams(),
			Handler: func(*route.Request) (any, error) { return fwMacroList(), nil }})
		typ := func() *route.Param { return route.Str("type").Enum("alias", "ipset").Opt() }
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/firewall/refs", Perm: route.PermCheck("/", "Sys.Audit"), Params: route.NewParams(typ()),
			Handler: func(r *route.Request) (any, error) { return fwCollectRefs(s.loadClusterFW(), r.Str("type"), "dc"), nil }})
		for _, t := range []string{"qemu", "lxc"} {
			env := map[string]string{"qemu": "vm", "lxc": "ct"}[t]
			s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/" + t + "/{vmid}/firewall/refs", Perm: route.PermCheck("/vms/{vmid}", "VM.Audit"),
				Params: route.NewParams(pNode(), pVMID(), typ()), Handler: func(r *route.Request) (any, error) {
					vmid, _ := r.Int("vmid")
					c := s.loadClusterFW()
					out := fwCollectRefs(c, r.Str("type"), "dc")
					return append(out, fwCollectRefs(s.loadGuestFW(c, env, vmid), r.Str("type"), "guest")...), nil
				}})
		}
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/firewall/groups", Perm: route.PermUser(), Params: route.NewParams(),
			Handler: func(*route.Request) (any, error) { l, _ := fwGroupList(s.loadClusterFW()); return l, nil }})
		s.Handle(&route.Route{Method: "POST", Path: "/cluster/firewall/groups", Perm: route.PermCheck("/", "Sys.Modify"),
			Params:  route.NewParams(pFWGroup(), route.Str("comment").Opt(), route.Str("rename").Pattern(fwNamePattern).MinLen(2).MaxLen(fwMaxGroupName).Opt(), pDigest()),
			Handler: s.createFWGroup})
		s.Handle(&route.Route{Method: "DELETE", Path: "/cluster/firewall/groups/{group}", Perm: route.PermCheck("/", "Sys.Modify"),
			Params: route.NewParams(pFWGroup()), Handler: s.deleteFWGroup})
		logParams := func(ps ...*route.Param) *route.Params {
			for _, n := range []string{"start", "limit", "since", "until"} {
				ps = append(ps, route.Int(n).Min(0).Opt())
			}
			return route.NewParams(ps...)
		}
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/firewall/log", Perm: route.PermCheck("/nodes/{node}", "Sys.Syslog"),
			ProxyTo: "node", Params: logParams(pNode()), Handler: fwLog})
		for _, t := range []string{"qemu", "lxc"} {
			s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/" + t + "/{vmid}/firewall/log", Perm: route.PermCheck("/vms/{vmid}", "VM.Console"),
				ProxyTo: "node", Params: logParams(pNode(), pVMID()), Handler: fwLog})
		}
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/firewall/options", Perm: route.PermCheck("/nodes/{node}", "Sys.Audit"),
			ProxyTo: "node", Params: route.NewParams(pNode()), Handler: func(r *route.Request) (any, error) {
				return fwOptionsOut(s.loadHostFW(s.loadClusterFW(), r.Str("node")).Options, fwHostNumeric), nil
			}})
		s.Handle(&route.Route{Method: "PUT", Path: "/nodes/{node}/firewall/options", Perm: route.PermCheck("/nodes/{node}", "Sys.Modify"),
			ProxyTo: "node", Params: route.NewParams(append([]*route.Param{pNode()}, fwHostOptionParams()...)...), Handler: s.setHostFWOptions})
	})
}

// fwLog is the firewall log (Host.pm and VM.pm log, dump_fw_logfile): no
// packet is filtered, so nothing is logged, and PVE::Tools
// dump_logfile_by_filehandle answers an empty log with one line.
func fwLog(*route.Request) (any, error) {
	total := 1
	return Result{Data: []map[string]any{{"n": 1, "t": "no content"}}, Total: &total}, nil
}

func fwIndex(names ...string) route.HandlerFunc {
	return func(*route.Request) (any, error) {
		out := []map[string]any{}
		for _, n := range names {
			out = append(out, map[string]any{"name": n})
		}
		return out, nil
	}
}

// Options the parsers read as integers, which JSON shows as numbers.
var (
	fwClusterNumeric = fieldSet("enable ebtables")
	fwHostNumeric    = fieldSet(`enable nosmurfs tcpflags ndp log_nf_conntrack nf_conntrack_allow_invalid
		protection_synflood nftables nf_conntrack_max nf_conntrack_tcp_timeout_established
		nf_conntrack_tcp_timeout_syn_recv protection_synflood_rate protection_synflood_burst protection_limit`)
)

// fwOptionsOut is copy_opject_with_digest of the options as read.
func fwOptionsOut(opts map[string]string, numeric map[string]bool) map[string]any {
	out := map[string]any{}
	for k, v := range opts {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && numeric[k] {
			out[k] = n
		} else {
			out[k] = v
		}
	}
	out["digest"] = fwObjectDigest(opts)
	return out
}

// fwClusterOptionParams are $cluster_option_properties plus delete and digest.
func fwClusterOptionParams() []*route.Param {
	return []*route.Param{
		route.Int("enable").Min(0).Opt(), route.Bool("ebtables").Opt(),
		route.Str("policy_in").Enum("ACCEPT", "REJECT", "DROP").Opt(), route.Str("policy_out").Enum("ACCEPT", "REJECT", "DROP").Opt(),
		route.Str("policy_forward").Enum("ACCEPT", "DROP").Opt(),
		route.Str("log_ratelimit").Opt().Props(route.Props(route.Bool("enable").DefaultKey().Default("1"),
			route.Str("rate").Pattern(`[1-9][0-9]*\/(second|minute|hour|day)`).Opt(), route.Int("burst").Min(0).Opt())),
		route.Str("delete").Fmt("pve-configid-list").Opt(), pDigest(),
	}
}

// fwHostOptionParams are $host_option_properties plus delete and digest.
func fwHostOptionParams() []*route.Param {
	ps := []*route.Param{route.Str("delete").Fmt("pve-configid-list").Opt(), pDigest(),
		route.Str("nf_conntrack_helpers").Fmt("pve-fw-conntrack-helper").Opt(),
		route.Int("nf_conntrack_max").Min(32768).Opt(), route.Int("nf_conntrack_tcp_timeout_established").Min(7875).Opt(),
		route.Int("nf_conntrack_tcp_timeout_syn_recv").Min(30).Max(60).Opt(),
		route.Int("protection_synflood_rate").Opt(), route.Int("protection_synflood_burst").Opt()}
	for _, b := range strings.Fields("enable nosmurfs tcpflags ndp nf_conntrack_allow_invalid protection_synflood log_nf_conntrack nftables") {
		ps = append(ps, route.Bool(b).Opt())
	}
	for _, l := range strings.Fields("log_level_in log_level_out log_level_forward tcp_flags_log_level smurf_log_level") {
		ps = append(ps, route.Str(l).Enum(fwLogLevels...).Opt())
	}
	return ps
}

// setFWOptions is the body of set_options: digest, deletions (an unknown
// option is a parameter error), then the values given.
func setFWOptions(r *route.Request, opts map[string]string, known []*route.Param, fix func(k, v string) string) error {
	if err := fwAssertDigest(r, fwObjectDigest(opts)); err != nil {
		return err
	}
	isOpt := map[string]bool{}
	for _, p := range known {
		if p.Name != "delete" && p.Name != "digest" && p.Name != "node" {
			isOpt[p.Name] = true
		}
	}
	for _, k := range splitList(r.Str("delete")) {
		if !isOpt[k] {
			return route.ParamErr("delete", "no such option '"+k+"'")
		}
		delete(opts, k)
	}
	for k := range isOpt {
		if r.Has(k) {
			opts[k] = fix(k, r.Str(k))
		}
	}
	return nil
}

// setClusterFWOptions is Cluster.pm set_options: an enable above 1 is
// stored as the current time (the anti-lockout double call; it lapses
// after 60 s when read, parse_clusterfw_option).
func (s *Server) setClusterFWOptions(r *route.Request) (any, error) {
	c := s.loadClusterFW()
	err := setFWOptions(r, c.Options, fwClusterOptionParams(), func(k, v string) string {
		if n, _ := strconv.ParseInt(v, 10, 64); k == "enable" && n > 1 {
			return strconv.FormatInt(s.clock.Now().Unix(), 10)
		}
		return v
	})
	if err != nil {
		return nil, err
	}
	s.fwWrite(fwClusterFile(), c.format())
	return nil, nil
}

// setHostFWOptions is Host.pm set_options.
func (s *Server) setHostFWOptions(r *route.Request) (any, error) {
	h := s.loadHostFW(s.loadClusterFW(), r.Str("node"))
	if err := setFWOptions(r, h.Options, fwHostOptionParams(), func(_, v string) string { return v }); err != nil {
		return nil, err
	}
	s.fwWrite(fwHostFile(r.Str("node")), h.format())
	return nil, nil
}

// fwCollectRefs is Firewall/Helpers.pm collect_refs: IP sets, then aliases.
func fwCollectRefs(c *fwConf, typ, scope string) []map[string]any {
	out := []map[string]any{}
	if typ == "" || typ == "ipset" {
		for _, n := range sortedKeys(c.IPSets) {
			e := map[string]any{"type": "ipset", "name": n, "ref": "+" + n, "scope": scope}
			if cm := c.IPSetComments[n]; cm != "" {
				e["comment"] = cm
			}
			out = append(out, e)
		}
	}
	if typ == "" || typ == "alias" {
		for _, n := range sortedKeys(c.Aliases) {
			e := map[string]any{"type": "alias", "name": n, "ref": n, "scope": scope}
			if cm := c.Aliases[n].Comment; cm != "" {
				e["comment"] = cm
			}
			out = append(out, e)
		}
	}
	return out
}

// fwGroupList is $get_security_group_list.
func fwGroupList(c *fwConf) ([]map[string]any, string) {
	return fwCommentedList("group", c.Groups, c.GroupComments)
}

// fwCommentedList is the list $get_security_group_list and
// $get_ipset_list build alike: each name, under key, in order with its
// comment, and the list's digest.
func fwCommentedList[V any](key string, byName map[string]V, comments map[string]string) ([]map[string]any, string) {
	list := []map[string]any{}
	for _, n := range sortedKeys(byName) {
		e := map[string]any{key: n}
		if c := comments[n]; c != "" {
			e["comment"] = c
		}
		list = append(list, e)
	}
	return list, fwListDigest(list)
}

// createFWGroup is create_security_group: a new empty group, or with
// rename a copy under the new name, every reference in the node, guest
// and cluster rules moved to it, then the old group removed.
func (s *Server) createFWGroup(r *route.Request) (any, error) {
	c := s.loadClusterFW()
	group, rename := r.Str("group"), r.Str("rename")
	if rename == "" {
		if _, ok := c.Groups[group]; ok {
			return nil, route.ParamErr("group", "Security group '"+group+"' already exists")
		}
		c.Groups[group] = []*fwRule{}
		if r.Has("comment") {
			c.GroupComments[group] = r.Str("comment")
		}
		s.fwWrite(fwClusterFile(), c.format())
		return nil, nil
	}
	_, digest := fwGroupList(c)
	if err := fwAssertDigest(r, digest); err != nil {
		return nil, err
	}
	if _, ok := c.Groups[rename]; !ok {
		return nil, route.ParamErr("group", "Security group '"+rename+"' does not exist")
	}
	if _, ok := c.Groups[group]; ok && group != rename {
		return nil, route.ParamErr("group", "Security group '"+group+"' does already exist")
	}
	if group == rename {
		if r.Has("comment") {
			c.GroupComments[group] = r.Str("comment")
		}
		s.fwWrite(fwClusterFile(), c.format())
		return nil, nil
	}
	c.Groups[group] = c.Groups[rename]
	c.GroupComments[group] = c.GroupComments[rename]
	if r.Has("comment") {
		c.GroupComments[group] = r.Str("comment")
	}
	s.fwWrite(fwClusterFile(), c.format())
	for _, n := range s.state.Nodes {
		h := s.loadHostFW(c, n.Name)
		fwRenameGroupRefs(h.Rules, rename, group)
		s.fwWrite(fwHostFile(n.Name), h.format())
	}
	vmids := make([]int, 0, len(s.state.Guests))
	for id := range s.state.Guests {
		vmids = append(vmids, id)
	}
	sort.Ints(vmids)
	for _, id := range vmids {
		env := "vm"
		if s.state.Guests[id].Type == "lxc" {
			env = "ct"
		}
		g := s.loadGuestFW(c, env, id)
		fwRenameGroupRefs(g.Rules, rename, group)
		s.fwWrite(fwGuestFile(id), g.format())
	}
	fwRenameGroupRefs(c.Rules, rename, group)
	delete(c.Groups, rename)
	delete(c.GroupComments, rename)
	s.fwWrite(fwClusterFile(), c.format())
	return nil, nil
}

// fwRenameGroupRefs is $rename_fw_rules.
func fwRenameGroupRefs(rules []*fwRule, from, to string) {
	for _, r := range rules {
		if r.F["type"] == "group" && r.F["action"] == from {
			r.F["action"] = to
		}
	}
}

// deleteFWGroup is delete_security_group: only an empty group goes; the
// Perl does not look for rules that still use it.
func (s *Server) deleteFWGroup(r *route.Request) (any, error) {
	c := s.loadClusterFW()
	rules, ok := c.Groups[r.Str("group")]
	if !ok {
		return nil, route.Fail("no such security group '%s'", r.Str("group"))
	}
	if len(rules) > 0 {
		return nil, route.Fail("Security group '%s' is not empty", r.Str("group"))
	}
	delete(c.Groups, r.Str("group"))
	s.fwWrite(fwClusterFile(), c.format())
	return nil, nil
}
