package pvesim

import "strings"

// The simulator knows two identities: root@pam (with a ticket) and the
// configured API token, a token of root@pam without privilege separation.
// Both hold every privilege on every path, as root@pam does on Proxmox VE.

// privileges are Proxmox VE 9.1's privileges (the Administrator role).
var privileges = []string{
	"Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.AllocateTemplate", "Datastore.Audit",
	"Group.Allocate",
	"Mapping.Audit", "Mapping.Modify", "Mapping.Use",
	"Permissions.Modify",
	"Pool.Allocate", "Pool.Audit",
	"Realm.Allocate", "Realm.AllocateUser",
	"SDN.Allocate", "SDN.Audit", "SDN.Use",
	"Sys.AccessNetwork", "Sys.Audit", "Sys.Console", "Sys.Incoming", "Sys.Modify", "Sys.PowerMgmt", "Sys.Syslog",
	"User.Modify",
	"VM.Allocate", "VM.Audit", "VM.Backup", "VM.Clone",
	"VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Cloudinit", "VM.Config.Disk", "VM.Config.HWType",
	"VM.Config.Memory", "VM.Config.Network", "VM.Config.Options",
	"VM.Console",
	"VM.GuestAgent.Audit", "VM.GuestAgent.FileRead", "VM.GuestAgent.FileSystemMgmt", "VM.GuestAgent.FileWrite",
	"VM.GuestAgent.Unrestricted",
	"VM.Migrate", "VM.PowerMgmt", "VM.Replicate", "VM.Snapshot", "VM.Snapshot.Rollback",
}

// topLevelPaths are the paths Proxmox lists when no path is asked for
// (besides paths named in ACLs and pools, which the simulator has none of).
var topLevelPaths = []string{"/", "/access", "/access/groups", "/mapping", "/nodes", "/pool", "/sdn", "/storage", "/vms"}

func init() {
	registerRoutes(func(s *Server) {
		s.Handle(&Route{
			Method: "GET",
			Path:   "/access/permissions",
			Params: NewParams(
				Str("path").Opt(),
				Str("userid").Opt().Pattern(`[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+(?:![A-Za-z][A-Za-z0-9.\-_]+)?`),
			),
			Handler: s.accessPermissions,
		})
	})
}

// accessPermissions answers a map of path to a map of privilege to its
// propagate flag (1). Every caller may dump its own permissions and, being
// root-equivalent, anybody else's; an unknown user or token has none.
func (s *Server) accessPermissions(r *Request) (any, error) {
	userid := r.User
	if r.Has("userid") {
		userid = r.Str("userid")
	}
	res := map[string]map[string]int{}
	if !s.isRootIdentity(userid) {
		return res, nil
	}
	paths := topLevelPaths
	if r.Has("path") {
		paths = []string{r.Str("path")}
	}
	for _, p := range paths {
		privs := make(map[string]int, len(privileges))
		for _, name := range privileges {
			privs[name] = 1
		}
		res[p] = privs
	}
	return res, nil
}

// isRootIdentity says whether id is root@pam or the configured token (a
// token of root@pam without privilege separation).
func (s *Server) isRootIdentity(id string) bool {
	if id == "root@pam" {
		return true
	}
	return s.opts.TokenID != "" && id == s.opts.TokenID && strings.HasPrefix(id, "root@pam!")
}
