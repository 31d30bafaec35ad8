package pvesim

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Privileges, roles and ACLs as pve-access-control keeps them
// (PVE/AccessControl.pm, PVE/RPCEnvironment.pm).
//
// The simulator knows root@pam and the configured API token. root@pam may
// do anything. The token belongs to the user in its id; a user other than
// root@pam holds the Administrator role on "/" (an ACL the simulator adds).
// By default the token has no privilege separation, so it has its user's
// privileges. With Options.TokenPrivileges the token is privilege-separated
// and holds a role with exactly those privileges on "/", so its privileges
// are the intersection of the user's and that role's (RPCEnvironment.pm
// compile_acl_path). PUT /access/acl changes the ACLs at run time; they are
// not part of the saved state.

// privGroups is AccessControl.pm's $privgroups (Proxmox VE 9.x): per
// category the privileges of the root, admin, user and audit levels.
var privGroups = []struct {
	cat                      string
	root, admin, user, audit []string
}{
	{"VM", nil,
		[]string{"VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.HWType",
			"VM.Config.Options", "VM.Allocate", "VM.Clone", "VM.GuestAgent.Unrestricted", "VM.Migrate", "VM.Replicate",
			"VM.Snapshot", "VM.Snapshot.Rollback"},
		[]string{"VM.Config.CDROM", "VM.Config.Cloudinit", "VM.Console", "VM.Backup", "VM.GuestAgent.FileRead",
			"VM.GuestAgent.FileSystemMgmt", "VM.GuestAgent.FileWrite", "VM.PowerMgmt"},
		[]string{"VM.Audit", "VM.GuestAgent.Audit"}},
	{"Sys", []string{"Sys.PowerMgmt", "Sys.Modify", "Sys.Incoming", "Sys.AccessNetwork"},
		[]string{"Sys.Console", "Sys.Syslog"}, nil, []string{"Sys.Audit"}},
	{"Datastore", nil, []string{"Datastore.Allocate", "Datastore.AllocateTemplate"},
		[]string{"Datastore.AllocateSpace"}, []string{"Datastore.Audit"}},
	{"SDN", nil, []string{"SDN.Allocate", "SDN.Audit"}, []string{"SDN.Use"}, []string{"SDN.Audit"}},
	{"User", []string{"Realm.Allocate"}, []string{"User.Modify", "Group.Allocate", "Realm.AllocateUser"}, nil, nil},
	{"Pool", nil, []string{"Pool.Allocate"}, []string{"Pool.Audit"}, []string{"Pool.Audit"}},
	{"Mapping", nil, []string{"Mapping.Modify"}, []string{"Mapping.Use"}, []string{"Mapping.Audit"}},
}

// privileges are all valid privilege names, sorted (the Administrator role).
var privileges []string

// builtinRoles are the special roles create_roles builds from privGroups.
var builtinRoles map[string]map[string]bool

func init() {
	valid := map[string]bool{"Permissions.Modify": true}
	roles := map[string]map[string]bool{"NoAccess": {}, "Administrator": valid}
	add := func(role string, privs ...string) {
		if roles[role] == nil {
			roles[role] = map[string]bool{}
		}
		for _, p := range privs {
			roles[role][p] = true
		}
	}
	for _, g := range privGroups {
		for _, l := range [][]string{g.root, g.admin, g.user, g.audit} {
			for _, p := range l {
				valid[p] = true
			}
		}
		for _, l := range [][]string{g.admin, g.user, g.audit} {
			add("PVE"+g.cat+"Admin", l...)
			add("PVEAdmin", l...)
		}
		if len(g.user) > 0 {
			add("PVE"+g.cat+"User", g.user...)
			add("PVE"+g.cat+"User", g.audit...)
		}
		add("PVEAuditor", g.audit...)
	}
	// Only Administrator, root@pam and PVEMappingAdmin get Mapping.Modify.
	delete(roles["PVEAdmin"], "Mapping.Modify")
	roles["PVETemplateUser"] = map[string]bool{"VM.Clone": true, "VM.Audit": true}
	builtinRoles = roles
	privileges = sortedKeys(valid)
}

// ValidPrivilege says whether name is a Proxmox VE privilege.
func ValidPrivilege(name string) bool { return builtinRoles["Administrator"][name] }

// ParsePrivilegeList parses a comma-separated privilege list (the
// --token-privileges flag), refusing unknown names as pveum does.
func ParsePrivilegeList(list string) ([]string, error) {
	var out []string
	for _, p := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == ';' }) {
		if !ValidPrivilege(p) {
			return nil, fmt.Errorf("invalid privilege '%s'", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// tokenRole is the role holding Options.TokenPrivileges.
const tokenRole = "SimTokenPrivileges"

// aclEntry is one line of user.cfg's acl section.
type aclEntry struct {
	Path      string
	Type      string // user, group, token
	UGID      string
	Role      string
	Propagate bool
}

// accessState is user.cfg: custom roles, ACLs and the token's privsep flag.
type accessState struct {
	roles   map[string]map[string]bool // custom roles
	acl     []aclEntry
	privsep bool
}

func newAccessState(opts Options) *accessState {
	a := &accessState{roles: map[string]map[string]bool{}}
	if opts.TokenID == "" {
		return a
	}
	owner, _, _ := strings.Cut(opts.TokenID, "!")
	if owner != "root@pam" {
		a.acl = append(a.acl, aclEntry{Path: "/", Type: "user", UGID: owner, Role: "Administrator", Propagate: true})
	}
	if opts.TokenPrivileges != nil {
		a.privsep = true
		role := map[string]bool{}
		for _, p := range opts.TokenPrivileges {
			if ValidPrivilege(p) {
				role[p] = true
			}
		}
		a.roles[tokenRole] = role
		a.acl = append(a.acl, aclEntry{Path: "/", Type: "token", UGID: opts.TokenID, Role: tokenRole, Propagate: true})
	}
	return a
}

func (a *accessState) role(name string) (map[string]bool, bool) {
	if r, ok := builtinRoles[name]; ok {
		return r, true
	}
	r, ok := a.roles[name]
	return r, ok
}

// userExists says whether the simulator knows a user.
func (s *Server) userExists(user string) bool {
	if user == "root@pam" {
		return true
	}
	owner, _, _ := strings.Cut(s.opts.TokenID, "!")
	return s.opts.TokenID != "" && user == owner
}

// aclRoles is AccessControl.pm's roles(): walking from "/" to path, an
// entry on the path itself, or a propagating one above it, replaces what
// was found higher up; token entries before user entries. NoAccess wins.
func (a *accessState) aclRoles(typ, ugid, path string) map[string]bool {
	roles := map[string]bool{}
	for _, p := range pathPrefixes(path) {
		final := p == path
		found := map[string]bool{}
		for _, e := range a.acl {
			if e.Path == p && e.Type == typ && e.UGID == ugid && (final || e.Propagate) {
				found[e.Role] = e.Propagate
			}
		}
		if len(found) > 0 {
			roles = found
		}
	}
	if prop, ok := roles["NoAccess"]; ok {
		return map[string]bool{"NoAccess": prop}
	}
	return roles
}

// pathPrefixes lists "/", "/vms", "/vms/100" for "/vms/100".
func pathPrefixes(path string) []string {
	out := []string{"/"}
	cur := ""
	for _, seg := range strings.Split(path, "/") {
		if seg == "" {
			continue
		}
		cur += "/" + seg
		out = append(out, cur)
	}
	return out
}

// permissions is RPCEnvironment::permissions: the privileges id holds on
// path, each with its propagate flag.
func (s *Server) permissions(id, path string) map[string]bool {
	if id == "root@pam" {
		all := make(map[string]bool, len(privileges))
		for _, p := range privileges {
			all[p] = true
		}
		return all
	}
	if owner, _, isToken := strings.Cut(id, "!"); isToken {
		if s.opts.TokenID == "" || id != s.opts.TokenID {
			return map[string]bool{}
		}
		userPrivs := s.permissions(owner, path)
		if !s.access.privsep {
			return userPrivs
		}
		privs := s.rolePrivs(s.rolesWithPools("token", id, path))
		if owner == "root@pam" {
			return privs
		}
		out := map[string]bool{}
		for p, prop := range privs {
			if up, ok := userPrivs[p]; ok {
				out[p] = prop && up
			}
		}
		return out
	}
	if !s.userExists(id) {
		return map[string]bool{}
	}
	return s.rolePrivs(s.rolesWithPools("user", id, path))
}

// rolesWithPools adds, as compile_acl_path does, the roles held on a pool
// to the guests and storages in it (never propagated; NoAccess on the path
// itself is kept, NoAccess on the pool wins over the rest).
func (s *Server) rolesWithPools(typ, ugid, path string) map[string]bool {
	roles := s.access.aclRoles(typ, ugid, path)
	if _, no := roles["NoAccess"]; no || len(s.state.Pools) == 0 {
		return roles
	}
	var vmid int
	var storage string
	if rest, ok := strings.CutPrefix(path, "/vms/"); ok {
		vmid, _ = strconv.Atoi(rest)
	} else if rest, ok := strings.CutPrefix(path, "/storage/"); ok {
		storage = rest
	}
	if vmid == 0 && storage == "" {
		return roles
	}
	poolRoles := map[string]bool{}
	for _, name := range s.state.poolNames() {
		p := s.state.Pools[name]
		if (vmid != 0 && p.VMs[vmid]) || (storage != "" && p.Storage[storage]) {
			for role := range s.access.aclRoles(typ, ugid, "/pool/"+name) {
				poolRoles[role] = true
			}
		}
	}
	if poolRoles["NoAccess"] {
		return map[string]bool{"NoAccess": false}
	}
	for role := range poolRoles {
		if _, ok := roles[role]; !ok {
			roles[role] = false
		}
	}
	return roles
}

func (s *Server) rolePrivs(roles map[string]bool) map[string]bool {
	privs := map[string]bool{}
	for role, prop := range roles {
		r, _ := s.access.role(role)
		for p := range r {
			privs[p] = privs[p] || prop
		}
	}
	return privs
}

// hasAllPrivileges says whether id can do anything anywhere, so checks and
// list filters can be skipped: root@pam, or its token without privilege
// separation.
func (s *Server) hasAllPrivileges(id string) bool {
	return id == "root@pam" || (!s.access.privsep && id == s.opts.TokenID && strings.HasPrefix(id, "root@pam!"))
}

// permErr is raise_perm_exc: 403 "Permission check failed (what)".
func permErr(what string) error {
	if what == "" {
		return route.Failf(403, "Permission check failed")
	}
	return route.Failf(403, "Permission check failed (%s)", what)
}

// check is RPCEnvironment::check: every privilege is needed, the first
// missing one is named.
func (s *Server) check(user, path string, privs ...string) error {
	perm := s.permissions(user, path)
	for _, p := range privs {
		if _, ok := perm[p]; !ok {
			return permErr(path + ", " + p)
		}
	}
	return nil
}

// checkAny is RPCEnvironment::check_any: one of the privileges suffices.
func (s *Server) checkAny(user, path string, privs ...string) error {
	perm := s.permissions(user, path)
	for _, p := range privs {
		if _, ok := perm[p]; ok {
			return nil
		}
	}
	return permErr(path + ", " + strings.Join(privs, "|"))
}

// can is check with noerr.
func (s *Server) can(user, path string, privs ...string) bool {
	return s.check(user, path, privs...) == nil
}

var reTemplateParam = regexp.MustCompile(`\{(\w+)\}`)

// eval is exec_api2_perm_check.
func (s *Server) evalPerm(p *route.Perm, user string, params map[string]string, noerr bool) (bool, error) {
	switch p.Op {
	case "and":
		for _, sub := range p.Subs {
			if _, err := s.evalPerm(sub, user, params, false); err != nil {
				return false, err
			}
		}
		return true, nil
	case "or":
		for _, sub := range p.Subs {
			if ok, _ := s.evalPerm(sub, user, params, true); ok {
				return true, nil
			}
		}
		return false, permErr("")
	}
	if p.Op == "userid-group" {
		return s.checkUseridGroup(p, user, params, noerr)
	}
	if p.Op == "perm-modify" {
		path := reTemplateParam.ReplaceAllStringFunc(p.Path, func(m string) string { return params[m[1:len(m)-1]] })
		err := s.checkPermModify(user, normalizeACLPath(path))
		return err == nil, err
	}
	if p.Required != "" {
		if _, ok := params[p.Required]; !ok {
			return false, permErr("")
		}
	}
	path := reTemplateParam.ReplaceAllStringFunc(p.Path, func(m string) string { return params[m[1:len(m)-1]] })
	path = normalizeACLPath(path)
	var err error
	if p.Any {
		err = s.checkAny(user, path, p.Privs...)
	} else {
		err = s.check(user, path, p.Privs...)
	}
	return err == nil, err
}

// checkAPI2Permissions is RPCEnvironment::check_api2_permissions.
func (s *Server) checkAPI2Permissions(p *route.Perm, user string, params map[string]string) error {
	if user == "root@pam" {
		return nil
	}
	if p == nil {
		return permErr("user != root@pam")
	}
	if p.User == "all" || p.User == "world" {
		return nil
	}
	_, err := s.evalPerm(p, user, params, false)
	return err
}

// normalizeACLPath is AccessControl::normalize_path (without the final
// character check, which only ever rejects paths no route produces).
func normalizeACLPath(p string) string {
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return "/"
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}

// sortedRoleIDs lists built-in and custom roles.
func (a *accessState) sortedRoleIDs() []string {
	ids := sortedKeys(builtinRoles)
	ids = append(ids, sortedKeys(a.roles)...)
	sort.Strings(ids)
	return ids
}

// filterResources drops the /cluster/resources entries the caller may not
// see (pve-manager API2/Cluster.pm resources): guests without VM.Audit,
// storages without Datastore.Audit, SDN zones and networks without
// SDN.Audit on their zone.
func (s *Server) filterResources(user string, body encodedBody) (any, error) {
	var all struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &all); err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, e := range all.Data {
		var ok bool
		switch e["type"] {
		case "qemu", "lxc":
			vmid, _ := e["vmid"].(float64)
			ok = s.can(user, fmt.Sprintf("/vms/%d", int(vmid)), "VM.Audit")
			// Cluster.pm resources names a guest's pool only to who may audit it.
			if pool, in := e["pool"].(string); ok && in && !s.can(user, "/pool/"+pool, "Pool.Audit") {
				delete(e, "pool")
			}
		case "pool":
			ok = s.can(user, fmt.Sprintf("/pool/%v", e["pool"]), "Pool.Audit")
		case "storage":
			ok = s.can(user, fmt.Sprintf("/storage/%v", e["storage"]), "Datastore.Audit")
		case "sdn":
			ok = s.can(user, fmt.Sprintf("/sdn/zones/%v", e["sdn"]), "SDN.Audit")
		case "network":
			ok = e["network-type"] == "zone" && s.can(user, fmt.Sprintf("/sdn/zones/%v", e["network"]), "SDN.Audit")
		case "node":
			// extract_node_stats without Sys.Audit on the node: no usage.
			ok = true
			if !s.can(user, fmt.Sprintf("/nodes/%v", e["node"]), "Sys.Audit") {
				for _, k := range []string{"uptime", "cpu", "mem", "disk", "maxcpu", "maxmem", "maxdisk"} {
					delete(e, k)
				}
			}
		default:
			ok = true
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// canSeeBridge is RPCEnvironment::check_sdn_bridge with SDN.Audit or
// SDN.Use: on the bridge in zone localnetwork, or on a VLAN below it that
// an ACL names.
func (s *Server) canSeeBridge(user, bridge string) bool {
	if user == "root@pam" {
		return true
	}
	path := "/sdn/zones/localnetwork/" + bridge
	if s.checkAny(user, path, "SDN.Audit", "SDN.Use") == nil {
		return true
	}
	for _, e := range s.access.acl {
		if strings.HasPrefix(e.Path, path+"/") && s.checkAny(user, e.Path, "SDN.Audit", "SDN.Use") == nil {
			return true
		}
	}
	return false
}

// SetTokenPrivileges changes what the token holds, as Options.TokenPrivileges
// does at start (nil: its user's privileges, no privilege separation).
// ACL entries added through the API are dropped.
func (s *Server) SetTokenPrivileges(privs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touch()
	opts := s.opts
	opts.TokenPrivileges = privs
	s.access = newAccessState(opts)
}
