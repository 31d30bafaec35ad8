package engine_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

const (
	prodPool = `apiVersion: proxmops.dev/v1
kind: Pool
metadata:
  name: prod
spec:
  comment: Production
`
	pooledVM = webVM + `  pool: POOL
  cores: 1
  memory: 512
`
)

// poolComments reads every pool's comment through GET /pools.
func poolComments(t *testing.T, c *pve.Client) map[string]string {
	t.Helper()
	var list []struct {
		PoolID  string `json:"poolid"`
		Comment string `json:"comment"`
	}
	if err := c.Get(context.Background(), "pools", nil, &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list {
		out[p.PoolID] = p.Comment
	}
	return out
}

func put(t *testing.T, c *pve.Client, kv ...string) {
	t.Helper()
	p := pve.NewParams()
	for i := 0; i < len(kv); i += 2 {
		p.Set(kv[i], kv[i+1])
	}
	if err := c.Put(context.Background(), "pools", p, nil); err != nil {
		t.Fatal(err)
	}
}

func poolChange(a *engine.Action) *vocab.Change {
	for i, c := range a.Changes {
		if c.Field == "pool" {
			return &a.Changes[i]
		}
	}
	return nil
}

// A declared pool is created before the guest that names it, the guest is
// created in it, both are in sync on the next plan, a comment changed by
// hand and a guest moved by hand (to another pool, out of every pool) are
// put back, and the field is shown with its manifest path.
func TestPoolCreatedAndGuestKeptInIt(t *testing.T) {
	e, eng := withManifests(t, engine.Options{},
		"pools/prod.yaml", prodPool,
		"vms/web.yaml", strings.ReplaceAll(pooledVM, "POOL", "prod"),
	)
	ctx := context.Background()
	p := e.plan(eng)
	if a := p.Find(engine.KindPool, "prod"); a.Action != vocab.ActionCreate {
		t.Fatalf("pool: %+v", a)
	}
	web := p.Find(engine.KindVirtualMachine, "web")
	if c := poolChange(web); c == nil || c.To != "prod" || c.Path != "spec.pool" || !reflect.DeepEqual(web.DependsOn, []string{"Pool/prod"}) {
		t.Fatalf("web: %+v depends on %v", web.Changes, web.DependsOn)
	}
	e.converge(eng)
	if got := poolVMIDs(t, e.client, "prod"); !reflect.DeepEqual(got, []int{150}) {
		t.Fatalf("prod holds %v", got)
	}
	if got := poolComments(t, e.client)["prod"]; got != "Production (managed-by-proxmops)" {
		t.Fatalf("comment %q", got)
	}
	e.assertInSync(eng)

	// The comment changed by hand, keeping the mark.
	put(t, e.client, "poolid", "prod", "comment", "Staging (managed-by-proxmops)")
	a := e.plan(eng).Find(engine.KindPool, "prod")
	if a.Action != vocab.ActionUpdate || a.Changes[0].From != "Staging" || a.Changes[0].Path != "spec.comment" {
		t.Fatalf("comment drift: %+v", a)
	}
	e.converge(eng)

	// Moved by hand to another pool, then out of every pool.
	if err := e.client.Post(ctx, "pools", pve.NewParams().Set("poolid", "other"), nil); err != nil {
		t.Fatal(err)
	}
	put(t, e.client, "poolid", "other", "vms", "150", "allow-move", "1")
	for _, from := range []string{"other", ""} {
		web := e.plan(eng).Find(engine.KindVirtualMachine, "web")
		if c := poolChange(web); web.Action != vocab.ActionUpdate || c == nil || c.From != from || c.To != "prod" {
			t.Fatalf("moved to %q: %s %+v", from, web.Action, web.Changes)
		}
		e.converge(eng)
		if got := poolVMIDs(t, e.client, "prod"); !reflect.DeepEqual(got, []int{150}) {
			t.Fatalf("prod holds %v after the move back from %q", got, from)
		}
		put(t, e.client, "poolid", "prod", "vms", "150", "delete", "1")
	}
	e.converge(eng)
	e.assertInSync(eng)
}

// A pool made by hand is never changed or deleted, even with prune on, and
// a manifest naming it is a Conflict; an owned pool guests stay in is not
// deleted (the plan says which), one whose guest leaves it this pass is
// deleted after the move, and a member the plan cannot see makes Proxmox
// refuse, in its words.
func TestPoolOwnershipAndDeletionOnlyWhenEmpty(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := e.client.Post(ctx, "pools", pve.NewParams().Set("poolid", "theirs").Set("comment", "hands off"), nil); err != nil {
		t.Fatal(err)
	}
	e.write("pools/prod.yaml", prodPool)
	e.write("pools/spare.yaml", strings.ReplaceAll(prodPool, "prod", "spare"))
	e.write("vms/web.yaml", strings.ReplaceAll(pooledVM, "POOL", "prod"))
	pruning := e.engine(engine.Options{Prune: true})
	e.converge(pruning)
	if a := e.plan(pruning).Find(engine.KindPool, "theirs"); a != nil {
		t.Fatalf("a hand-made pool is planned: %+v", a)
	}

	e.write("pools/theirs.yaml", strings.ReplaceAll(prodPool, "prod", "theirs"))
	if a := e.plan(pruning).Find(engine.KindPool, "theirs"); !a.Conflicted() || a.Runnable() {
		t.Fatalf("declared hand-made pool: %+v", a)
	}
	e.remove("pools/theirs.yaml")

	// prod no longer declared while web stays in it: refused before acting.
	e.remove("pools/prod.yaml")
	a := e.plan(pruning).Find(engine.KindPool, "prod")
	if a.Status != vocab.StatusFailed || a.Runnable() || !strings.Contains(a.Reason, "pool 'prod' is not empty (contains VM 150)") {
		t.Fatalf("non-empty prune: %+v", a)
	}
	// web moves to theirs (it exists, not declared): prod goes after it.
	e.write("vms/web.yaml", strings.ReplaceAll(pooledVM, "POOL", "theirs"))
	p := e.plan(pruning)
	if a := p.Find(engine.KindPool, "prod"); !a.Runnable() || !reflect.DeepEqual(a.DependsOn, []string{"VirtualMachine/web"}) {
		t.Fatalf("prune after the move: %+v", a)
	}
	e.converge(pruning)
	if _, ok := poolComments(t, e.client)["prod"]; ok {
		t.Fatal("prod is still there")
	}
	if got := poolVMIDs(t, e.client, "theirs"); !reflect.DeepEqual(got, []int{150}) {
		t.Fatalf("theirs holds %v", got)
	}
	if got := poolComments(t, e.client)["theirs"]; got != "hands off" {
		t.Fatalf("theirs' comment changed: %q", got)
	}

	// A storage someone put into spare: Proxmox refuses, and says why.
	put(t, e.client, "poolid", "spare", "storage", "local")
	e.remove("pools/spare.yaml")
	_, rep := e.apply(pruning)
	var got string
	for _, r := range rep.Results {
		if r.Kind == engine.KindPool && r.Name == "spare" {
			got = r.Error
		}
	}
	if !strings.Contains(got, "delete pool failed: pool 'spare' is not empty (contains storage 'local')") {
		t.Fatalf("spare: %q (%+v)", got, rep.Results)
	}
}

// A guest naming a pool that is neither declared nor on the cluster fails
// its plan; a token without Pool.Allocate is named by the plan, for a pool
// and for a guest to move back into one, and no pool request is made.
func TestPoolRefusalsBeforeActing(t *testing.T) {
	e := newEnv(t)
	e.write("vms/web.yaml", strings.ReplaceAll(pooledVM, "POOL", "nowhere"))
	if a := e.plan(e.engine(engine.Options{})).Find(engine.KindVirtualMachine, "web"); a.Status != vocab.StatusFailed || a.Runnable() ||
		!strings.Contains(a.Reason, `pool "nowhere" is neither declared (kind: Pool) nor on the cluster`) {
		t.Fatalf("unknown pool: %+v", a)
	}

	var eng *engine.Engine
	var p *engine.Plan
	for _, missing := range []string{"Pool.Allocate", "Pool.Audit"} {
		e = newEnvWith(t, func(o *pvesim.Options) { o.TokenPrivileges = allPrivilegesBut(missing) })
		e.write("pools/prod.yaml", prodPool)
		eng = e.engine(engine.Options{})
		p = e.plan(eng)
		if a := p.Find(engine.KindPool, "prod"); a.Status != vocab.StatusFailed || a.Runnable() || !strings.Contains(a.Reason, missing+" on /pool/prod") {
			t.Fatalf("without %s: %+v", missing, a)
		}
		e.sim.ResetRequests()
		if _, err := eng.Apply(t.Context(), p, nil); err != nil {
			t.Fatal(err)
		}
		if n := e.sim.RequestCountFor("POST", "/pools"); n != 0 {
			t.Fatalf("without %s: POST /pools called %d times", missing, n)
		}
	}

	// A guest moved out of its pool by hand, and the token loses Pool.Allocate.
	e = newEnv(t)
	e.write("pools/prod.yaml", prodPool)
	e.write("vms/web.yaml", strings.ReplaceAll(pooledVM, "POOL", "prod"))
	eng = e.engine(engine.Options{})
	e.converge(eng)
	put(t, e.client, "poolid", "prod", "vms", "150", "delete", "1")
	e.sim.SetTokenPrivileges(allPrivilegesBut("Pool.Allocate"))
	p = e.plan(eng)
	if a := p.Find(engine.KindVirtualMachine, "web"); a.Status != vocab.StatusFailed || a.Runnable() || !strings.Contains(a.Reason, "Pool.Allocate on /pool/prod") {
		t.Fatalf("moving web back without Pool.Allocate: %+v", a)
	}
	e.sim.ResetRequests()
	if _, err := eng.Apply(t.Context(), p, nil); err != nil {
		t.Fatal(err)
	}
	if n := e.sim.RequestCountFor("PUT", "/pools"); n != 0 {
		t.Fatalf("PUT /pools called %d times", n)
	}
}

// A container is created in its pool too, and put back after a hand move;
// a guest without spec.pool keeps the pool someone gave it.
func TestContainerPoolAndUnsetPoolLeftAlone(t *testing.T) {
	e := newEnv(t)
	e.addCTTemplate()
	e.write("pools/prod.yaml", prodPool)
	e.write("cts/cache-01.yaml", strings.Replace(strings.ReplaceAll(movedCT, "CORES", "1"), "  vmid: 230\n", "  vmid: 230\n  pool: prod\n", 1))
	e.write("vms/web.yaml", strings.ReplaceAll(pooledVM, "  pool: POOL\n", ""))
	eng := e.engine(engine.Options{})
	e.converge(eng)
	if got := poolVMIDs(t, e.client, "prod"); !reflect.DeepEqual(got, []int{230}) {
		t.Fatalf("prod holds %v", got)
	}
	put(t, e.client, "poolid", "prod", "vms", "230", "delete", "1")
	put(t, e.client, "poolid", "prod", "vms", "150")
	p := e.plan(eng)
	if a := p.Find(engine.KindContainer, "cache-01"); a.Action != vocab.ActionUpdate || poolChange(a) == nil {
		t.Fatalf("cache-01 out of its pool: %+v", a)
	}
	if a := p.Find(engine.KindVirtualMachine, "web"); a.Action != vocab.ActionNone || a.Status != vocab.StatusSynced {
		t.Fatalf("web without spec.pool: %+v", a)
	}
	e.converge(eng)
	if got := poolVMIDs(t, e.client, "prod"); !reflect.DeepEqual(got, []int{150, 230}) {
		t.Fatalf("prod holds %v", got)
	}
	e.assertInSync(eng)
}
