package controller

import (
	"context"
	"strings"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/leader"
	"github.com/proxmops/proxmops/internal/provision"
	"github.com/proxmops/proxmops/internal/store"
)

// Name is the controller's cluster: its name in the clusters list, or
// "default" for the single cluster section.
func (c *Controller) Name() string {
	if c.opts.Cluster == "" {
		return config.DefaultClusterName
	}
	return c.opts.Cluster
}

// stateKey is a controller state key of this cluster: the single cluster
// section keeps the keys it always had, so an upgrade loses nothing;
// "controller/records" of cluster home is "controller/home/records".
func (c *Controller) stateKey(k string) string {
	if c.opts.Cluster == "" {
		return k
	}
	return api.ClusterStatePrefix(c.opts.Cluster) + strings.TrimPrefix(k, "controller/")
}

// historyName is the name a resource's history is stored under: its own
// for the single cluster section, "home/app-01" in cluster home (names are
// DNS labels, so the slash cannot clash).
func (c *Controller) historyName(name string) string {
	return api.HistoryName(c.opts.Cluster, name)
}

// clusterStore is the store the engine's download records and the host
// key pins of this cluster go to: a VMID or a volume id of one cluster
// says nothing of another's. The SSH key pair (secrets) stays shared.
func (c *Controller) clusterStore() provision.Store {
	if c.opts.Cluster == "" {
		return c.st
	}
	return provision.Prefixed(c.st, api.ClusterStatePrefix(c.opts.Cluster))
}

// ledger is the store as the controller writes it: among replicas, every
// state and history write runs the leader's fence in its transaction, so
// it commits only while the term that made it leads.
type ledger struct {
	*store.Store
	check store.Check // nil: a single daemon, the only writer
}

func newLedger(st *store.Store, g *leader.Guard) ledger {
	l := ledger{Store: st}
	if g != nil {
		l.check = g.Check
	}
	return l
}

func (l ledger) PutState(ctx context.Context, key string, value []byte) error {
	return l.Store.PutStateChecked(ctx, key, value, l.check)
}

func (l ledger) DeleteState(ctx context.Context, key string) error {
	return l.Store.DeleteStateChecked(ctx, key, l.check)
}

func (l ledger) AddHistory(ctx context.Context, kind, name string, e api.HistoryEntry) (int64, error) {
	return l.Store.AddHistoryChecked(ctx, kind, name, e, l.check)
}
