package api

import (
	"context"
	"strings"

	"github.com/proxmops/proxmops/internal/vocab"
)

// ClusterStatus is one cluster's pass status in ResourceList.Clusters.
type ClusterStatus struct {
	Name string `json:"name"`
	PassStatus
}

type clusterKey struct{}

// WithCluster names the cluster a request is about (the ?cluster= query
// parameter); backends of several clusters read it with ClusterFrom.
func WithCluster(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, clusterKey{}, name)
}

// ClusterFrom is the cluster named by WithCluster, or "" for any.
func ClusterFrom(ctx context.Context) string {
	s, _ := ctx.Value(clusterKey{}).(string)
	return s
}

// ClusterStatePrefix prefixes the daemon's state records (controller
// records, download records, pinned host keys) of a cluster named in the
// clusters list; the single cluster section's records have none.
func ClusterStatePrefix(name string) string { return "controller/" + name + "/" }

// HistoryName is the name a resource's history is stored under: its own
// for the single cluster section (cluster ""), "home/app-01" in cluster
// home of a clusters list (names are DNS labels: the slash cannot clash).
func HistoryName(cluster, name string) string {
	if cluster == "" {
		return name
	}
	return cluster + "/" + name
}

// SplitHistoryName reads HistoryName back.
func SplitHistoryName(stored string) (cluster, name string) {
	if c, n, ok := strings.Cut(stored, "/"); ok {
		return c, n
	}
	return "", stored
}

// MergePlans is one plan of several clusters' plans: their actions in
// order, their summaries added up; the revision is the first plan's.
func MergePlans(plans []Plan) Plan {
	if len(plans) == 1 {
		return plans[0]
	}
	out := Plan{Revision: plans[0].Revision, Actions: []PlanAction{}, Summary: PlanSummary{Statuses: map[vocab.Status]int{}}}
	for _, p := range plans {
		s := p.Summary
		out.Summary.Create += s.Create
		out.Summary.Update += s.Update
		out.Summary.Reboot += s.Reboot
		out.Summary.Delete += s.Delete
		out.Summary.Conflict += s.Conflict
		out.Summary.Failed += s.Failed
		out.Summary.Unknown += s.Unknown
		out.Summary.NeedsReboot += s.NeedsReboot
		for st, n := range s.Statuses {
			out.Summary.Statuses[st] += n
		}
		out.Actions = append(out.Actions, p.Actions...)
		if out.LoadError == nil {
			out.LoadError = p.LoadError
		}
	}
	return out
}
