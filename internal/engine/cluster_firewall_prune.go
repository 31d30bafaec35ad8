package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/vocab"
)

// With no ClusterFirewall declared, the rules proxmops marked in the
// cluster's rule list are orphans like any undeclared owned resource:
// with prune on they are removed, all in one action, the rules without
// the mark and the options (enable, policies) left as they are; with
// prune off they are left and not even read, as no cluster collection is
// read when nothing of it is declared and prune is off. The removal is
// guarded as any change of the rules is (firewall_guard.go): it may not
// leave the firewall on with a dropping policy and nothing letting
// proxmops in.
// With prune on the rule list is read once per pass; the options and what
// the guard needs only when prune would remove marked rules.

// scopeUndeclared reads the cluster's rule list for its marked rules,
// only with prune on: as for every cluster-wide collection, a pass with
// nothing declared and prune off reads nothing of it.
func (r *clusterFirewallReconciler) scopeUndeclared(pc *planContext, sc *scope) {
	if !pc.e.opts.Prune {
		return
	}
	sc.read(func(ctx context.Context) error {
		if err := r.readRules(ctx, pc.e.client); err != nil {
			return nil // nothing declared: a list proxmops cannot read is not reported
		}
		r.listed = true
		if len(r.markedPositions()) == 0 || !r.readOptions(ctx, pc.e.client) {
			return nil
		}
		// Nothing declared: the options stay as they are.
		r.guard = readGuardInputs(ctx, pc, &ClusterFirewallSpec{}, r.options)
		return nil
	})
}

// markedPositions are the positions of the rules carrying proxmops' mark.
func (r *clusterFirewallReconciler) markedPositions() []int {
	var out []int
	for i, h := range r.rules {
		if owned, _ := clusterRules.mine(h); owned {
			out = append(out, i)
		}
	}
	return out
}

// planUndeclared is the fate of proxmops' marked rules when no
// ClusterFirewall declares them: nothing when there are none.
func (r *clusterFirewallReconciler) planUndeclared(pc *planContext) []*Action {
	if !r.listed {
		return nil
	}
	_, rules := clusterRules.diffRules(r.rules, nil)
	if rules == nil {
		return nil
	}
	var lines, at []string
	var changes []vocab.Change
	for _, pos := range rules.slots {
		_, f := clusterRules.mine(r.rules[pos])
		lines = append(lines, ruleLine(f))
		at = append(at, strconv.Itoa(pos))
		changes = append(changes, vocab.Change{Field: indexPath("rules", pos), From: ruleLine(f)})
	}
	a := orphan(KindClusterFirewall, manifest.ClusterFirewallName, "", 0, map[string]any{"rules": lines})
	what, them := fmt.Sprintf("the rules at %s of the cluster's rule list carry proxmops' mark", strings.Join(at, ", ")), "them"
	if len(lines) == 1 {
		what, them = fmt.Sprintf("the rule at %s of the cluster's rule list carries proxmops' mark", at[0]), "it"
	}
	why := pruneWhy{
		kept: what + " but no ClusterFirewall declares " + them + "; prune is off, so the rules are left in place",
		gone: what + " and no ClusterFirewall declares " + them + " (prune): removed; the other rules and the firewall's options stay as they are",
	}
	if r.err != nil {
		a.Status, a.Reason = vocab.StatusUnknown, fmt.Sprintf("could not read the cluster firewall: %v", r.err)
		return []*Action{a}
	}
	if !decidePrune(pc, a, why, "", vocab.Change{}) {
		return []*Action{a}
	}
	a.Changes = changes
	if refused := r.guardRefusal(pc, "the cluster's rule list (by hand, or in a ClusterFirewall's spec.rules)", rules); refused != "" {
		a.refuse(refused)
		return []*Action{a}
	}
	a.run = func(ctx context.Context, x *execCtx) error { return rules.apply(ctx, x.e.client) }
	return []*Action{a}
}
