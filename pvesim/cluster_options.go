package pvesim

// Datacenter options (/cluster/options, datacenter.cfg) as far as guest
// tags go: tag-style, user-tag-access and registered-tags, with the rules
// pve-guest-common GuestHelpers.pm applies to a guest's tags.

import (
	"sort"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// tagRE is PVE::JSONSchema's $PVE_TAG_RE (case-insensitive).
const tagRE = `(?i:[a-z0-9_][a-z0-9_\-\+\.]*)`

var (
	// tagStyleFormat is DataCenterConfig.pm's $tag_style_format.
	tagStyleFormat = route.Props(
		route.Bool("case-sensitive").Opt().Default("0"),
		route.Str("color-map").Opt().Pattern(`(?:`+tagRE+`:[0-9a-fA-F]{6}(?::[0-9a-fA-F]{6})?)(?:;(?:`+tagRE+`:[0-9a-fA-F]{6}(?::[0-9a-fA-F]{6})?))*`),
		route.Str("ordering").Opt().Enum("config", "alphabetical").Default("alphabetical"),
		route.Str("shape").Opt().Enum("full", "circle", "dense", "none").Default("circle"),
	)
	// userTagAccessFormat is DataCenterConfig.pm's $user_tag_privs_format.
	userTagAccessFormat = route.Props(
		route.Str("user-allow").Opt().Enum("none", "list", "existing", "free").Default("free"),
		route.Str("user-allow-list").Opt().Pattern(tagRE+`(?:;`+tagRE+`)*`),
	)
)

func init() {
	registerRoutes(func(s *Server) {
		// API2/Cluster.pm get_options: user => 'all'; the Sys.Audit check is
		// the handler's.
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/options", Perm: route.PermUser(), Handler: s.clusterOptionsGet})
		s.Handle(&route.Route{Method: "PUT", Path: "/cluster/options", Perm: route.PermCheck("/", "Sys.Modify"),
			Params: route.NewParams(
				route.Str("tag-style").Opt().Props(tagStyleFormat),
				route.Str("user-tag-access").Opt().Props(userTagAccessFormat),
				route.Str("registered-tags").Opt().Pattern(`(?:`+tagRE+`;)*`+tagRE),
				route.Str("delete").Opt().Fmt("pve-configid-list"),
			),
			Handler: s.clusterOptionsSet})
	})
}

// dcOption parses a datacenter.cfg property string option (nil when unset).
func (s *Server) dcOption(key string, f *route.PropFormat) map[string]string {
	v, ok := s.state.Datacenter[key]
	if !ok {
		return nil
	}
	m, err := parsePropString(f, v, key)
	if err != nil {
		return nil
	}
	return m
}

// clusterOptionsGet is get_options: with Sys.Audit on / the parsed
// datacenter.cfg (parse_datacenter_config: description and mac_prefix
// always; tag-style and user-tag-access as objects, the tag lists as
// arrays), without it console and tag-style only; allowed-tags always.
func (s *Server) clusterOptionsGet(r *route.Request) (any, error) {
	res := map[string]any{}
	audit := s.check(r.User, "/", "Sys.Audit") == nil
	if audit {
		res["description"] = ""
		res["mac_prefix"] = "BC:24:11"
	}
	if m := s.dcOption("tag-style", tagStyleFormat); m != nil {
		ts := map[string]any{}
		for k, v := range m {
			ts[k] = typedValue(tagStyleFormat.Keys[k].Type, v)
		}
		res["tag-style"] = ts
	}
	if audit {
		if m := s.dcOption("user-tag-access", userTagAccessFormat); m != nil {
			ua := map[string]any{}
			for k, v := range m {
				ua[k] = v
			}
			if l, ok := m["user-allow-list"]; ok {
				ua["user-allow-list"] = strings.Split(l, ";")
			}
			res["user-tag-access"] = ua
		}
		if v, ok := s.state.Datacenter["registered-tags"]; ok {
			res["registered-tags"] = strings.Split(v, ";")
		}
	}
	allowed, _, _ := s.allowedTags(r.User)
	res["allowed-tags"] = sortedKeys(allowed)
	return res, nil
}

// clusterOptionsSet is set_options: the given keys are written, then the
// deleted ones removed; write_datacenter_config sorts the tag lists.
func (s *Server) clusterOptionsSet(r *route.Request) (any, error) {
	if s.state.Datacenter == nil {
		s.state.Datacenter = map[string]string{}
	}
	for _, k := range []string{"tag-style", "user-tag-access", "registered-tags"} {
		if !r.Has(k) {
			continue
		}
		v := r.Str(k)
		switch k {
		case "registered-tags":
			v = sortedTagList(v)
		case "user-tag-access":
			m, _ := parsePropString(userTagAccessFormat, v, k)
			if l, ok := m["user-allow-list"]; ok {
				m["user-allow-list"] = sortedTagList(l)
			}
			v = printPropString(userTagAccessFormat, m)
		}
		s.state.Datacenter[k] = v
	}
	for _, k := range splitList(r.Str("delete")) {
		delete(s.state.Datacenter, k)
	}
	return nil, nil
}

func sortedTagList(v string) string {
	l := strings.Split(v, ";")
	sort.Strings(l)
	return strings.Join(l, ";")
}

// uniqueTags is get_unique_tags (GuestHelpers.pm): lower-cased unless
// tag-style has case-sensitive=1, sorted (case-insensitively unless
// case-sensitive) unless ordering=config, duplicates dropped.
func (s *Server) uniqueTags(v string) string {
	style := s.dcOption("tag-style", tagStyleFormat)
	caseSensitive := style["case-sensitive"] == "1"
	tags := splitList(v)
	if style["ordering"] != "config" {
		sort.SliceStable(tags, func(i, j int) bool {
			if caseSensitive {
				return tags[i] < tags[j]
			}
			return strings.ToLower(tags[i]) < strings.ToLower(tags[j])
		})
	}
	seen := map[string]bool{}
	var out []string
	for _, t := range tags {
		if !caseSensitive {
			t = strings.ToLower(t)
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return strings.Join(out, ";")
}

// allowedTags is get_allowed_tags (GuestHelpers.pm): the tags a user may
// set, the registered (privileged) ones, and whether any tag goes.
func (s *Server) allowedTags(user string) (allowed, privileged map[string]bool, freeform bool) {
	privUser := s.check(user, "/", "Sys.Modify") == nil
	allowed, privileged = map[string]bool{}, map[string]bool{}
	if v, ok := s.state.Datacenter["registered-tags"]; ok {
		for _, t := range strings.Split(v, ";") {
			privileged[t] = true
		}
	}
	access := s.dcOption("user-tag-access", userTagAccessFormat)
	userAllow := access["user-allow"]
	if userAllow == "" {
		userAllow = "free"
	}
	freeform = userAllow == "free"
	if userAllow != "none" || privUser {
		for _, t := range splitList(access["user-allow-list"]) {
			allowed[t] = true
		}
	}
	if userAllow == "free" || userAllow == "existing" || privUser {
		for id, g := range s.state.Guests {
			if !privUser && s.check(user, "/vms/"+itoa(id), "VM.Audit") != nil {
				continue
			}
			for _, t := range splitList(g.Conf["tags"]) {
				allowed[t] = true
			}
		}
	}
	for t := range privileged {
		if privUser {
			allowed[t] = true
		} else {
			delete(allowed, t)
		}
	}
	return allowed, privileged, freeform
}

// assertTagPermissions is assert_tag_permissions (GuestHelpers.pm) once
// VM.Config.Options is checked: without Sys.Modify on /, every tag whose
// count differs between the old and the new list must be allowed (or any
// tag go) and not registered.
func (s *Server) assertTagPermissions(user, oldTags, newTags string) error {
	if s.check(user, "/", "Sys.Modify") == nil {
		return nil
	}
	count := func(v string) map[string]int {
		m := map[string]int{}
		for _, t := range splitList(v) {
			m[t]++
		}
		return m
	}
	o, n := count(oldTags), count(newTags)
	all := map[string]bool{}
	for t := range o {
		all[t] = true
	}
	for t := range n {
		all[t] = true
	}
	allowed, privileged, freeform := s.allowedTags(user)
	for _, t := range sortedKeys(all) {
		if o[t] == n[t] {
			continue
		}
		if (!allowed[t] && !freeform) || privileged[t] {
			return permErr("/, Sys.Modify for modifying tag '" + t + "'")
		}
	}
	return nil
}
