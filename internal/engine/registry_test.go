package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// This file proves the recipe of doc.go: a kind the engine does not know,
// TestPool (a Proxmox resource pool, /pools), added by one registry row
// (poolRow) and this file alone (its spec and reconciler), is observed,
// planned in the registry's order, applied, pruned and deleted on request
// against pvesim over HTTP, with the shared gate and prune helpers.

const kindTestPool = "TestPool"

// poolSpec is a desired pool; its comment carries the ownership mark.
type poolSpec struct {
	Meta
	Comment string
}

// poolReconciler keeps the pools it read (one GET /pools per plan).
type poolReconciler struct {
	pools map[string]string // poolid -> comment
	err   error
}

func (r *poolReconciler) scope(pc *planContext, sc *scope) {
	if len(pc.d.Specs(kindTestPool)) == 0 && !pc.e.opts.Prune {
		return
	}
	sc.read(func(ctx context.Context) error {
		var list []struct {
			PoolID  string `json:"poolid"`
			Comment string `json:"comment"`
		}
		r.err = pc.e.client.Get(ctx, "pools", nil, &list)
		r.pools = map[string]string{}
		for _, p := range list {
			r.pools[p.PoolID] = p.Comment
		}
		return nil
	})
}

func (r *poolReconciler) plan(pc *planContext) []*Action {
	var out []*Action
	declared := map[string]bool{}
	for _, s := range specsOf[*poolSpec](pc.d, kindTestPool) {
		declared[s.Name] = true
		out = append(out, r.planOne(pc, s))
	}
	if r.err != nil {
		return out
	}
	for _, id := range slices.Sorted(maps.Keys(r.pools)) {
		if owned, _ := parseOwned(r.pools[id]); !owned || declared[id] {
			continue
		}
		a := orphan(kindTestPool, id, "", 0, map[string]any{"comment": r.pools[id]})
		out = append(out, a)
		if decidePrune(pc, a, ownedWhy("owned by proxmops"), "", vocab.Change{Field: "poolid", From: id}) {
			a.run = func(ctx context.Context, x *execCtx) error {
				return x.e.client.Delete(ctx, "pools", pve.NewParams().Set("poolid", id), nil)
			}
		}
	}
	return out
}

func (r *poolReconciler) planOne(pc *planContext, s *poolSpec) *Action {
	a := baseAction(s.Meta, "", 0)
	if syncDisabled(a) {
		return a
	}
	if r.err != nil {
		a.Status, a.Reason = vocab.StatusUnknown, fmt.Sprintf("could not list the pools: %v", r.err)
		return a
	}
	params := pve.NewParams().Set("poolid", s.Name).Set("comment", markOwned(s.Comment))
	have, ok := r.pools[s.Name]
	if !ok {
		a.Action, a.Status, a.Reason = vocab.ActionCreate, vocab.StatusOutOfSync, "the pool does not exist"
		a.Changes = []vocab.Change{{Field: "comment", To: s.Comment}}
		a.run = func(ctx context.Context, x *execCtx) error { return x.e.client.Post(ctx, "pools", params, nil) }
		return a
	}
	a.Observed = map[string]any{"comment": have}
	owned, comment := parseOwned(have)
	if a.Owned = owned; !owned {
		return a.conflict("pool " + s.Name + " exists but proxmops does not own it: left untouched")
	}
	if comment == s.Comment {
		a.Status, a.Reason = vocab.StatusSynced, "in sync"
		return a
	}
	a.Action, a.Status, a.Reason = vocab.ActionUpdate, vocab.StatusOutOfSync, "comment differs from the manifest"
	a.Changes = []vocab.Change{{Field: "comment", From: comment, To: s.Comment}}
	a.run = func(ctx context.Context, x *execCtx) error { return x.e.client.Put(ctx, "pools", params, nil) }
	return a
}

// poolRow is the kind's one row, here placed first in the registry.
var poolRow = kindRow{kind: kindTestPool, reconciler: func() reconciler { return &poolReconciler{} }}

// withKindFirst puts row at the head of the registry for one test.
func withKindFirst(t *testing.T, row kindRow) {
	saved := kinds
	kinds = append([]kindRow{row}, saved...)
	t.Cleanup(func() { kinds = saved })
}

func poolSim(t *testing.T) *pve.Client {
	t.Helper()
	sim := pvesim.New(pvesim.Options{Nodes: 1, TokenID: "root@pam!proxmops", TokenSecret: "s", TaskSpeed: 0.01, Seed: 3})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	c, err := pve.New(pve.Config{Endpoint: sim.APIURL(), TokenID: "root@pam!proxmops", TokenSecret: "s",
		RetryBackoff: 5 * time.Millisecond, TaskPollMin: 5 * time.Millisecond, TaskPollMax: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func planOf(t *testing.T, e *Engine, d *Desired) *Plan {
	t.Helper()
	p, err := e.Plan(context.Background(), d, "test")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func applyAll(t *testing.T, e *Engine, p *Plan) {
	t.Helper()
	rep, err := e.Apply(context.Background(), p, nil)
	if err != nil || rep.Failed > 0 {
		t.Fatalf("apply: %v %+v", err, rep)
	}
}

// A kind added by a registry row and one file is planned in the row's
// place, created, found in sync, a Conflict when someone else's pool holds
// its name, pruned when no longer declared, and deleted on request.
func TestKindAddedByOneRowAndOneFile(t *testing.T) {
	withKindFirst(t, poolRow)
	client := poolSim(t)
	ctx := context.Background()
	eng := New(client, Options{})
	pool := func(name, comment string) *poolSpec {
		return &poolSpec{Meta: Meta{Kind: kindTestPool, Name: name, Sync: vocab.SyncAuto}, Comment: comment}
	}
	d := &Desired{}
	d.Add(&NetworkSpec{Meta: Meta{Kind: KindNetwork, Name: "pve1-vmbr7", Node: "pve1", Sync: vocab.SyncAuto},
		Iface: "vmbr7", Type: "bridge", Autostart: true}, pool("web", "web servers"), pool("db", ""))

	p := planOf(t, eng, d)
	var order []string
	for _, a := range p.Actions {
		order = append(order, a.Key()+":"+a.Action.String())
	}
	if got, want := strings.Join(order, " "), "TestPool/db:create TestPool/web:create Network/pve1-vmbr7:create"; got != want {
		t.Fatalf("plan order = %s, want %s (the row is first in the registry)", got, want)
	}
	applyAll(t, eng, p)
	var list []map[string]any
	if err := client.Get(ctx, "pools", nil, &list); err != nil || len(list) != 2 {
		t.Fatalf("pools after apply: %v %v", list, err)
	}
	p = planOf(t, eng, d)
	if a := p.Find(kindTestPool, "web"); a.Status != vocab.StatusSynced || !a.Owned {
		t.Fatalf("web after apply: %s %s", a.Status, a.Reason)
	}

	// Someone else's pool under a declared name is a Conflict, never changed.
	if err := client.Post(ctx, "pools", pve.NewParams().Set("poolid", "theirs").Set("comment", "hands off"), nil); err != nil {
		t.Fatal(err)
	}
	d.Add(pool("theirs", "mine now"))
	p = planOf(t, eng, d)
	if a := p.Find(kindTestPool, "theirs"); !a.Conflicted() || a.Status != vocab.StatusConflict || a.Action != vocab.ActionNone || p.Summary.Conflict != 1 {
		t.Fatalf("foreign pool: %+v", a)
	}

	// No longer declared: kept with prune off, deleted with it on.
	d, _ = d.without(kindTestPool, "db")
	if a := planOf(t, eng, d).Find(kindTestPool, "db"); a.Action != vocab.ActionNone || a.Status != vocab.StatusOutOfSync || !strings.Contains(a.Reason, "prune is off") {
		t.Fatalf("db with prune off: %+v", a)
	}
	pruning := New(client, Options{Prune: true})
	p = planOf(t, pruning, d)
	if a := p.Find(kindTestPool, "db"); a.Action != vocab.ActionDelete || a.Changes[0].From != "db" {
		t.Fatalf("db with prune on: %+v", a)
	}
	if p.Find(kindTestPool, "theirs").Action != vocab.ActionNone {
		t.Fatal("a pool proxmops does not own is never pruned")
	}
	applyAll(t, pruning, p.Only("TestPool/db"))

	// Delete on request: the one resource, through the same prune decision.
	if _, err := eng.Delete(ctx, d, kindTestPool, "web", nil); err != nil {
		t.Fatal(err)
	}
	list = nil
	if err := client.Get(ctx, "pools", nil, &list); err != nil || len(list) != 1 || list[0]["poolid"] != "theirs" {
		t.Fatalf("pools at the end: %v %v", list, err)
	}
	if _, err := eng.Delete(ctx, d, kindTestPool, "theirs", nil); err == nil {
		t.Fatal("deleted a pool proxmops does not own")
	}
}

// Every kind of the registry has a reconciler, or is planned by another
// row's (SDN vnets with their zones); manifests' kinds are all in it, in
// the manifests' order.
func TestRegistryCoversTheManifestKinds(t *testing.T) {
	var names []string
	for _, row := range kinds {
		names = append(names, row.kind)
		if row.desired == nil {
			t.Errorf("%s: no conversion from manifests", row.kind)
		}
		if row.reconciler == nil && row.kind != KindSdnVnet {
			t.Errorf("%s: no reconciler", row.kind)
		}
	}
	var want []string
	for _, k := range manifest.Kinds() {
		want = append(want, string(k))
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("registry kinds %v, manifest kinds %v", names, want)
	}
}
