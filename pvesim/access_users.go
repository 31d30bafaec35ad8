package pvesim

import "github.com/proxmops/proxmops/pvesim/route"

// GET /access/users/{userid}: pve-access-control's API2/User.pm read_user,
// with its ['userid-group', ['User.Modify', 'Sys.Audit']] check
// (RPCEnvironment.pm check_api2_permissions). The simulator knows root@pam
// and the token's user, in no group; the token's privsep flag is
// Options.TokenPrivileges != nil.

func init() {
	registerRoutes(func(s *Server) {
		s.Handle(&route.Route{Method: "GET", Path: "/access/users/{userid}", Perm: permUseridGroup("User.Modify", "Sys.Audit"),
			Params: route.NewParams(route.Str("userid").Fmt("pve-userid").MaxLen(64)), Handler: s.readUser})
	})
}

// permUseridGroup is ['userid-group', [privs]]: any of privs on
// /access/groups, or on a group the user of the userid parameter is in.
func permUseridGroup(privs ...string) *route.Perm { return route.PermUseridGroup(privs...) }

// checkUseridGroup is the userid-group test: the user must exist
// (check_user_exist dies otherwise), then any of the privileges on all
// groups will do; a group the user is in would too, but the simulated
// users are in none (filter_groups finds nothing), so that ends in
// raise_perm_exc().
func (s *Server) checkUseridGroup(p *route.Perm, user string, params map[string]string, noerr bool) (bool, error) {
	if id := params["userid"]; !s.userExists(id) {
		if noerr {
			return false, nil
		}
		return false, route.Fail("no such user ('%s')", id)
	}
	if s.checkAny(user, "/access/groups", p.Privs...) == nil {
		return true, nil
	}
	return false, permErr("")
}

// readUser is extract_user_data($data, 1): enable and expire as user.cfg
// has them, the groups, and the user's tokens with their privsep and
// expire (null when the user has none).
func (s *Server) readUser(r *route.Request) (any, error) {
	id := r.Str("userid")
	var tokens map[string]any
	if owner, name, ok := cutToken(s.opts.TokenID); ok && owner == id {
		privsep := 0
		if s.access.privsep {
			privsep = 1
		}
		tokens = map[string]any{name: map[string]any{"privsep": privsep, "expire": 0}}
	}
	return map[string]any{"enable": 1, "expire": 0, "groups": []string{}, "tokens": tokens}, nil
}

func cutToken(id string) (user, name string, ok bool) {
	for i := 0; i < len(id); i++ {
		if id[i] == '!' {
			return id[:i], id[i+1:], true
		}
	}
	return "", "", false
}
