package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/leader"
)

var (
	leaderDesc = prometheus.NewDesc("proxmops_leader",
		"1 while this replica leads (reconciles), 0 while it follows.", []string{"replica"}, nil)
	leaderSinceDesc = prometheus.NewDesc("proxmops_leader_since_seconds",
		"Unix time at which the current leader took over, labelled with its replica; absent while none leads.", []string{"leader"}, nil)
	leaderTermDesc = prometheus.NewDesc("proxmops_leader_term",
		"Term of the current leader: it grows by one at every takeover.", []string{"leader"}, nil)
)

// leaderCollector reads the replica's status at every scrape.
type leaderCollector struct{ status func() leader.Status }

func (c leaderCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- leaderDesc
	ch <- leaderSinceDesc
	ch <- leaderTermDesc
}

func (c leaderCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.status()
	v := 0.0
	if st.Role == api.ReplicaLeader || st.Role == api.ReplicaSingle {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(leaderDesc, prometheus.GaugeValue, v, st.Self)
	if l := st.Leader; l != nil {
		ch <- prometheus.MustNewConstMetric(leaderSinceDesc, prometheus.GaugeValue, float64(l.Since.UnixNano())/1e9, l.Replica)
		ch <- prometheus.MustNewConstMetric(leaderTermDesc, prometheus.GaugeValue, float64(l.Term), l.Replica)
	}
}

// WatchLeader serves the leadership gauges from status, read at each
// scrape. Call it once.
func (m *Metrics) WatchLeader(status func() leader.Status) {
	m.Registry.MustRegister(leaderCollector{status: status})
}
