package pvesim

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// The /access endpoints for roles, ACLs and effective permissions
// (pve-access-control PVE/API2/Role.pm, ACL.pm, AccessControl.pm). The
// model behind them is in perms.go.

// topLevelPaths are get_effective_permissions' default paths; paths named
// in ACLs are added (the simulator has no pools).
var topLevelPaths = []string{"/", "/access", "/access/groups", "/nodes", "/pool", "/sdn", "/storage", "/vms"}

var (
	reRoleID  = regexp.MustCompile(`^[A-Za-z0-9.\-_]+$`)
	reTokenID = regexp.MustCompile(`^[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+![A-Za-z][A-Za-z0-9.\-_]+$`)
)

func init() {
	route.RegisterFormat("pve-roleid", regexFormat(reRoleID, "role name '%s' contains invalid characters\n"))
	route.RegisterFormat("pve-groupid", regexFormat(reRoleID, "group name '%s' contains invalid characters\n"))
	route.RegisterFormat("pve-tokenid", regexFormat(reTokenID, "value '%s' does not look like a valid token ID\n"))
	registerRoutes(func(s *Server) {
		s.Handle(&route.Route{Method: "GET", Path: "/access/permissions", Perm: route.PermUser(),
			Params: route.NewParams(
				route.Str("path").Opt(),
				route.Str("userid").Opt().Pattern(`[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+(?:![A-Za-z][A-Za-z0-9.\-_]+)?`),
			),
			Handler: s.accessPermissions,
		})
		s.Handle(&route.Route{Method: "GET", Path: "/access/roles", Perm: route.PermUser(), Handler: s.roleIndex})
		s.Handle(&route.Route{Method: "GET", Path: "/access/roles/{roleid}", Perm: route.PermUser(),
			Params: route.NewParams(route.Str("roleid").Fmt("pve-roleid")), Handler: s.roleRead})
		s.Handle(&route.Route{Method: "GET", Path: "/access/acl", Perm: route.PermUser(), Handler: s.aclRead})
		s.Handle(&route.Route{Method: "PUT", Path: "/access/acl", Perm: permModify("{path}"),
			Params: route.NewParams(
				route.Str("path"),
				route.Str("roles").Fmt("pve-roleid-list"),
				route.Str("users").Opt().Fmt("pve-userid-list"),
				route.Str("groups").Opt().Fmt("pve-groupid-list"),
				route.Str("tokens").Opt().Fmt("pve-tokenid-list"),
				route.Bool("propagate").Opt().Default("1"),
				route.Bool("delete").Opt(),
			),
			Handler: s.aclUpdate})
	})
}

// permModify is ['perm-modify', path]: check_perm_modify.
func permModify(path string) *route.Perm { return route.PermModify(path) }

// checkPermModify is RPCEnvironment::check_perm_modify: Permissions.Modify,
// or the allocation privilege of the object the path names.
func (s *Server) checkPermModify(user, path string) error {
	if path == "" {
		return s.check(user, "/access", "Permissions.Modify")
	}
	privs := []string{"Permissions.Modify"}
	switch {
	case strings.HasPrefix(path, "/storage/") && len(path) > len("/storage/"):
		privs = append(privs, "Datastore.Allocate")
	case strings.HasPrefix(path, "/vms/") && len(path) > len("/vms/"):
		privs = append(privs, "VM.Allocate")
	case strings.HasPrefix(path, "/pool/") && len(path) > len("/pool/"):
		privs = append(privs, "Pool.Allocate")
	}
	return s.checkAny(user, path, privs...)
}

// accessPermissions is API2/AccessControl.pm "permissions": a map of path
// to a map of privilege to its propagate flag. Anybody may read their own
// (or their own tokens'); others need Sys.Audit on /access.
func (s *Server) accessPermissions(r *route.Request) (any, error) {
	userid := r.User
	if r.Has("userid") {
		userid = r.Str("userid")
	}
	owner, _, isToken := strings.Cut(userid, "!")
	if userid != r.User && !(isToken && owner == r.User) {
		if err := s.check(r.User, "/access", "Sys.Audit"); err != nil {
			return nil, err
		}
	}
	flags := func(p map[string]bool) map[string]int {
		out := make(map[string]int, len(p))
		for k, v := range p {
			out[k] = boolInt(v)
		}
		return out
	}
	res := map[string]map[string]int{}
	if path := r.Str("path"); path != "" {
		res[path] = flags(s.permissions(userid, path))
		return res, nil
	}
	paths := append([]string(nil), topLevelPaths...)
	for _, e := range s.access.acl {
		paths = append(paths, e.Path)
	}
	// get_effective_permissions (RPCEnvironment.pm) also reads the paths
	// pool members stand at: a role held on a pool grants on them.
	for _, pool := range s.state.Pools {
		for id := range pool.VMs {
			paths = append(paths, "/vms/"+strconv.Itoa(id))
		}
		for id := range pool.Storage {
			paths = append(paths, "/storage/"+id)
		}
	}
	for _, p := range paths {
		if perms := s.permissions(userid, p); len(perms) > 0 {
			res[p] = flags(perms)
		}
	}
	return res, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// roleIndex is API2/Role.pm "index".
func (s *Server) roleIndex(*route.Request) (any, error) {
	var out []map[string]any
	for _, id := range s.access.sortedRoleIDs() {
		privs, _ := s.access.role(id)
		_, special := builtinRoles[id]
		out = append(out, map[string]any{"roleid": id, "privs": strings.Join(sortedKeys(privs), ","), "special": boolInt(special)})
	}
	return out, nil
}

// roleRead is API2/Role.pm "read_role": privilege name to 1.
func (s *Server) roleRead(r *route.Request) (any, error) {
	privs, ok := s.access.role(r.Str("roleid"))
	if !ok {
		return nil, route.Fail("role '%s' does not exist", r.Str("roleid"))
	}
	out := map[string]int{}
	for p := range privs {
		out[p] = 1
	}
	return out, nil
}

// aclRead is API2/ACL.pm "read_acl": the entries on paths where the caller
// may audit (Sys.Audit on /access) or modify permissions.
func (s *Server) aclRead(r *route.Request) (any, error) {
	audit := s.can(r.User, "/access", "Sys.Audit")
	out := []map[string]any{}
	for _, e := range s.access.acl {
		if !audit && s.checkPermModify(r.User, e.Path) != nil {
			continue
		}
		out = append(out, map[string]any{"path": e.Path, "type": e.Type, "ugid": e.UGID, "roleid": e.Role, "propagate": boolInt(e.Propagate)})
	}
	return out, nil
}

// aclUpdate is API2/ACL.pm "update_acl".
func (s *Server) aclUpdate(r *route.Request) (any, error) {
	if r.Str("users") == "" && r.Str("groups") == "" && r.Str("tokens") == "" {
		msg := "either 'users', 'groups' or 'tokens' is required."
		return nil, route.ParamError(map[string]string{"users": msg, "groups": msg, "tokens": msg})
	}
	path := normalizeACLPath(r.Str("path"))
	if !reACLPathChars.MatchString(path) || (!r.Bool("delete") && !validACLPath(path)) {
		return nil, route.ParamErr("path", fmt.Sprintf("invalid ACL path '%s'", r.Str("path")))
	}
	propagate := r.BoolOr("propagate", true)
	mine := s.permissions(r.User, path)
	for _, role := range splitList(r.Str("roles")) {
		privs, ok := s.access.role(role)
		if !ok {
			return nil, route.Fail("role '%s' does not exist", role)
		}
		if _, ok := mine["Permissions.Modify"]; !ok {
			if err := checkRoleSubset(role, privs, mine, propagate, r.Bool("delete")); err != nil {
				return nil, err
			}
		}
		for _, g := range splitList(r.Str("groups")) {
			return nil, route.Fail("group '%s' does not exist", g)
		}
		for _, u := range splitList(r.Str("users")) {
			if !s.userExists(u) {
				return nil, route.Fail("user '%s' does not exist", u)
			}
			s.access.setACL(aclEntry{Path: path, Type: "user", UGID: u, Role: role, Propagate: propagate}, r.Bool("delete"))
		}
		for _, t := range splitList(r.Str("tokens")) {
			owner, name, _ := strings.Cut(t, "!")
			if !s.userExists(owner) {
				return nil, route.Fail("user '%s' does not exist", owner)
			}
			if t != s.opts.TokenID {
				return nil, route.Fail("no such token '%s' for user '%s'", name, owner)
			}
			s.access.setACL(aclEntry{Path: path, Type: "token", UGID: t, Role: role, Propagate: propagate}, r.Bool("delete"))
		}
	}
	return nil, nil
}

// checkRoleSubset is update_acl's rule for callers without
// Permissions.Modify: they hand out only privileges they hold themselves.
func checkRoleSubset(role string, privs, mine map[string]bool, propagate, del bool) error {
	verb := "add"
	if del {
		verb = "remove"
	}
	for _, p := range sortedKeys(privs) {
		have, ok := mine[p]
		if !ok {
			return route.ParamErr("role", fmt.Sprintf("Cannot %s role '%s' - requires 'Permissions.Modify' or superset of privileges.", verb, role))
		}
		if propagate && !have && !del {
			return route.ParamErr("role", fmt.Sprintf("Cannot %s role '%s' with propagation - requires 'Permissions.Modify' or propagated superset of privileges.", verb, role))
		}
	}
	if role == "NoAccess" {
		return route.ParamErr("role", fmt.Sprintf("Cannot %s role '%s' - requires 'Permissions.Modify'", verb, role))
	}
	return nil
}

// setACL adds (replacing the propagate flag) or removes one entry.
func (a *accessState) setACL(e aclEntry, del bool) {
	for i, old := range a.acl {
		if old.Path == e.Path && old.Type == e.Type && old.UGID == e.UGID && old.Role == e.Role {
			if del {
				a.acl = append(a.acl[:i], a.acl[i+1:]...)
			} else {
				a.acl[i].Propagate = e.Propagate
			}
			return
		}
	}
	if !del {
		a.acl = append(a.acl, e)
	}
}

var reACLPathChars = regexp.MustCompile(`^[[:alnum:]./\-_]+$`)

// reACLPath is AccessControl::check_path (the paths an ACL may name).
var reACLPath = regexp.MustCompile(`^(/|/access|/access/groups|/access/groups/[[:alnum:].\-_]+|/access/realm|/access/realm/[[:alnum:].\-_]+` +
	`|/nodes|/nodes/[[:alnum:].\-_]+|/pool|/pool/[A-Za-z0-9.\-_]+(?:/[A-Za-z0-9.\-_]+){0,2}` +
	`|/sdn|/sdn/controllers|/sdn/controllers/[[:alnum:]_\-]+|/sdn/dns|/sdn/dns/[[:alnum:]]+|/sdn/fabrics|/sdn/fabrics/[[:alnum:]]+` +
	`|/sdn/ipams|/sdn/ipams/[[:alnum:]]+|/sdn/prefix-lists|/sdn/prefix-lists/[[:alnum:]]+|/sdn/route-maps|/sdn/route-maps/[[:alnum:]]+` +
	`|/sdn/zones|/sdn/zones/[[:alnum:].\-_]+|/sdn/zones/[[:alnum:].\-_]+/[[:alnum:].\-_]+|/sdn/zones/[[:alnum:].\-_]+/[[:alnum:].\-_]+/[1-9][0-9]{0,3}` +
	`|/storage|/storage/[[:alnum:].\-_]+|/vms|/vms/[1-9][0-9]{2,}|/mapping|/mapping/[[:alnum:].\-_]+|/mapping/[[:alnum:].\-_]+/[[:alnum:].\-_]+)$`)

func validACLPath(p string) bool { return reACLPath.MatchString(p) }
