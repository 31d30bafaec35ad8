package pvesim

import "testing"

// /cluster/status is quorate while the online nodes hold a majority of
// the votes, one per node.
func TestClusterStatusQuorumFollowsOnlineNodes(t *testing.T) {
	for _, tt := range []struct {
		nodes   int
		offline []string
		quorate float64
	}{
		{3, nil, 1},
		{3, []string{"pve3"}, 1},
		{3, []string{"pve2", "pve3"}, 0},
		{2, []string{"pve2"}, 0},
	} {
		srv := startSim(t, Options{Nodes: tt.nodes})
		for _, n := range tt.offline {
			srv.SetNodeOnline(n, false)
		}
		for _, e := range newClient(t, srv).mustOK("GET", "/cluster/status", nil).list(t) {
			if e["type"] == "cluster" && e["quorate"] != tt.quorate {
				t.Errorf("%d nodes, %v offline: quorate %v, want %v", tt.nodes, tt.offline, e["quorate"], tt.quorate)
			}
		}
	}
}
