package pvesim

import (
	"regexp"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Aliases and IP sets of the cluster and of a guest: pve-firewall
// src/PVE/API2/Firewall/Aliases.pm (AliasesBase, ClusterAliases, VMAliases,
// CTAliases) and IPSet.pm (IPSetBase, BaseIPSetList and their Cluster, VM
// and CT subclasses).

// fwScope is where a subclass keeps its objects (load_config, save_*).
type fwScope struct {
	path          string
	params        []*route.Param
	audit, modify *route.Perm
	load          func(s *Server, r *route.Request) (cluster, fw *fwConf)
	save          func(s *Server, r *route.Request, fw *fwConf)
}

func fwObjectScopes() []*fwScope {
	out := []*fwScope{{path: "/cluster/firewall", audit: route.PermCheck("/", "Sys.Audit"), modify: route.PermCheck("/", "Sys.Modify"),
		load: func(s *Server, _ *route.Request) (*fwConf, *fwConf) { return nil, s.loadClusterFW() },
		save: func(s *Server, _ *route.Request, fw *fwConf) { s.fwWrite(fwClusterFile(), fw.format()) }}}
	for _, typ := range []string{"qemu", "lxc"} {
		env := map[string]string{"qemu": "vm", "lxc": "ct"}[typ]
		out = append(out, &fwScope{path: "/nodes/{node}/" + typ + "/{vmid}/firewall", params: []*route.Param{pNode(), pVMID()},
			audit: route.PermCheck("/vms/{vmid}", "VM.Audit"), modify: route.PermCheck("/vms/{vmid}", "VM.Config.Network"),
			load: func(s *Server, r *route.Request) (*fwConf, *fwConf) {
				vmid, _ := r.Int("vmid")
				c := s.loadClusterFW()
				return c, s.loadGuestFW(c, env, vmid)
			},
			save: func(s *Server, r *route.Request, fw *fwConf) {
				vmid, _ := r.Int("vmid")
				s.fwWrite(fwGuestFile(vmid), fw.format())
			}})
	}
	return out
}

func pFWAlias(name string) *route.Param {
	return route.Str(name).Pattern(fwNamePattern).MinLen(2).MaxLen(fwMaxAliasName)
}

func pFWIPSet(name string) *route.Param {
	return route.Str(name).Pattern(fwNamePattern).MinLen(2).MaxLen(fwMaxIPSetName)
}

func pDigest() *route.Param { return route.Str("digest").MaxLen(64).Opt() }

func init() {
	registerRoutes(func(s *Server) {
		for _, sc := range fwObjectScopes() {
			sc.registerAliases(s)
			sc.registerIPSets(s)
		}
	})
}

func (sc *fwScope) ps(extra ...*route.Param) *route.Params {
	return route.NewParams(append(append([]*route.Param{}, sc.params...), extra...)...)
}

func (sc *fwScope) registerAliases(s *Server) {
	base := sc.path + "/aliases"
	h := func(f func(*fwScope, *Server, *route.Request) (any, error)) route.HandlerFunc {
		return func(r *route.Request) (any, error) { return f(sc, s, r) }
	}
	cidr := func() *route.Param { return route.Str("cidr").Fmt("IPorCIDR") }
	s.Handle(&route.Route{Method: "GET", Path: base, Perm: sc.audit, Params: sc.ps(), Handler: h((*fwScope).aliasList)})
	s.Handle(&route.Route{Method: "POST", Path: base, Perm: sc.modify, Handler: h((*fwScope).aliasCreate),
		Params: sc.ps(pFWAlias("name"), cidr(), route.Str("comment").Opt())})
	s.Handle(&route.Route{Method: "GET", Path: base + "/{name}", Perm: sc.audit, Params: sc.ps(pFWAlias("name")), Handler: h((*fwScope).aliasRead)})
	s.Handle(&route.Route{Method: "PUT", Path: base + "/{name}", Perm: sc.modify, Handler: h((*fwScope).aliasUpdate),
		Params: sc.ps(pFWAlias("name"), pFWAlias("rename").Opt(), cidr(), route.Str("comment").Opt(), pDigest())})
	s.Handle(&route.Route{Method: "DELETE", Path: base + "/{name}", Perm: sc.modify, Handler: h((*fwScope).aliasDelete),
		Params: sc.ps(pFWAlias("name"), pDigest())})
}

func fwAliasMap(a *fwAlias) map[string]any {
	m := map[string]any{"name": a.Name, "cidr": a.CIDR}
	if a.IPVersion != 0 {
		m["ipversion"] = a.IPVersion
	}
	if a.Comment != "" {
		m["comment"] = a.Comment
	}
	return m
}

// aliasList is get_aliases: sorted by name, with the list's digest.
func (sc *fwScope) aliasList(s *Server, r *route.Request) (any, error) {
	_, fw := sc.load(s, r)
	list := []map[string]any{}
	for _, k := range sortedKeys(fw.Aliases) {
		list = append(list, fwAliasMap(fw.Aliases[k]))
	}
	fwListDigest(list)
	return list, nil
}

func (sc *fwScope) aliasDigest(fw *fwConf) string {
	list := []map[string]any{}
	for _, k := range sortedKeys(fw.Aliases) {
		list = append(list, fwAliasMap(fw.Aliases[k]))
	}
	return fwListDigest(list)
}

// aliasCreate is create_alias: names are compared in lower case.
func (sc *fwScope) aliasCreate(s *Server, r *route.Request) (any, error) {
	_, fw := sc.load(s, r)
	name := strings.ToLower(r.Str("name"))
	if _, ok := fw.Aliases[name]; ok {
		return nil, route.ParamErr("name", "alias '"+r.Str("name")+"' already exists")
	}
	fw.Aliases[name] = &fwAlias{Name: r.Str("name"), CIDR: r.Str("cidr"), Comment: r.Str("comment")}
	sc.save(s, r, fw)
	return nil, nil
}

// aliasRead is read_alias: the alias without a digest.
func (sc *fwScope) aliasRead(s *Server, r *route.Request) (any, error) {
	_, fw := sc.load(s, r)
	a, ok := fw.Aliases[strings.ToLower(r.Str("name"))]
	if !ok {
		return nil, route.ParamErr("name", "no such alias")
	}
	return fwAliasMap(a), nil
}

// aliasUpdate is update_alias: digest, the alias replaced, then renamed.
func (sc *fwScope) aliasUpdate(s *Server, r *route.Request) (any, error) {
	_, fw := sc.load(s, r)
	if err := fwAssertDigest(r, sc.aliasDigest(fw)); err != nil {
		return nil, err
	}
	name := strings.ToLower(r.Str("name"))
	if _, ok := fw.Aliases[name]; !ok {
		return nil, route.ParamErr("name", "no such alias")
	}
	fw.Aliases[name] = &fwAlias{Name: r.Str("name"), CIDR: r.Str("cidr"), Comment: r.Str("comment")}
	if rename := strings.ToLower(r.Str("rename")); rename != "" && rename != name {
		if _, ok := fw.Aliases[rename]; ok {
			return nil, route.ParamErr("name", "alias '"+r.Str("rename")+"' already exists")
		}
		a := fw.Aliases[name]
		a.Name = r.Str("rename")
		fw.Aliases[rename] = a
		delete(fw.Aliases, name)
	}
	sc.save(s, r, fw)
	return nil, nil
}

// aliasDelete is remove_alias: a missing alias is no error.
func (sc *fwScope) aliasDelete(s *Server, r *route.Request) (any, error) {
	_, fw := sc.load(s, r)
	if err := fwAssertDigest(r, sc.aliasDigest(fw)); err != nil {
		return nil, err
	}
	delete(fw.Aliases, strings.ToLower(r.Str("name")))
	sc.save(s, r, fw)
	return nil, nil
}

func (sc *fwScope) registerIPSets(s *Server) {
	base := sc.path + "/ipset"
	h := func(f func(*fwScope, *Server, *route.Request) (any, error)) route.HandlerFunc {
		return func(r *route.Request) (any, error) { return f(sc, s, r) }
	}
	cidr := func() *route.Param { return route.Str("cidr").Fmt("IPorCIDRorAlias") }
	s.Handle(&route.Route{Method: "GET", Path: base, Perm: sc.audit, Params: sc.ps(), Handler: h((*fwScope).ipsetIndex)})
	s.Handle(&route.Route{Method: "POST", Path: base, Perm: sc.modify, Handler: h((*fwScope).ipsetCreate),
		Params: sc.ps(pFWIPSet("name"), route.Str("comment").Opt(), pDigest(), pFWIPSet("rename").Opt())})
	s.Handle(&route.Route{Method: "GET", Path: base + "/{name}", Perm: sc.audit, Params: sc.ps(pFWIPSet("name")), Handler: h((*fwScope).ipsetEntries)})
	s.Handle(&route.Route{Method: "DELETE", Path: base + "/{name}", Perm: sc.modify, Handler: h((*fwScope).ipsetDelete),
		Params: sc.ps(pFWIPSet("name"), route.Bool("force").Opt())})
	s.Handle(&route.Route{Method: "POST", Path: base + "/{name}", Perm: sc.modify, Handler: h((*fwScope).ipAdd),
		Params: sc.ps(pFWIPSet("name"), cidr(), route.Bool("nomatch").Opt(), route.Str("comment").Opt())})
	// fragmentDelimiter '': the CIDR's own '/' belongs to the parameter.
	entry := base + "/{name}/{cidr*}"
	s.Handle(&route.Route{Method: "GET", Path: entry, Perm: sc.audit, Params: sc.ps(pFWIPSet("name"), cidr()), Handler: h((*fwScope).ipRead)})
	s.Handle(&route.Route{Method: "PUT", Path: entry, Perm: sc.modify, Handler: h((*fwScope).ipUpdate),
		Params: sc.ps(pFWIPSet("name"), cidr(), route.Bool("nomatch").Opt(), route.Str("comment").Opt(), pDigest())})
	s.Handle(&route.Route{Method: "DELETE", Path: entry, Perm: sc.modify, Handler: h((*fwScope).ipDelete),
		Params: sc.ps(pFWIPSet("name"), cidr(), pDigest())})
}

// ipsetList is $get_ipset_list: names in order, their comments, a digest.
func ipsetList(fw *fwConf) ([]map[string]any, string) {
	return fwCommentedList("name", fw.IPSets, fw.IPSetComments)
}

func (sc *fwScope) ipsetIndex(s *Server, r *route.Request) (any, error) {
	_, fw := sc.load(s, r)
	list, _ := ipsetList(fw)
	return list, nil
}

// ipsetCreate is create_ipset: a new empty set, or with rename an
// existing one renamed (and its comment set: rename = name does only that).
func (sc *fwScope) ipsetCreate(s *Server, r *route.Request) (any, error) {
	_, fw := sc.load(s, r)
	name, rename := r.Str("name"), r.Str("rename")
	if rename != "" {
		_, digest := ipsetList(fw)
		if err := fwAssertDigest(r, digest); err != nil {
			return nil, err
		}
		if _, ok := fw.IPSets[rename]; !ok {
			return nil, route.ParamErr("name", "IPSet '"+rename+"' does not exist")
		}
		if _, ok := fw.IPSets[name]; ok && name != rename {
			return nil, route.ParamErr("name", "IPSet '"+name+"' does already exist")
		}
		data := fw.IPSets[rename]
		delete(fw.IPSets, rename)
		fw.IPSets[name] = data
		if c, ok := fw.IPSetComments[rename]; ok {
			delete(fw.IPSetComments, rename)
			if c != "" {
				fw.IPSetComments[name] = c
			}
		}
		if r.Has("comment") {
			fw.IPSetComments[name] = r.Str("comment")
		}
	} else {
		if _, ok := fw.IPSets[name]; ok {
			return nil, route.ParamErr("name", "IPSet '"+name+"' already exists")
		}
		fw.IPSets[name] = []*fwEntry{}
		if r.Has("comment") {
			fw.IPSetComments[name] = r.Str("comment")
		}
	}
	sc.save(s, r, fw)
	return nil, nil
}

// loadIPSet is IPSetBase load_config: the set must exist.
func (sc *fwScope) loadIPSet(s *Server, r *route.Request) (*fwConf, *fwConf, []*fwEntry, error) {
	cluster, fw := sc.load(s, r)
	set, ok := fw.IPSets[r.Str("name")]
	if !ok {
		return nil, nil, nil, route.Fail("no such IPSet '%s'", r.Str("name"))
	}
	return cluster, fw, set, nil
}

// loadIPSetUnmodified is how update_ip and remove_ip begin: the IPSet,
// then assert_if_modified against the digest of its entry list.
func (sc *fwScope) loadIPSetUnmodified(s *Server, r *route.Request) (*fwConf, []*fwEntry, error) {
	_, fw, set, err := sc.loadIPSet(s, r)
	if err != nil {
		return nil, nil, err
	}
	if err := fwAssertDigest(r, fwListDigest(fwEntriesList(set))); err != nil {
		return nil, nil, err
	}
	return fw, set, nil
}

func fwEntriesList(set []*fwEntry) []map[string]any {
	list := []map[string]any{}
	for _, e := range set {
		m := map[string]any{"cidr": e.CIDR}
		if e.Nomatch {
			m["nomatch"] = 1
		}
		if e.Comment != "" {
			m["comment"] = e.Comment
		}
		if len(e.Errors) > 0 {
			m["errors"] = e.Errors
		}
		list = append(list, m)
	}
	return list
}

func (sc *fwScope) ipsetEntries(s *Server, r *route.Request) (any, error) {
	_, _, set, err := sc.loadIPSet(s, r)
	if err != nil {
		return nil, err
	}
	list := fwEntriesList(set)
	fwListDigest(list)
	return list, nil
}

// ipsetDelete is delete_ipset: a set with entries only with force.
func (sc *fwScope) ipsetDelete(s *Server, r *route.Request) (any, error) {
	_, fw, set, err := sc.loadIPSet(s, r)
	if err != nil {
		return nil, err
	}
	if len(set) > 0 && !r.Bool("force") {
		return nil, route.Fail("IPSet '%s' is not empty", r.Str("name"))
	}
	delete(fw.IPSets, r.Str("name"))
	sc.save(s, r, fw)
	return nil, nil
}

var reFWZeroPrefix = regexp.MustCompile(`/0+$`)

// ipAdd is create_ip: an alias must resolve, an address is normalised
// (host bits cleared, /32 or /128 dropped), duplicates and /0 refused.
func (sc *fwScope) ipAdd(s *Server, r *route.Request) (any, error) {
	cluster, fw, set, err := sc.loadIPSet(s, r)
	if err != nil {
		return nil, err
	}
	cidr := r.Str("cidr")
	if m := reFWAliasRef.FindStringSubmatch(cidr); m != nil {
		if _, _, err := fwResolveAlias(cluster, fw, m[2], m[1]); err != nil {
			return nil, route.Fail("%s", strings.TrimSuffix(err.Error(), "\n"))
		}
	} else {
		cidr, _, err = fwParseIPOrCIDR(fwCleanCIDR(cidr))
		if err != nil {
			return nil, route.Fail("%s", strings.TrimSuffix(err.Error(), "\n"))
		}
	}
	for _, e := range set {
		if e.CIDR == cidr {
			return nil, route.ParamErr("cidr", "address '"+cidr+"' already exists")
		}
	}
	if reFWZeroPrefix.MatchString(cidr) {
		return nil, route.ParamErr("cidr", "a zero prefix is not allowed in ipset entries")
	}
	e := &fwEntry{CIDR: cidr, Nomatch: r.Bool("nomatch"), Comment: r.Str("comment")}
	fw.IPSets[r.Str("name")] = append([]*fwEntry{e}, set...)
	sc.save(s, r, fw)
	return nil, nil
}

// ipRead is read_ip: the entry whose CIDR is exactly the one given.
func (sc *fwScope) ipRead(s *Server, r *route.Request) (any, error) {
	_, _, set, err := sc.loadIPSet(s, r)
	if err != nil {
		return nil, err
	}
	list := fwEntriesList(set)
	fwListDigest(list)
	for _, e := range list {
		if e["cidr"] == r.Str("cidr") {
			return e, nil
		}
	}
	return nil, route.ParamErr("cidr", "no such IP/Network")
}

// ipUpdate is update_ip: nomatch and comment are replaced (an absent one
// is cleared).
func (sc *fwScope) ipUpdate(s *Server, r *route.Request) (any, error) {
	fw, set, err := sc.loadIPSetUnmodified(s, r)
	if err != nil {
		return nil, err
	}
	for _, e := range set {
		if e.CIDR == r.Str("cidr") {
			e.Nomatch, e.Comment = r.Bool("nomatch"), r.Str("comment")
			sc.save(s, r, fw)
			return nil, nil
		}
	}
	return nil, route.ParamErr("cidr", "no such IP/Network")
}

// ipDelete is remove_ip: a missing entry is no error.
func (sc *fwScope) ipDelete(s *Server, r *route.Request) (any, error) {
	fw, set, err := sc.loadIPSetUnmodified(s, r)
	if err != nil {
		return nil, err
	}
	kept := []*fwEntry{}
	for _, e := range set {
		if e.CIDR != r.Str("cidr") {
			kept = append(kept, e)
		}
	}
	fw.IPSets[r.Str("name")] = kept
	sc.save(s, r, fw)
	return nil, nil
}
