package engine_test

import (
	"strings"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
)

// applianceTemplate is the Debian container template downloaded from the
// appliance index to pve1's local storage.
const applianceTemplate = `apiVersion: proxmops.dev/v1
kind: ContainerTemplate
metadata:
  name: debian-12-standard
spec:
  node: pve1
  appliance: debian-12-standard
  storage: local
`

// assertRefused fails unless the action is planned failed, will not run,
// and its reason contains want.
func (e *env) assertRefused(a *engine.Action, want string) {
	e.t.Helper()
	if a == nil {
		e.t.Fatalf("not planned; want a refusal naming %q", want)
	}
	if a.Status != vocab.StatusFailed || a.Runnable() || !strings.Contains(a.Reason, want) {
		e.t.Fatalf("planned %s %s; want a refusal naming %q", a.Status, a.Reason, want)
	}
}

// assertRefusedSendingNothing plans, checks that kind/name is refused
// naming want, applies the plan and checks that no method path request
// went out.
func (e *env) assertRefusedSendingNothing(eng *engine.Engine, kind, name, want, method, path string) {
	e.t.Helper()
	p := e.plan(eng)
	e.assertRefused(p.Find(kind, name), want)
	e.applySendingNone(eng, p, [][2]string{{method, path}})
}

// assertDeleteOnRequest deletes the owned kind/owned on request, whose
// object ownedID must then be gone, and the hand-made kind/theirs (its
// object called so too), which must be refused and stay; present reads
// whether an object is on the cluster.
func (e *env) assertDeleteOnRequest(eng *engine.Engine, kind, owned, ownedID, theirs string, present func(id string) bool) {
	e.t.Helper()
	if _, err := eng.Delete(e.t.Context(), e.desired(), kind, owned, nil); err != nil {
		e.t.Fatalf("deleting the owned %s/%s: %v", kind, owned, err)
	}
	if present(ownedID) {
		e.t.Fatalf("the owned %s/%s is still there", kind, owned)
	}
	if _, err := eng.Delete(e.t.Context(), e.desired(), kind, theirs, nil); err == nil || !present(theirs) {
		e.t.Fatalf("deleted %s/%s, which proxmops does not own: %v", kind, theirs, err)
	}
}

// applySendingNone applies p and fails for each of the calls (method and
// path pattern) the apply sent.
func (e *env) applySendingNone(eng *engine.Engine, p *engine.Plan, calls [][2]string) {
	e.t.Helper()
	e.sim.ResetRequests()
	if _, err := eng.Apply(e.t.Context(), p, nil); err != nil {
		e.t.Fatal(err)
	}
	for _, call := range calls {
		if n := e.sim.RequestCountFor(call[0], call[1]); n != 0 {
			e.t.Errorf("%s %s sent %d times", call[0], call[1], n)
		}
	}
}
