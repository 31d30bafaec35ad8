package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Resource pools (/pools, pve-manager API2/Pool.pm). A pool has no tags:
// proxmops owns the pools whose comment carries its mark (markOwned), and
// never changes or deletes another one; a declared name held by such a
// pool is a Conflict. Proxmox deletes only an empty pool (delete_pool):
// the plan refuses the prune of a pool guests stay in, and runs it after
// the guests that leave it. A guest's membership (spec.pool) is planned
// with the guest (planGuestPool): it is created in its pool, and moved
// back when someone moves it out.

// PoolSpec is a desired resource pool; its comment carries the ownership
// mark.
type PoolSpec struct {
	Meta
	Comment string
}

func poolFromManifest(p *manifest.Pool, _ SecretReader) *PoolSpec {
	return &PoolSpec{Meta: metaOf(p), Comment: p.Spec.Comment}
}

// resourcePoolReconciler keeps the pools it read (one GET /pools per plan).
type resourcePoolReconciler struct {
	pools map[string]string // poolid -> comment
	err   error
}

// wantsPools reports whether the plan needs the pool list: pools are
// declared, may be pruned, or a guest names one.
func wantsPools(pc *planContext) bool {
	if len(pc.d.Specs(KindPool)) > 0 || pc.e.opts.Prune {
		return true
	}
	for _, s := range specsOf[*VMSpec](pc.d, KindVirtualMachine) {
		if s.Pool != "" {
			return true
		}
	}
	for _, s := range specsOf[*ContainerSpec](pc.d, KindContainer) {
		if s.Pool != "" {
			return true
		}
	}
	return false
}

func (r *resourcePoolReconciler) scope(pc *planContext, sc *scope) {
	if !wantsPools(pc) {
		return
	}
	sc.read(func(ctx context.Context) error {
		var list []struct {
			PoolID  string `json:"poolid"`
			Comment string `json:"comment"`
		}
		r.err = pc.e.client.Get(ctx, "pools", nil, &list)
		if r.err != nil {
			return nil
		}
		r.pools = map[string]string{}
		for _, p := range list {
			r.pools[p.PoolID] = p.Comment
		}
		return nil
	})
}

func (r *resourcePoolReconciler) plan(pc *planContext) []*Action {
	pc.kinds.pools = r.pools
	var out []*Action
	declared := map[string]bool{}
	for _, s := range specsOf[*PoolSpec](pc.d, KindPool) {
		declared[s.Name] = true
		out = append(out, r.planOne(pc, s))
	}
	if r.err != nil {
		return out
	}
	for _, id := range slices.Sorted(maps.Keys(r.pools)) {
		if owned, _ := ParseOwned(r.pools[id]); !owned || declared[id] {
			continue
		}
		out = append(out, r.prune(pc, id))
	}
	return out
}

// prune plans the fate of an owned pool no manifest declares: deleted
// after the guests that leave it, refused while guests stay in it or it
// holds a nested pool (pve-manager API2/Pool.pm delete_pool).
func (r *resourcePoolReconciler) prune(pc *planContext, id string) *Action {
	a := orphan(KindPool, id, "", 0, map[string]any{"comment": r.pools[id]})
	stays, leave := poolGuests(pc, id)
	blocked := ""
	for _, sub := range slices.Sorted(maps.Keys(r.pools)) {
		if strings.HasPrefix(sub, id+"/") {
			blocked = fmt.Sprintf("pool '%s' is not empty (contains pool '%s'): Proxmox deletes only an empty pool", id, sub)
			break
		}
	}
	if blocked == "" && len(stays) > 0 {
		blocked = fmt.Sprintf("pool '%s' is not empty (contains VM %d): Proxmox deletes only an empty pool; move the guests out first", id, stays[0])
	}
	if decidePrune(pc, a, ownedWhy("owned by proxmops"), blocked, vocab.Change{Field: "poolid", From: id}) {
		a.DependsOn = leave
		a.run = func(ctx context.Context, x *execCtx) error {
			return x.e.client.Delete(ctx, "pools", pve.NewParams().Set("poolid", id), nil)
		}
	}
	return a
}

// poolGuests splits the guests in pool id into the VMIDs that stay there
// after this plan and the action keys of those that leave it: owned
// guests no longer declared (pruned) and declared guests naming another
// pool.
func poolGuests(pc *planContext, id string) (stays []int, leave []string) {
	want := map[int]string{} // VMID -> declared pool, for declared guests
	key := map[int]string{}
	for _, s := range specsOf[*VMSpec](pc.d, KindVirtualMachine) {
		want[s.VMID], key[s.VMID] = s.Pool, vocab.Key(KindVirtualMachine, s.Name)
	}
	for _, s := range specsOf[*ContainerSpec](pc.d, KindContainer) {
		want[s.VMID], key[s.VMID] = s.Pool, vocab.Key(KindContainer, s.Name)
	}
	for _, vmid := range slices.Sorted(maps.Keys(pc.snap.Guests)) {
		g := pc.snap.Guests[vmid]
		if g.Pool != id {
			continue
		}
		pool, declared := want[vmid]
		switch {
		case declared && pool != "" && pool != id:
			leave = append(leave, key[vmid])
		case !declared && g.Owned && pc.e.opts.Prune && pc.declared[vmid] == "":
			leave = append(leave, vocab.Key(KindVirtualMachine, g.Name), vocab.Key(KindContainer, g.Name))
		default:
			stays = append(stays, vmid)
		}
	}
	return stays, leave
}

func (r *resourcePoolReconciler) planOne(pc *planContext, s *PoolSpec) *Action {
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
		a.Changes = []vocab.Change{{Field: "poolid", Path: "metadata.name", To: s.Name}, {Field: "comment", Path: "spec.comment", To: s.Comment}}
		a.DependsOn = append(a.DependsOn, s.needs(KindPool)...) // a nested pool's parent
		a.run = func(ctx context.Context, x *execCtx) error { return x.e.client.Post(ctx, "pools", params, nil) }
		return a
	}
	a.Observed = map[string]any{"comment": have}
	owned, comment := ParseOwned(have)
	if !owned && s.Adopt {
		// proxmops.dev/adopt: the pool becomes proxmops' by its mark.
		a.Adopt = true
		a.Action, a.Status, a.Reason = vocab.ActionUpdate, vocab.StatusOutOfSync, "adopting the pool (proxmops.dev/adopt): its comment gets the "+OwnerMark+" mark"
		a.Changes = []vocab.Change{{Field: "comment", Path: "spec.comment", From: have, To: markOwned(s.Comment)}}
		a.run = func(ctx context.Context, x *execCtx) error { return x.e.client.Put(ctx, "pools", params, nil) }
		return a
	}
	if a.Owned = owned; !owned {
		return a.conflict("pool " + s.Name + " exists but proxmops does not own it (its comment has no " + OwnerMark + " mark): left untouched (annotate proxmops.dev/adopt: \"true\" to take it over)")
	}
	if comment == strings.TrimSpace(s.Comment) {
		a.Status, a.Reason = vocab.StatusSynced, "in sync"
		return a
	}
	a.Action, a.Status, a.Reason = vocab.ActionUpdate, vocab.StatusOutOfSync, "comment differs from the manifest"
	a.Changes = []vocab.Change{{Field: "comment", Path: "spec.comment", From: comment, To: s.Comment}}
	a.run = func(ctx context.Context, x *execCtx) error { return x.e.client.Put(ctx, "pools", params, nil) }
	return a
}

// planGuestPool adds a guest's pool membership (spec.pool) to its action:
// a create names the pool (create_vm and clone_vm take it); an existing
// guest in another pool, or in none, is put back with PUT /pools (with
// allow-move when it leaves another pool, Pool.pm update_pool). A pool
// neither declared nor on the cluster is refused before anything is done.
// m is the guest's Meta: its edge to a declared pool (manifest.Dependencies)
// orders the action after the pool's.
func planGuestPool(pc *planContext, a *Action, m *Meta, want string) *Action {
	if want == "" || a.Status != vocab.StatusSynced && a.Status != vocab.StatusOutOfSync {
		return a
	}
	if declared := m.needs(KindPool); len(declared) > 0 {
		a.DependsOn = append(a.DependsOn, declared...)
	} else if _, exists := pc.kinds.pools[want]; pc.kinds.pools != nil && !exists {
		a.refuse(fmt.Sprintf("pool %q is neither declared (kind: Pool) nor on the cluster: declare it or create it first (GET /pools lists only the pools the token has Pool.Audit on)", want))
		return a
	}
	if a.Action == vocab.ActionCreate {
		a.Changes = append(a.Changes, vocab.Change{Field: "pool", Path: "spec.pool", To: want})
		return a
	}
	g := pc.snap.Guests[a.VMID]
	if g == nil || !a.Owned || g.Pool == want || a.Refused() {
		return a
	}
	a.Changes = append(a.Changes, vocab.Change{Field: "pool", Path: "spec.pool", From: g.Pool, To: want})
	why := "pool differs from the manifest"
	a.guestChange(why, g.Node)
	params := pve.NewParams().Set("poolid", want).Set("vms", strconv.Itoa(g.VMID))
	if g.Pool != "" {
		params.Set("allow-move", "1")
	}
	chainStep(a, func(ctx context.Context, x *execCtx) error { return x.e.client.Put(ctx, "pools", params, nil) })
	return a
}

// poolNeeds are a Pool's privileges: Pool.Allocate on it for every write
// (Pool.pm create_pool, update_pool, delete_pool), and Pool.Audit to see
// it: Pool.pm index lists only the pools the caller may audit, so a pool
// the token cannot see would be created again (and refused) every pass.
func poolNeeds(_ *privContext, a *Action, _ Spec) []privNeed {
	verb := map[vocab.Action]string{vocab.ActionCreate: "create", vocab.ActionUpdate: "change", vocab.ActionDelete: "delete"}[a.Action]
	return []privNeed{needAll(verb+" the pool", "/pool/"+a.Name, "Pool.Allocate"), needAll("see the pool in GET /pools", "/pool/"+a.Name, "Pool.Audit")}
}

// guestPoolNeeds are what moving a guest into its pool asks (Pool.pm
// update_pool): Pool.Allocate on the pool, VM.Allocate on the guest
// (check_perm_modify, which takes Permissions.Modify as well: proxmops'
// role grants the former), and Pool.Allocate on the pool it leaves.
func guestPoolNeeds(a *Action) []privNeed {
	var to, from string
	for _, c := range a.Changes {
		if c.Path == "spec.pool" && a.Action != vocab.ActionCreate {
			to, from = c.To, c.From
		}
	}
	if to == "" {
		return nil
	}
	needs := []privNeed{needAll("put the guest into pool "+to, "/pool/"+to, "Pool.Allocate"),
		needAll("put the guest into pool "+to, vmPath(a.VMID), "VM.Allocate")}
	if from != "" {
		needs = append(needs, needAll("move the guest out of pool "+from, "/pool/"+from, "Pool.Allocate"))
	}
	return needs
}
