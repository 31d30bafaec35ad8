package server

import (
	"encoding/json"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
)

// GET /api/v1/check runs the check on the saved settings, for admins, and
// answers the report whatever it says.
func TestCheckRunsOnTheSavedSettingsForAdmins(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	a.expect(200, "PUT", "/api/v1/settings", map[string]any{"cluster": map[string]any{"tokenSecret": "saved-secret"}})
	var rep api.TestResult
	if err := json.Unmarshal(a.expect(200, "GET", "/api/v1/check", nil), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.OK || len(rep.Checks) != 1 {
		t.Fatalf("report %+v", rep)
	}
	e.backend.mu.Lock()
	got := e.backend.tested[len(e.backend.tested)-1]
	e.backend.mu.Unlock()
	if got.Cluster.TokenSecret != "saved-secret" {
		t.Errorf("the check ran on %+v, not the saved settings", got.Cluster)
	}

	a.expect(200, "PUT", "/api/v1/settings", map[string]any{"cluster": map[string]any{"tokenSecret": ""}})
	if err := json.Unmarshal(a.expect(200, "GET", "/api/v1/check", nil), &rep); err != nil || rep.OK {
		t.Errorf("a failing check: %+v %v", rep, err)
	}
	e.viewer(a).expect(403, "GET", "/api/v1/check", nil)
}
