package pvesim

import "github.com/proxmops/proxmops/pvesim/route"
import "time"

// GET /nodes/{node}/time is pve-manager API2/Nodes.pm time: the node's
// clock in seconds since the epoch ("time"), the same wall clock read in
// the node's time zone as if it were UTC ("localtime"), and the zone. It
// needs Sys.Audit on the node and is proxied to it.
func init() {
	registerRoutes(func(s *Server) {
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/time", Perm: route.PermCheck("/nodes/{node}", "Sys.Audit"), ProxyTo: "node",
			Params: route.NewParams(pNode()), Handler: s.nodeTime})
	})
}

func (s *Server) nodeTime(r *route.Request) (any, error) {
	n := s.state.node(r.Str("node"))
	now := s.clock.Now().Add(n.clockSkew)
	// The simulated nodes run in UTC, so localtime equals time.
	return map[string]any{"timezone": "UTC", "time": now.Unix(), "localtime": now.Unix()}, nil
}

// SetNodeClockSkew makes a node's clock (GET /nodes/{node}/time) run ahead
// of the simulator's by skew (behind when negative), as an unsynchronised
// real node's would.
func (s *Server) SetNodeClockSkew(node string, skew time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.state.node(node)
	if n == nil {
		return false
	}
	n.clockSkew = skew
	return true
}
