package route

import (
	"fmt"
	"strings"
)

// Perm is a method's "permissions" entry, which pve-http-server checks
// (RPCEnvironment::check_api2_permissions) right after authentication,
// before the node is proxied to and before the parameters are verified.
// A route without one is for root@pam only, as in Proxmox. The simulator
// evaluates it; the fields say what the Perl's entry says.
type Perm struct {
	User     string // "all" or "world"
	Op       string // perm, and, or, perm-modify, userid-group
	Path     string
	Privs    []string
	Any      bool
	Required string // require_param
	Subs     []*Perm
}

// PermUser is `user => 'all'`: any authenticated user; the handler checks.
func PermUser() *Perm { return &Perm{User: "all"} }

// PermCheck is ['perm', path, [privs]]: all privileges on the path, whose
// {param} parts are filled from the request.
func PermCheck(path string, privs ...string) *Perm {
	return &Perm{Op: "perm", Path: path, Privs: privs}
}

// PermAny is ['perm', path, [privs], any => 1].
func PermAny(path string, privs ...string) *Perm {
	return &Perm{Op: "perm", Path: path, Privs: privs, Any: true}
}

// PermAnd is ['and', ...]: every check must pass.
func PermAnd(subs ...*Perm) *Perm { return &Perm{Op: "and", Subs: subs} }

// PermOr is ['or', ...]: one check must pass.
func PermOr(subs ...*Perm) *Perm { return &Perm{Op: "or", Subs: subs} }

// PermModify is ['perm-modify', path]: check_perm_modify.
func PermModify(path string) *Perm { return &Perm{Op: "perm-modify", Path: path} }

// PermUseridGroup is ['userid-group', [privs]]: any of privs on
// /access/groups, or on a group the user of the userid parameter is in.
func PermUseridGroup(privs ...string) *Perm { return &Perm{Op: "userid-group", Privs: privs} }

// RequireParam is require_param: the check fails when the parameter is absent.
func (p *Perm) RequireParam(name string) *Perm { p.Required = name; return p }

// String shows the check in the form of Proxmox's schema, for tests.
func (p *Perm) String() string {
	if p == nil {
		return "root only"
	}
	if p.User != "" {
		return "user=" + p.User
	}
	switch p.Op {
	case "perm-modify":
		return "perm-modify " + p.Path
	case "userid-group":
		return fmt.Sprintf("userid-group [%s]", strings.Join(p.Privs, ","))
	case "perm":
		s := fmt.Sprintf("perm %s [%s]", p.Path, strings.Join(p.Privs, ","))
		if p.Any {
			s += " any"
		}
		if p.Required != "" {
			s += " require_param=" + p.Required
		}
		return s
	default:
		parts := make([]string, len(p.Subs))
		for i, sub := range p.Subs {
			parts[i] = "(" + sub.String() + ")"
		}
		return p.Op + " " + strings.Join(parts, " ")
	}
}
