package export_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/export"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/vocab"
)

// fileWith returns the exported file at path and fails the test for each
// want it lacks.
func fileWith(t *testing.T, res *export.Result, path string, wants ...string) string {
	t.Helper()
	y := file(t, res, path)
	for _, want := range wants {
		if !strings.Contains(y, want) {
			t.Errorf("%s lacks %q:\n%s", path, want, y)
		}
	}
	return y
}

// adoption is an export's manifests planned against the cluster they came
// from, as the first sync after an export plans them.
type adoption struct {
	t   *testing.T
	eng *engine.Engine
	set *manifest.Set
}

func adopt(t *testing.T, c *cluster, res *export.Result) *adoption {
	t.Helper()
	set, err := res.Load()
	if err != nil {
		t.Fatal(err)
	}
	return &adoption{t: t, eng: engine.New(c.client, engine.Options{}), set: set}
}

func (a *adoption) plan() *engine.Plan {
	a.t.Helper()
	p, err := a.eng.Plan(context.Background(), engine.DesiredFromSet(a.set, nil), "")
	if err != nil {
		a.t.Fatal(err)
	}
	return p
}

// applyInSync applies p and fails unless the next plan has nothing to do.
func (a *adoption) applyInSync(p *engine.Plan) {
	a.t.Helper()
	if rep, err := a.eng.Apply(context.Background(), p, nil); err != nil || rep.Failed > 0 {
		a.t.Fatalf("apply: %v %+v", err, rep)
	}
	for _, act := range a.plan().Actions {
		if act.Action != vocab.ActionNone || act.Status != vocab.StatusSynced {
			a.t.Errorf("after the adoption: %s %s %s %s %v", act.Key(), act.Action, act.Status, act.Reason, act.Changes)
		}
	}
}
