package controller

import (
	"net/http"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/events"
	"github.com/proxmops/proxmops/internal/server"
	"github.com/proxmops/proxmops/internal/vocab"
)

// "Sync all" of one cluster of several, over HTTP (POST /api/v1/sync?cluster=,
// what the overview's Sync all sends with a Cluster filter): its dry run
// answers that cluster's plan alone, the sync pulls Git first (a fetch another
// cluster's pass made a moment ago does not stand in for it) and applies that
// cluster only; the other cluster is not written to.
func TestSyncAllOfOneClusterOverHTTPSyncsThatClusterOnly(t *testing.T) {
	e, repo, alpha, beta := newPlannedTwoClusterFleet(t)
	c := serveOptions(t, server.Options{Store: e.st, Backend: e.f, Hub: e.opts.Hub.(*events.Hub), Config: e.opts.Config})

	var dry struct {
		Status string   `json:"status"`
		Plan   api.Plan `json:"plan"`
	}
	if st := c.do("POST", "/api/v1/sync?cluster=beta", map[string]bool{"dryRun": true}, &dry); st != http.StatusOK {
		t.Fatalf("dry run of beta: %d", st)
	}
	if dry.Plan.Cluster != "beta" || dry.Plan.Summary.Create != 2 || len(dry.Plan.Actions) != 2 {
		t.Fatalf("dry run of beta: %+v", dry.Plan)
	}
	for _, a := range dry.Plan.Actions {
		if a.Cluster != "beta" {
			t.Fatalf("beta's plan has %s/%s of %q", a.Kind, a.Name, a.Cluster)
		}
	}
	if st := c.do("POST", "/api/v1/sync?cluster=gamma", map[string]bool{"dryRun": true}, &map[string]any{}); st != http.StatusNotFound {
		t.Fatalf("an unknown cluster: %d, want 404", st)
	}

	// A commit lands after both clusters' last fetch: the sync must see it.
	before := e.waitCluster("beta", "beta's last pass", func(l api.ResourceList) bool { return l.LastPass != nil }).LastPass
	e.clock.Advance(time.Second) // the sync's pass is told by its time (well short of the interval)
	head := repo.Commit("beta: a cache", map[string]string{"proxmox/clusters/beta/cache.yaml": vmManifest("cache", 102, 1)})
	var ok struct {
		Status string `json:"status"`
	}
	if st := c.do("POST", "/api/v1/sync?cluster=beta", nil, &ok); st != http.StatusAccepted || ok.Status != "a full pass of cluster beta started" {
		t.Fatalf("sync of beta: %d %q", st, ok.Status)
	}
	first := e.waitCluster("beta", "beta's pass after the sync", func(l api.ResourceList) bool { return l.LastPass != nil && l.LastPass.After(*before) })
	if first.Revision != head.String() {
		t.Fatalf("the sync's pass planned %s, not the head %s pushed before it: Git was not pulled", first.Revision, head)
	}
	e.waitCluster("beta", "beta synced at the head", allSyncedAt(head.String(), 3))
	for _, vmid := range []int{100, 101, 102} {
		if _, ok := beta.Guest(vmid); !ok {
			t.Fatalf("beta has no guest %d", vmid)
		}
	}
	if n := writes(alpha); n != 0 {
		t.Fatalf("syncing beta sent %d writes to alpha", n)
	}
	l := e.waitCluster("alpha", "alpha's status", func(api.ResourceList) bool { return true })
	if len(l.Resources) != 1 || l.Resources[0].Status != vocab.StatusOutOfSync {
		t.Fatalf("alpha after beta's sync: %s", dump(l))
	}
}
