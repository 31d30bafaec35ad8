package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/leader"
)

func TestLeaderGaugesNameTheLeaderAndWhetherThisReplicaLeads(t *testing.T) {
	since := time.Unix(1800000000, 0)
	for _, tc := range []struct {
		name string
		st   leader.Status
		want string
	}{
		{"a follower", leader.Status{Role: api.ReplicaFollower, Self: "b", Leader: &leader.Info{Identity: leader.Identity{Replica: "a"}, Since: since, Term: 4}}, `
proxmops_leader{replica="b"} 0
proxmops_leader_since_seconds{leader="a"} 1.8e+09
proxmops_leader_term{leader="a"} 4
`},
		{"the leader", leader.Status{Role: api.ReplicaLeader, Self: "a", Leader: &leader.Info{Identity: leader.Identity{Replica: "a"}, Since: since, Term: 4}}, `
proxmops_leader{replica="a"} 1
proxmops_leader_since_seconds{leader="a"} 1.8e+09
proxmops_leader_term{leader="a"} 4
`},
		{"during a failover", leader.Status{Role: api.ReplicaFollower, Self: "b"}, `
proxmops_leader{replica="b"} 0
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			m.WatchLeader(func() leader.Status { return tc.st })
			got, err := testutil.GatherAndCount(m.Registry, "proxmops_leader", "proxmops_leader_since_seconds", "proxmops_leader_term")
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.Count(strings.TrimSpace(tc.want), "\n") + 1; got != want {
				t.Fatalf("%d series, want %d", got, want)
			}
			if err := testutil.CollectAndCompare(leaderCollector{status: func() leader.Status { return tc.st }}, strings.NewReader(header+tc.want)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

const header = `# HELP proxmops_leader 1 while this replica leads (reconciles), 0 while it follows.
# TYPE proxmops_leader gauge
# HELP proxmops_leader_since_seconds Unix time at which the current leader took over, labelled with its replica; absent while none leads.
# TYPE proxmops_leader_since_seconds gauge
# HELP proxmops_leader_term Term of the current leader: it grows by one at every takeover.
# TYPE proxmops_leader_term gauge
`
