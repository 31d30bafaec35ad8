package controller

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/apitest"
	"github.com/proxmops/proxmops/internal/logring"
	"github.com/proxmops/proxmops/internal/server"
	"github.com/proxmops/proxmops/internal/vocab"
)

var _ server.SnapshotBackend = (*Controller)(nil)

// apiClient is an admin session on a served controller.
type apiClient struct{ *apitest.Client }

// do sends body and decodes the answer into out (when not nil); it returns
// the answer's status.
func (c *apiClient) do(method, path string, body any, out any) int {
	c.T().Helper()
	st, b := c.Do(method, path, body)
	if out != nil && json.Unmarshal(b, out) != nil {
		c.T().Fatalf("%s %s: %d %s", method, path, st, b)
	}
	return st
}

// serveAPI serves the controller's HTTP API on loopback and logs in as the
// first admin.
func serveAPI(t *testing.T, e *env) *apiClient { return serveAPIWithLogs(t, e, nil) }

// serveAPIWithLogs is serveAPI with the log ring the controller logs into
// (nil: none), for tests of /api/v1/logs.
func serveAPIWithLogs(t *testing.T, e *env, logs *logring.Ring) *apiClient {
	t.Helper()
	return serveOptions(t, server.Options{
		Store: e.st, Backend: e.c, Hub: e.hub, Config: e.c.opts.Config, OnSettingsChanged: e.c.ApplyConfig,
		Logs: logs, Metrics: e.c.opts.Metrics,
	})
}

// serveOptions serves a backend's HTTP API on loopback and logs in as the
// first admin.
func serveOptions(t *testing.T, o server.Options) *apiClient {
	t.Helper()
	base := serveHTTP(t, o)
	tok, err := os.ReadFile(o.Store.Path() + ".setup-token")
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	c := &apiClient{apitest.New(t, base, jar)}
	c.HC.Timeout = 0 // event streams stay open
	var me struct {
		CSRF string `json:"csrfToken"`
	}
	if st := c.do("POST", "/api/v1/setup", map[string]string{"token": strings.TrimSpace(string(tok)), "username": "admin", "password": "a long enough password 1"}, &me); st != http.StatusCreated && st != http.StatusOK {
		t.Fatalf("setup: %d", st)
	}
	c.CSRF = me.CSRF
	return c
}

func snapManifest(cores int, annotations ...string) string {
	return vmManifest("snap", 430, cores, annotations...) + "  snapshots:\n    beforeChange: true\n    keep: 2\n"
}

// The snapshots and rollback API over real HTTP against the simulator: a
// change takes a snapshot, GET .../snapshots lists it, a viewer may not
// roll back, an admin's rollback waits for Proxmox and is recorded, and
// with sync manual the guest then stays OutOfSync, never re-applied.
func TestRollbackThroughTheAPI(t *testing.T) {
	sim, repo := simWithRepo(t, 0.2, "vm", map[string]string{"vms/snap.yaml": snapManifest(1)})
	e := newEnv(t, sim, repo, "").start()
	e.waitStatus("VirtualMachine/snap", vocab.StatusSynced)
	c := serveAPI(t, e)

	repo.Commit("more cores", map[string]string{"vms/snap.yaml": snapManifest(2)})
	if err := e.c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitFor("a snapshot and 2 cores", func(l api.ResourceList) bool {
		g, _ := sim.Guest(430)
		r := find(l, "VirtualMachine/snap")
		return g.Config["cores"] == "2" && len(g.Snapshots) == 1 && r != nil && r.Status == vocab.StatusSynced && r.Progress == nil
	})
	var list api.SnapshotList
	if st := c.do("GET", "/api/v1/resources/VirtualMachine/snap/snapshots", nil, &list); st != http.StatusOK ||
		len(list.Snapshots) != 1 || !list.Snapshots[0].Proxmops || list.Current != list.Snapshots[0].Name || list.SyncPolicy != vocab.SyncAuto {
		t.Fatalf("snapshots: %d %+v", st, list)
	}
	snapName := list.Snapshots[0].Name

	// A viewer token lists but may not roll back.
	var tok struct {
		Token string `json:"token"`
	}
	if st := c.do("POST", "/api/v1/tokens", map[string]string{"name": "ro", "role": "viewer"}, &tok); st != http.StatusCreated && st != http.StatusOK {
		t.Fatalf("token: %d", st)
	}
	viewer := func(method, path string) int {
		req, _ := http.NewRequest(method, c.Base+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := viewer("GET", "/api/v1/resources/VirtualMachine/snap/snapshots"); st != http.StatusOK {
		t.Fatalf("viewer list: %d", st)
	}
	if st := viewer("POST", "/api/v1/resources/VirtualMachine/snap/rollback"); st != http.StatusForbidden {
		t.Fatalf("viewer rollback: %d", st)
	}

	// Manual sync from now on; then roll back.
	repo.Commit("manual", map[string]string{"vms/snap.yaml": snapManifest(2, "proxmops.dev/sync=manual")})
	if err := e.c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitFor("sync policy manual", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/snap")
		return r != nil && r.SyncPolicy == vocab.SyncManual && r.Status == vocab.StatusSynced
	})
	var errBody struct {
		Error string `json:"error"`
	}
	if st := c.do("POST", "/api/v1/resources/VirtualMachine/snap/rollback", api.RollbackRequest{Snapshot: "nope"}, &errBody); st != http.StatusNotFound || !strings.Contains(errBody.Error, `there is no snapshot "nope"`) {
		t.Fatalf("rollback to a missing snapshot: %d %+v", st, errBody)
	}
	var res api.RollbackResult
	if st := c.do("POST", "/api/v1/resources/VirtualMachine/snap/rollback", nil, &res); st != http.StatusOK ||
		res.Snapshot != snapName || !res.Started || res.SyncPolicy != vocab.SyncManual || !strings.Contains(res.Next, "leaves it as rolled back") {
		t.Fatalf("rollback: %d %+v", st, res)
	}
	if g, _ := sim.Guest(430); g.Config["cores"] != "1" || !g.Running {
		t.Fatalf("after rollback: cores %s running %v", g.Config["cores"], g.Running)
	}
	e.waitStatus("VirtualMachine/snap", vocab.StatusOutOfSync)
	// Another full pass: manual sync never re-applies.
	if err := e.c.SyncAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitStatus("VirtualMachine/snap", vocab.StatusOutOfSync)
	if g, _ := sim.Guest(430); g.Config["cores"] != "1" {
		t.Fatalf("manual sync re-applied after the rollback: cores %s", g.Config["cores"])
	}
	var detail api.ResourceDetail
	c.do("GET", "/api/v1/resources/VirtualMachine/snap", nil, &detail)
	found := false
	for _, h := range detail.History {
		found = found || h.Event == api.EventRolledBack && strings.Contains(h.Message, snapName)
	}
	if !found {
		t.Fatalf("history has no rollback: %+v", detail.History)
	}
}
