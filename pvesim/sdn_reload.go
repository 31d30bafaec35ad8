package pvesim

import (
	"encoding/hex"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Applying the SDN configuration, the configuration lock, and what a
// node's network reload makes of the applied configuration.
//
// pve-network API2/Network/SDN.pm reload commits the configuration and
// starts reloadnetworkall, whose worker only starts one srvreload task per
// node (pvesh set /nodes/NODE/network) and does not wait for them. The
// vnets become bridges on a node when that node's srvreload task has run
// ifreload (pve-manager API2/Network.pm reload_network_config, which also
// regenerates the SDN interfaces). Until then a guest cannot plug into
// them there.
//
// PVE/Network/SDN.pm lock_sdn_config: while a lock token exists (POST
// /cluster/sdn/lock), every SDN write, apply and rollback without the
// matching lock-token dies with "invalid lock token provided!".

// sdnLockDieAt is where lock_sdn_config dies (Perl adds it to a message
// without a newline).
const sdnLockDieAt = " at /usr/share/perl5/PVE/Network/SDN.pm line 291."

// sdnReloadFault is what the next network reload of a node does instead of
// succeeding: wait for a release, or fail as ifreload fails.
type sdnReloadFault struct {
	hold chan struct{}
	fail string
}

func init() {
	registerRoutes(func(s *Server) {
		lockToken := func() *route.Param { return route.Str("lock-token").Opt() }
		s.Handle(&route.Route{Method: "POST", Path: "/cluster/sdn/lock", Perm: route.PermCheck("/sdn", "SDN.Allocate"),
			Params: route.NewParams(route.Bool("allow-pending").Opt().Default("0")), Handler: s.sdnLock})
		s.Handle(&route.Route{Method: "DELETE", Path: "/cluster/sdn/lock", Perm: route.PermCheck("/sdn", "SDN.Allocate"),
			Params: route.NewParams(lockToken(), route.Bool("force").Opt().Default("0")), Handler: s.sdnReleaseLock})
		s.Handle(&route.Route{Method: "POST", Path: "/cluster/sdn/rollback", Perm: route.PermCheck("/sdn", "SDN.Allocate"),
			Params: route.NewParams(lockToken(), route.Bool("release-lock").Opt().Default("1")), Handler: s.sdnRollback})
	})
}

// sdnCheckLock is lock_sdn_config's check: with a lock in place, only its
// token passes; errmsg is the caller's prefix ("create sdn zone object
// failed", ...).
func (s *Server) sdnCheckLock(r *route.Request, errmsg string) error {
	held := s.sdn().LockToken
	if held == "" {
		return nil
	}
	if tok, ok := r.Params["lock-token"]; ok && tok == held {
		return nil
	}
	return route.Fail("%s: invalid lock token provided!%s", errmsg, sdnLockDieAt)
}

// sdnHasPendingChanges is PVE::Network::SDN::has_pending_changes.
func (s *Server) sdnHasPendingChanges() bool {
	st := s.sdn()
	for _, kind := range []string{"zones", "vnets", "subnets"} {
		for _, o := range sdnPending(st.running(kind), st.config(kind)) {
			if o["pending"] != nil {
				return true
			}
		}
	}
	return false
}

// sdnLock is POST /cluster/sdn/lock (API2/Network/SDN.pm lock): refused
// while someone holds the lock, or with pending changes unless
// allow-pending; answers the new token (create_global_lock, a UUIDv7).
func (s *Server) sdnLock(r *route.Request) (any, error) {
	const errmsg = "could not acquire lock for SDN config"
	if err := s.sdnCheckLock(r, errmsg); err != nil {
		return nil, err
	}
	if !r.Bool("allow-pending") && s.sdnHasPendingChanges() {
		return nil, route.Fail("%s: configuration has pending changes at /usr/share/perl5/PVE/API2/Network/SDN.pm line 149.", errmsg)
	}
	tok := s.uuidV7()
	s.sdn().LockToken = tok
	return tok, nil
}

// sdnReleaseLock is DELETE /cluster/sdn/lock (release_lock): force
// removes it without the token.
func (s *Server) sdnReleaseLock(r *route.Request) (any, error) {
	if !r.Bool("force") {
		if err := s.sdnCheckLock(r, "could not release lock"); err != nil {
			return nil, err
		}
	}
	s.sdn().LockToken = ""
	return nil, nil
}

// sdnRollback is POST /cluster/sdn/rollback: the running configuration
// becomes the edited one again; the lock is released when its token was
// given and release-lock (default) is set.
func (s *Server) sdnRollback(r *route.Request) (any, error) {
	if err := s.sdnCheckLock(r, "could not rollback SDN configuration"); err != nil {
		return nil, err
	}
	st := s.sdn()
	st.Zones, st.Vnets, st.Subnets = st.running("zones").clone(), st.running("vnets").clone(), st.running("subnets").clone()
	if r.Str("lock-token") != "" && r.BoolOr("release-lock", true) {
		st.LockToken = ""
	}
	return nil, nil
}

// uuidV7 is UUID::generate_v7: 48 bits of Unix milliseconds, then random.
func (s *Server) uuidV7() string {
	b := make([]byte, 16)
	s.rng.Read(b)
	ms := s.clock.Now().UnixMilli()
	for i := 0; i < 6; i++ {
		b[i] = byte(ms >> (8 * (5 - i)))
	}
	b[6] = (b[6] & 0x0f) | 0x70
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// sdnApply is PUT /cluster/sdn (API2/Network/SDN.pm reload): commit the
// configuration as the running one under the lock check, release the
// lock when asked, then start reloadnetworkall, whose worker starts a
// srvreload task on every node as root@pam (pvesh) and does not wait for
// them: a node it cannot reach gets a warning in its log.
func (s *Server) sdnApply(r *route.Request) (any, error) {
	if err := s.sdnCheckLock(r, "could not commit SDN config"); err != nil {
		return nil, err
	}
	st := s.sdnTrackNodes()
	st.Version++
	st.Running = &struct {
		Zones   sdnSection `json:"zones"`
		Vnets   sdnSection `json:"vnets"`
		Subnets sdnSection `json:"subnets"`
	}{Zones: st.Zones.clone(), Vnets: st.Vnets.clone(), Subnets: st.Subnets.clone()}
	if r.Str("lock-token") != "" && r.BoolOr("release-lock", true) {
		st.LockToken = ""
	}
	local := s.state.Nodes[0].Name
	root := *r
	root.User, root.IsToken = "root@pam", false
	return s.startTask(r, local, "reloadnetworkall", "", func(tc *taskCtx) error {
		for _, n := range s.state.Nodes {
			tc.Log("%s: reloading network config", n.Name)
			if s.faults.nodeOffline(n.Name) {
				tc.Log("command 'pvesh set /nodes/%s/network --regenerate-frr 0' failed: exit code 255", n.Name)
				continue
			}
			s.startTask(&root, n.Name, "srvreload", "networking", func(tc *taskCtx) error {
				return s.networkReload(tc, n.Name, nil)
			})
		}
		return tc.Sleep(500 * time.Millisecond)
	}), nil
}

// networkReload is reload_network_config's worker: the staged host
// network file (when there is one) becomes the running one and the SDN
// configuration is generated for the node, then ifreload brings up both.
// A fault can hold the reload or make ifreload fail (the node then keeps
// what it had).
func (s *Server) networkReload(tc *taskCtx, node string, hn *HostNetwork) error {
	if err := tc.Sleep(2 * time.Second); err != nil {
		return err
	}
	st := s.sdn()
	if f := st.reloadFaults[node]; f != nil {
		delete(st.reloadFaults, node)
		if f.hold != nil && tc.async {
			tc.unlocked(func() {
				select {
				case <-f.hold:
				case <-s.closed:
				}
			})
		}
		if f.fail != "" {
			tc.Log("%s", f.fail)
			return route.Fail("command 'ifreload -a' failed: exit code 1")
		}
	}
	if hn != nil && hn.Staged != nil {
		hn.Running = hn.Staged
		hn.Staged = nil
	}
	s.sdnBringUp(node)
	return nil
}

// sdnTrackNodes starts tracking vnets per node. In a state saved before
// they were tracked, every node has the running configuration.
func (s *Server) sdnTrackNodes() *SDNState {
	st := s.sdn()
	if st.NodeVnets == nil {
		st.NodeVnets = map[string]sdnSection{}
		for _, n := range s.state.Nodes {
			st.NodeVnets[n.Name] = st.running("vnets").clone()
		}
	}
	return st
}

// sdnBringUp makes the running vnets the node's bridges, those of zones
// limited to other nodes left out (get_local_vnets).
func (s *Server) sdnBringUp(node string) {
	st := s.sdnTrackNodes()
	up := sdnSection{}
	zones := st.running("zones")
	for id, v := range st.running("vnets") {
		if nodes := zones[v["zone"]]["nodes"]; nodes != "" && !containsStr(splitList(nodes), node) {
			continue
		}
		up[id] = copyConf(v)
	}
	st.NodeVnets[node] = up
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sdnVnetUp says whether a vnet is a bridge on a node: its last network
// reload brought it up.
func (s *Server) sdnVnetUp(node, name string) bool {
	st := s.sdn()
	if st.NodeVnets == nil {
		_, ok := st.running("vnets")[name]
		return ok
	}
	_, ok := st.NodeVnets[node][name]
	return ok
}

// HoldNetworkReload makes the next network reload of a node wait, after
// its usual duration, until the returned function is called (only with
// TaskSpeed > 0: a synchronous task cannot wait).
func (s *Server) HoldNetworkReload(node string) (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	s.sdnReloadFault(node).hold = ch
	var once bool
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !once {
			once = true
			close(ch)
		}
	}
}

// FailNetworkReload makes the next network reload of a node fail as
// ifreload fails, logging msg (ifupdown2's error line).
func (s *Server) FailNetworkReload(node, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sdnReloadFault(node).fail = msg
}

func (s *Server) sdnReloadFault(node string) *sdnReloadFault {
	st := s.sdn()
	if st.reloadFaults == nil {
		st.reloadFaults = map[string]*sdnReloadFault{}
	}
	if st.reloadFaults[node] == nil {
		st.reloadFaults[node] = &sdnReloadFault{}
	}
	return st.reloadFaults[node]
}

// SDNLockToken is the token of the SDN configuration lock ("" when unlocked).
func (s *Server) SDNLockToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sdn().LockToken
}
