package pvesim

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Resource pools (pve-manager PVE/API2/Pool.pm, stored in user.cfg by
// pve-access-control PVE/AccessControl.pm). A pool holds guests (by VMID,
// each in at most one pool) and storages; neither is checked to exist when
// added, and members that do not exist are left out of every listing.
// Pools are nested by name ("a/b" is a child of "a", at most three levels).
// The cluster starts without pools.

// Pool is one pool of user.cfg.
type Pool struct {
	Comment string          `json:"comment,omitempty"`
	VMs     map[int]bool    `json:"vms,omitempty"`
	Storage map[string]bool `json:"storage,omitempty"`
}

func (p *Pool) clone() *Pool {
	c := &Pool{Comment: p.Comment, VMs: map[int]bool{}, Storage: map[string]bool{}}
	for id := range p.VMs {
		c.VMs[id] = true
	}
	for id := range p.Storage {
		c.Storage[id] = true
	}
	return c
}

// sortedVMIDs lists the pool's guests as Perl's "sort keys" does: as strings.
func (p *Pool) sortedVMIDs() []int {
	ids := make([]int, 0, len(p.VMs))
	for id := range p.VMs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return strconv.Itoa(ids[i]) < strconv.Itoa(ids[j]) })
	return ids
}

func (p *Pool) sortedStorage() []string { return sortedKeys(p.Storage) }

// vmPools maps each pooled VMID to its pool (user.cfg's $usercfg->{vms}).
func (cs *clusterState) vmPools() map[int]string {
	out := map[int]string{}
	for name, p := range cs.Pools {
		for id := range p.VMs {
			out[id] = name
		}
	}
	return out
}

func (cs *clusterState) poolNames() []string { return sortedKeys(cs.Pools) }

// addVMToPool is AccessControl::add_vm_to_pool, called by the create and
// clone workers of qemu-server and pve-container after the guest's config
// is written: a pool deleted in the meantime is silently skipped.
func (cs *clusterState) addVMToPool(vmid int, pool string) {
	p := cs.Pools[pool]
	if p == nil {
		return
	}
	if p.VMs == nil {
		p.VMs = map[int]bool{}
	}
	p.VMs[vmid] = true
}

// removeVMAccess is AccessControl::remove_vm_access as the destroy workers
// call it: the guest leaves its pool.
func (cs *clusterState) removeVMAccess(vmid int) {
	for _, p := range cs.Pools {
		delete(p.VMs, vmid)
	}
}

// checkPoolExist is RPCEnvironment::check_pool_exist (a permission
// exception: 403).
func (s *Server) checkPoolExist(r *route.Request) error {
	if !r.Has("pool") {
		return nil
	}
	if s.state.Pools[r.Str("pool")] == nil {
		return permErr("pool '" + r.Str("pool") + "' does not exist")
	}
	return nil
}

func init() {
	registerRoutes(func(s *Server) {
		poolid := func() *route.Param { return route.Str("poolid").Fmt("pve-poolid") }
		update := func() *route.Params {
			return route.NewParams(poolid(),
				route.Str("comment").Opt(),
				route.Str("vms").Opt().Fmt("pve-vmid-list"),
				route.Str("storage").Opt().Fmt("pve-storage-id-list"),
				route.Bool("allow-move").Opt().Default("0"),
				route.Bool("delete").Opt().Default("0"),
			)
		}
		typ := func() *route.Param { return route.Str("type").Opt().Enum("qemu", "lxc", "storage") }
		s.Handle(&route.Route{Method: "GET", Path: "/pools", Perm: route.PermUser(), Handler: s.poolIndex,
			Params: route.NewParams(poolid().Opt(), typ().Requires("poolid"))})
		s.Handle(&route.Route{Method: "POST", Path: "/pools", Perm: route.PermCheck("/pool/{poolid}", "Pool.Allocate"), Handler: s.poolCreate,
			Params: route.NewParams(poolid(), route.Str("comment").Opt())})
		s.Handle(&route.Route{Method: "PUT", Path: "/pools", Perm: route.PermCheck("/pool/{poolid}", "Pool.Allocate"), Handler: s.poolUpdate, Params: update()})
		s.Handle(&route.Route{Method: "DELETE", Path: "/pools", Perm: route.PermCheck("/pool/{poolid}", "Pool.Allocate"), Handler: s.poolDelete, Params: route.NewParams(poolid())})
		// The per-pool paths are deprecated in 9.x (no nested pools) but served.
		s.Handle(&route.Route{Method: "GET", Path: "/pools/{poolid}", Perm: route.PermCheck("/pool/{poolid}", "Pool.Audit"), Handler: s.poolRead,
			Params: route.NewParams(poolid(), typ())})
		s.Handle(&route.Route{Method: "PUT", Path: "/pools/{poolid}", Perm: route.PermCheck("/pool/{poolid}", "Pool.Allocate"), Handler: s.poolUpdate, Params: update()})
		s.Handle(&route.Route{Method: "DELETE", Path: "/pools/{poolid}", Perm: route.PermCheck("/pool/{poolid}", "Pool.Allocate"), Handler: s.poolDelete, Params: route.NewParams(poolid())})
	})
}

// poolIndex is Pool.pm "index": without poolid the pools (poolid and
// comment); with it, that pool and its existing members, filtered by type.
func (s *Server) poolIndex(r *route.Request) (any, error) {
	if !r.Has("poolid") {
		out := []map[string]any{}
		for _, name := range s.state.poolNames() {
			// Only pools the caller may audit.
			if !s.can(r.User, "/pool/"+name, "Pool.Audit") {
				continue
			}
			e := map[string]any{"poolid": name}
			if c := s.state.Pools[name].Comment; c != "" {
				e["comment"] = c
			}
			out = append(out, e)
		}
		return out, nil
	}
	info, err := s.poolInfo(r.Str("poolid"), r.Str("type"))
	if err != nil {
		return nil, err
	}
	return []map[string]any{info}, nil
}

// poolRead is Pool.pm "read_pool": the index's one entry.
func (s *Server) poolRead(r *route.Request) (any, error) {
	return s.poolInfo(r.Str("poolid"), r.Str("type"))
}

// poolInfo is one pool with its members: guests as extract_vm_stats gives
// them (no lock or tags), then storages as extract_storage_stats gives
// them on the answering node (pve1) or, for a storage not on it, the
// first of its nodes (Pool.pm index).
func (s *Server) poolInfo(name, typ string) (map[string]any, error) {
	p := s.state.Pools[name]
	if p == nil {
		return nil, route.Fail("pool '%s' does not exist", name)
	}
	now := s.clock.Now().Unix()
	members := []map[string]any{}
	for _, id := range p.sortedVMIDs() {
		g := s.state.Guests[id]
		if g == nil || typ != "" && typ != g.Type {
			continue
		}
		members = append(members, s.poolGuestMember(g, now))
	}
	if typ == "" || typ == "storage" {
		for _, id := range p.sortedStorage() {
			st := s.state.storage(id)
			if st == nil {
				continue
			}
			// The answering node (pve1) unless the storage is restricted
			// to others: then the first of those by name.
			node := s.state.Nodes[0].Name
			if len(st.Nodes) > 0 && !st.availableOn(node) {
				node = slices.Min(st.Nodes)
			}
			shared := 0
			if st.Shared {
				shared = 1
			}
			m := map[string]any{
				"id": "storage/" + node + "/" + st.ID, "storage": st.ID, "node": node, "type": "storage",
				"plugintype": st.Type, "status": "unknown", "shared": shared, "content": strings.Join(st.Content, ","),
			}
			if !s.faults.nodeOffline(node) {
				m["status"] = "available"
				m["maxdisk"] = st.Total
				m["disk"] = s.state.usedBytes(node, st.ID)
			}
			members = append(members, m)
		}
	}
	info := map[string]any{"poolid": name, "members": members}
	if p.Comment != "" {
		info["comment"] = p.Comment
	}
	return info, nil
}

// poolGuestMember is a guest as Pool.pm's index lists it: only what
// extract_vm_stats takes from the vmlist and pvestatd's last report (the
// same lag as /cluster/resources, see statd.go), without the lock, tags
// and hastate that Cluster.pm adds for /cluster/resources.
func (s *Server) poolGuestMember(g *Guest, now int64) map[string]any {
	r, reported := s.reportedRes(g, now)
	m := map[string]any{"id": r.ID, "vmid": r.VMID, "node": r.Node, "type": r.Type, "status": r.Status}
	if !reported {
		return m
	}
	m["uptime"], m["name"], m["template"] = r.Uptime, r.Name, r.Template
	m["maxcpu"], m["cpu"], m["maxmem"], m["mem"], m["maxdisk"], m["disk"] = r.MaxCPU, r.CPU, r.MaxMem, r.Mem, r.MaxDisk, r.Disk
	m["netin"], m["netout"], m["diskread"], m["diskwrite"] = r.NetIn, r.NetOut, r.DiskRead, r.DiskWrite
	return m
}

// poolCreate is Pool.pm "create_pool".
func (s *Server) poolCreate(r *route.Request) (any, error) {
	name := r.Str("poolid")
	fail := func(msg string) error { return route.Fail("create pool failed: %s", msg) }
	if s.state.Pools[name] != nil {
		return nil, fail("pool '" + name + "' already exists")
	}
	leaf := name
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		parent := name[:i]
		leaf = name[i+1:]
		if s.state.Pools[parent] == nil {
			return nil, fail("parent '" + parent + "' of pool '" + name + "' does not exist")
		}
	}
	if c := leaf[0]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
		return nil, fail("pool name must start with a letter")
	}
	if s.state.Pools == nil {
		s.state.Pools = map[string]*Pool{}
	}
	// user.cfg keeps a comment only when it is true in Perl's sense.
	comment := r.Str("comment")
	if comment == "0" {
		comment = ""
	}
	s.state.Pools[name] = &Pool{Comment: comment, VMs: map[int]bool{}, Storage: map[string]bool{}}
	return nil, nil
}

// poolUpdate is Pool.pm "update_pool" (and its deprecated per-path twin):
// every change is made on a copy and written only if none fails.
func (s *Server) poolUpdate(r *route.Request) (any, error) {
	name := r.Str("poolid")
	fail := func(format string, args ...any) error {
		return route.Fail("update pools failed: "+format, args...)
	}
	// lock_user_config turns the permission exception into its message.
	denied := func(err error) error { return fail("%s", route.AsAPIError(err).Message) }
	old := s.state.Pools[name]
	if old == nil {
		return nil, fail("pool '%s' does not exist", name)
	}
	p := old.clone()
	if r.Has("comment") {
		// user.cfg is read back keeping only a true comment.
		p.Comment = r.Str("comment")
		if p.Comment == "0" {
			p.Comment = ""
		}
	}
	del := r.Bool("delete")
	owners := s.state.vmPools()
	moved := map[int]string{} // VMID: the pool it leaves
	if r.Has("vms") {
		for _, v := range splitList(r.Str("vms")) {
			id, _ := strconv.Atoi(v)
			if err := s.checkPermModify(r.User, "/vms/"+v); err != nil {
				return nil, denied(err)
			}
			added, problem := poolMember(p.VMs, id, del, fmt.Sprintf("VM %d", id))
			if problem != "" {
				return nil, fail("%s", problem)
			}
			if from, ok := owners[id]; added && ok && from != name {
				if !r.Bool("allow-move") {
					return nil, fail("VM %d belongs already to pool '%s' and 'allow-move' is not set", id, from)
				}
				if err := s.check(r.User, "/pool/"+from, "Pool.Allocate"); err != nil {
					return nil, denied(err)
				}
				moved[id] = from
			}
		}
	}
	if r.Has("storage") {
		for _, id := range splitList(r.Str("storage")) {
			if err := s.checkPermModify(r.User, "/storage/"+id); err != nil {
				return nil, denied(err)
			}
			if _, problem := poolMember(p.Storage, id, del, "Storage '"+id+"'"); problem != "" {
				return nil, fail("%s", problem)
			}
		}
	}
	for id, from := range moved {
		delete(s.state.Pools[from].VMs, id)
	}
	s.state.Pools[name] = p
	return nil, nil
}

// poolMember adds id to members, or takes it out with del, as both member
// loops of update_pool do; what (the member as Proxmox's messages name it)
// is refused when it already is, or is not, a member: problem says why.
// added says that id came in.
func poolMember[K comparable](members map[K]bool, id K, del bool, what string) (added bool, problem string) {
	switch {
	case del && !members[id]:
		return false, what + " is not a pool member"
	case del:
		delete(members, id)
		return false, ""
	case members[id]:
		return false, what + " is already a pool member"
	}
	members[id] = true
	return true, ""
}

// poolDelete is Pool.pm "delete_pool": only an empty pool goes; guests
// and storages that no longer exist do not count.
func (s *Server) poolDelete(r *route.Request) (any, error) {
	name := r.Str("poolid")
	fail := func(format string, args ...any) error {
		return route.Fail("delete pool failed: "+format, args...)
	}
	p := s.state.Pools[name]
	if p == nil {
		return nil, fail("pool '%s' does not exist", name)
	}
	for _, sub := range s.state.poolNames() {
		if strings.HasPrefix(sub, name+"/") && !strings.Contains(sub[len(name)+1:], "/") {
			return nil, fail("pool '%s' is not empty (contains pool '%s')", name, sub)
		}
	}
	for _, id := range p.sortedVMIDs() {
		if s.state.Guests[id] != nil {
			return nil, fail("pool '%s' is not empty (contains VM %d)", name, id)
		}
	}
	for _, id := range p.sortedStorage() {
		if s.state.storage(id) != nil {
			return nil, fail("pool '%s' is not empty (contains storage '%s')", name, id)
		}
	}
	delete(s.state.Pools, name)
	// AccessControl.pm delete_pool_acl drops the ACL node of a top-level
	// pool with what lies under it; it does not find a nested pool's
	// node (its name has a "/"), so those entries stay.
	if !strings.Contains(name, "/") {
		s.access.dropACLTree("/pool/" + name)
	}
	return nil, nil
}

// dropACLTree removes the ACL entries on path and below it, as deleting
// a node of user.cfg's ACL tree does.
func (a *accessState) dropACLTree(path string) {
	a.acl = slices.DeleteFunc(a.acl, func(e aclEntry) bool {
		return e.Path == path || strings.HasPrefix(e.Path, path+"/")
	})
}
