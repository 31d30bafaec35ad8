package engine

import (
	"context"
	"fmt"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// The cluster firewall (pve-firewall API2/Firewall/Cluster.pm options,
// Rules.pm ClusterRules): a singleton. Only the options the manifest
// declares are managed; the cluster's rule list is shared with people, so
// proxmops manages only the rules whose comment carries its mark, in
// their order, and never touches another. Sys.Audit on / reads it,
// Sys.Modify on / changes it. Turning it on is guarded (firewall_guard.go).

const KindClusterFirewall = string(manifest.KindClusterFirewall)

// ClusterFirewallSpec is the desired cluster firewall; nil and "" fields
// are not managed.
type ClusterFirewallSpec struct {
	Meta
	Enabled   *bool
	PolicyIn  string
	PolicyOut string
	Rules     []manifest.FirewallRule
}

func clusterFirewallFromManifest(f *manifest.ClusterFirewall, _ SecretReader) *ClusterFirewallSpec {
	return &ClusterFirewallSpec{Meta: metaOf(f), Enabled: f.Spec.Enabled, PolicyIn: f.Spec.PolicyIn, PolicyOut: f.Spec.PolicyOut, Rules: f.Spec.Rules}
}

const (
	fwOptionsPath      = fwBase + "/options"
	fwClusterRulesPath = fwBase + "/rules"
)

var clusterRules = ruleList{path: fwClusterRulesPath, field: "spec.rules", shared: true}

// fwOption is one managed option: Proxmox's key, the manifest path, the
// wanted value ("" when not declared) and Proxmox's default when unset.
type fwOption struct{ key, path, want, def string }

func (s *ClusterFirewallSpec) options() []fwOption {
	enable := ""
	if s.Enabled != nil {
		enable = boolParam(*s.Enabled)
	}
	return []fwOption{{"enable", "spec.enabled", enable, "0"}, {"policy_in", "spec.policyIn", s.PolicyIn, "DROP"},
		{"policy_out", "spec.policyOut", s.PolicyOut, "ACCEPT"}}
}

// clusterFirewallReconciler reads the options and the rule list (two
// requests per pass, when the kind is declared), and what the guard needs
// when the pass would change something.
type clusterFirewallReconciler struct {
	options collItem
	rules   []collItem
	listed  bool // the rule list was read (undeclared: prune's own read)
	err     error
	guard   guardInputs
}

func (r *clusterFirewallReconciler) scope(pc *planContext, sc *scope) {
	specs := specsOf[*ClusterFirewallSpec](pc.d, KindClusterFirewall)
	if len(specs) == 0 {
		r.scopeUndeclared(pc, sc)
		return
	}
	if specs[0].Sync == vocab.SyncDisabled {
		return
	}
	sc.read(func(ctx context.Context) error {
		if !r.readOptions(ctx, pc.e.client) {
			return nil
		}
		if err := r.readRules(ctx, pc.e.client); err != nil {
			r.err = fmt.Errorf("reading %s: %w", fwClusterRulesPath, err)
			return nil
		}
		if r.changes(specs[0]) {
			// Only a pass that would change something reads what the guard needs.
			r.guard = readGuardInputs(ctx, pc, specs[0], r.options)
		}
		return nil
	})
}

// readOptions reads the cluster firewall's options; a failed read is
// r.err, and false.
func (r *clusterFirewallReconciler) readOptions(ctx context.Context, c *pve.Client) bool {
	var opts map[string]any
	if err := c.Get(ctx, fwOptionsPath, nil, &opts); err != nil {
		r.err = fmt.Errorf("reading %s: %w", fwOptionsPath, err)
		return false
	}
	r.options = stringValues(opts)
	return true
}

// readRules reads the cluster's rule list.
func (r *clusterFirewallReconciler) readRules(ctx context.Context, c *pve.Client) error {
	var list []map[string]any
	if err := c.Get(ctx, fwClusterRulesPath, nil, &list); err != nil {
		return err
	}
	for _, m := range list {
		r.rules = append(r.rules, stringValues(m))
	}
	return nil
}

// changes reports whether the cluster firewall differs from s.
func (r *clusterFirewallReconciler) changes(s *ClusterFirewallSpec) bool {
	for _, o := range s.options() {
		if o.want != "" && r.effective(o) != o.want {
			return true
		}
	}
	c, _ := clusterRules.diffRules(r.rules, s.Rules)
	return len(c) > 0
}

// effective is an option's value as Proxmox applies it.
func (r *clusterFirewallReconciler) effective(o fwOption) string {
	if v := r.options[o.key]; v != "" {
		return v
	}
	return o.def
}

func (r *clusterFirewallReconciler) plan(pc *planContext) []*Action {
	specs := specsOf[*ClusterFirewallSpec](pc.d, KindClusterFirewall)
	if len(specs) == 0 {
		return r.planUndeclared(pc)
	}
	var out []*Action
	for _, s := range specs {
		out = append(out, r.planOne(pc, s))
	}
	return out
}

func (r *clusterFirewallReconciler) planOne(pc *planContext, s *ClusterFirewallSpec) *Action {
	a := baseAction(s.Meta, "", 0)
	if syncDisabled(a) {
		return a
	}
	if r.err != nil {
		a.Status, a.Reason = vocab.StatusUnknown, fmt.Sprintf("could not read the cluster firewall: %v", r.err)
		return a
	}
	a.Owned = true
	a.Observed = map[string]any{"options": map[string]string(r.options)}
	a.DependsOn = append(a.DependsOn, s.Needs...)
	var changes []vocab.Change
	params := pve.NewParams()
	for _, o := range s.options() {
		if o.want != "" && r.effective(o) != o.want {
			changes = append(changes, vocab.Change{Field: o.key, Path: o.path, From: r.effective(o), To: o.want})
			params.Set(o.key, o.want)
		}
	}
	rc, rules := clusterRules.diffRules(r.rules, s.Rules)
	changes = append(changes, rc...)
	if len(changes) == 0 {
		a.Status, a.Reason = vocab.StatusSynced, "in sync"
		return a
	}
	a.Action, a.Status, a.Changes = vocab.ActionUpdate, vocab.StatusOutOfSync, changes
	a.Reason = fieldNames(changes, ", ") + " differ from the manifest"
	if why := r.guardRefusal(pc, "spec.rules", rules); why != "" {
		a.refuse(why)
		return a
	}
	digest := r.options["digest"]
	a.run = func(ctx context.Context, x *execCtx) error {
		// The rules first: a firewall being turned on finds them in place.
		if rules != nil {
			if err := rules.apply(ctx, x.e.client); err != nil {
				return err
			}
		}
		if params.Len() == 0 {
			return nil
		}
		if digest != "" {
			params.Set("digest", digest)
		}
		if err := x.e.client.Put(ctx, fwOptionsPath, params, nil); err != nil {
			return fmt.Errorf("PUT %s: %w", fwOptionsPath, err)
		}
		return nil
	}
	return a
}

func clusterFirewallRow() kindRow {
	return kindRow{kind: KindClusterFirewall, desired: fromManifest(clusterFirewallFromManifest),
		reconciler: func() reconciler { return &clusterFirewallReconciler{} },
		needs: func(_ *privContext, a *Action, _ Spec) []privNeed {
			if a.Action == vocab.ActionDelete {
				return []privNeed{needAll("remove proxmops' rules from the cluster's rule list", "/", "Sys.Modify")}
			}
			return []privNeed{needAll("change the cluster firewall", "/", "Sys.Modify")}
		}}
}

// ClusterFirewallState is the cluster firewall as export writes it: the
// options Proxmox holds, and proxmops' rules (marked, the mark removed
// from their comments) in order; OtherRules counts the rest.
type ClusterFirewallState struct {
	Options    map[string]string
	Rules      []map[string]string
	OtherRules int
}

// ReadClusterFirewall reads the options and the rule list.
func (e *Engine) ReadClusterFirewall(ctx context.Context) (*ClusterFirewallState, error) {
	var opts map[string]any
	if err := e.client.Get(ctx, fwOptionsPath, nil, &opts); err != nil {
		return nil, fmt.Errorf("reading %s: %w", fwOptionsPath, err)
	}
	var list []map[string]any
	if err := e.client.Get(ctx, fwClusterRulesPath, nil, &list); err != nil {
		return nil, fmt.Errorf("reading %s: %w", fwClusterRulesPath, err)
	}
	st := &ClusterFirewallState{Options: stringValues(opts)}
	for _, m := range list {
		r := stringValues(m)
		owned, comment := ParseOwned(r["comment"])
		if !owned {
			st.OtherRules++
			continue
		}
		r["comment"] = comment
		st.Rules = append(st.Rules, r)
	}
	return st, nil
}
