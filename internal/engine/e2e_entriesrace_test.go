package engine_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The daemon plans while its actions run. A plan that reads a security
// group's rules while proxmops is still adding them must not leave that
// half-made list in the read cache: the next plan would find the group
// drifted (rules missing) and plan an update from it, for up to the
// drift-check period, although the group is as declared.
func TestRulesReadWhileProxmopsWritesThemAreNotKept(t *testing.T) {
	e := newEnv(t)
	e.write("fw/admins.yaml", fwAdminsYAML)
	e.write("fw/lan.yaml", fwAliasYAML("lan", "192.168.1.0/24", "home LAN"))
	e.write("fw/webserver.yaml", fwWebGroupYAML)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	reads := engine.NewReadCache(time.Hour, func() time.Time { return now })
	// Another pass, planning with the same cache, as the controller does.
	planner := e.engine(engine.Options{Reads: reads})
	var midway atomic.Int32
	applier, err := pve.New(pve.Config{Endpoint: e.sim.APIURL(), TokenID: tokenID, TokenSecret: tokenSecret,
		RetryBackoff: 5 * time.Millisecond, TaskPollMin: 5 * time.Millisecond, TaskPollMax: 40 * time.Millisecond,
		WrapTransport: func(next http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				// Before the group's second rule is added, a pass plans.
				if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cluster/firewall/groups/webserver") && midway.Add(1) == 2 {
					if a := e.plan(planner).Find(engine.KindFirewallGroup, "webserver"); a.Action != vocab.ActionUpdate {
						t.Errorf("the pass during the creation saw the group %s (%s), want a half-made list", a.Action, a.Reason)
					}
				}
				return next.RoundTrip(r)
			})
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(applier.Close)
	eng := engine.New(applier, engine.Options{Reads: reads})
	e.converge(eng)
	if midway.Load() < 2 {
		t.Fatalf("the group's rules were added in %d requests, want one each", midway.Load())
	}
	// The clock stands still: within the period the cache would be used.
	if a := e.plan(planner).Find(engine.KindFirewallGroup, "webserver"); a.Status != vocab.StatusSynced {
		t.Fatalf("the group as declared, planned from the cache: %s %s: %s", a.Status, a.Action, a.Reason)
	}
}
