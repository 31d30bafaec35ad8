package pvesim

import (
	"testing"
	"time"
)

// GET /nodes/{node}/time answers the node's clock (Nodes.pm time), off by
// the skew a test gives it, and needs Sys.Audit on the node.
func TestNodeTimeAnswersTheNodesClock(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	srv, c := newSim(t, Options{Seed: 1, Clock: clock})
	if !srv.SetNodeClockSkew("pve2", -90*time.Second) {
		t.Fatal("pve2 not found")
	}
	for node, want := range map[string]time.Time{"pve1": clock.Now(), "pve2": clock.Now().Add(-90 * time.Second)} {
		m := c.mustOK("GET", "/nodes/"+node+"/time", nil).obj(t)
		if got := int64(m["time"].(float64)); got != want.Unix() || m["localtime"].(float64) != m["time"].(float64) || m["timezone"] != "UTC" {
			t.Errorf("%s: %v, want time %d", node, m, want.Unix())
		}
	}

	limited := startSim(t, Options{Seed: 1, TokenPrivileges: []string{"VM.Audit"}})
	if r := newClient(t, limited).do("GET", "/nodes/pve1/time", nil); r.Status != 403 {
		t.Errorf("without Sys.Audit: %d %s", r.Status, r.Body)
	}
}
