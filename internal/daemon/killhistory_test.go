package daemon

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/pvesim"
)

// TestKilledCreateHistoryReadsCreated: the daemon, a child process as in
// the chaos suite, is SIGKILLed while the create task it started runs in
// the simulated cluster. Proxmox's worker goes on without its client, so
// the daemon started again on the same database finds the guest done; the
// VM's history, read over the daemon's HTTP API, says the create was
// interrupted and then "created" once, with no "synced" standing in for
// the creation.
func TestKilledCreateHistoryReadsCreated(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("inside the child")
	}
	sim := startChaosSim(t, pvesim.Options{TaskSpeed: 0.5, Seed: 1, StatusInterval: -1})
	r := &chaosRun{t: t, sim: sim, dir: t.TempDir(), cores: map[int]string{500: "1"}, foreign: map[int]pvesim.GuestInfo{}}
	r.repo = gittest.Init(t, filepath.Join(r.dir, "repo"))
	r.repo.Commit("one VM", map[string]string{"vms/chaos-0.yaml": chaosManifest(0, "1")})
	r.writeConfig()
	r.createToken()

	r.startChild()
	r.waitFor("the create task", 60*time.Second, func() bool {
		g, ok := sim.Guest(500)
		return ok && g.Config["lock"] == "create"
	})
	r.kill()
	r.startChild()
	r.waitFor("convergence", 120*time.Second, func() bool { return r.converged() && r.daemonSynced() })
	h := r.apiHistory("VirtualMachine", "chaos-0")
	r.stopChild()

	slices.Reverse(h) // oldest first
	var lines []string
	for _, x := range h {
		lines = append(lines, string(x.Event)+": "+x.Message)
	}
	all := strings.Join(lines, "\n  ")
	if len(h) < 2 || h[0].Event != api.EventFailed || !strings.Contains(h[0].Message, "create interrupted") ||
		h[1].Event != api.EventCreated || !strings.Contains(h[1].Message, "the create interrupted by the daemon's stop went on in the cluster") {
		t.Fatalf("history, oldest first:\n  %s\nwant the interrupted create, then created", all)
	}
	for _, x := range h[2:] {
		// The create's start may not have run before the kill: then an
		// update starts the guest.
		if x.Event != api.EventApplied || !strings.Contains(x.Message, "stopped -> running") {
			t.Fatalf("history, oldest first:\n  %s\nafter created, only the start may follow", all)
		}
	}
	if n := sim.RequestCountFor("POST", "/nodes/{node}/qemu"); n != 1 {
		t.Errorf("%d creates: the interrupted create was repeated", n)
	}
}

// apiHistory reads a resource's history (newest first) from the daemon's
// HTTP API.
func (r *chaosRun) apiHistory(kind, name string) []api.HistoryEntry {
	r.t.Helper()
	st, b, err := apiGet(r.apiURL, r.token, "/api/v1/resources/"+kind+"/"+name)
	if err != nil {
		r.t.Fatal(err)
	}
	var d api.ResourceDetail
	if st != http.StatusOK {
		r.t.Fatalf("GET %s/%s: %d %s", kind, name, st, b)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		r.t.Fatal(err)
	}
	return d.History
}
