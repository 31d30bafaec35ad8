package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// The HA stack's configuration (pve-ha-manager). A guest's HA resource
// (spec.ha, /cluster/ha/resources, API2/HA/Resources.pm) belongs to the
// owned guest and is planned with it (planGuestHA), after its power: a
// power change of an HA-managed guest already goes through the HA stack
// (power.go), and the manifest's checks keep spec.state and spec.ha.state
// in agreement, so the two never fight. HA rules (API2/HA/Rules.pm) are a
// row of the collections table. Both are read with Sys.Audit on / and
// changed with Sys.Console on /.

const KindHARule = string(manifest.KindHARule)

// haPriv is the privilege every HA write needs (Resources.pm and Rules.pm
// create, update, delete: ['perm', '/', ['Sys.Console']]).
const haPriv = "Sys.Console"

// haResources lists the HA resources by sid, read once per plan (GET
// /cluster/ha/resources: only the keys set, read_resources_config).
func (pc *planContext) haResources() (map[string]collItem, error) {
	pc.haOnce.Do(func() {
		var list []map[string]any
		if err := pc.e.client.Get(pc.ctx, "cluster/ha/resources", nil, &list); err != nil {
			pc.haErr = fmt.Errorf("listing the HA resources: %w", err)
			if strings.Contains(err.Error(), "403") || strings.Contains(err.Error(), "ermission") {
				pc.haErr = fmt.Errorf("%w (reading needs Sys.Audit on /)", pc.haErr)
			}
			return
		}
		pc.haRes = map[string]collItem{}
		for _, m := range list {
			it := stringValues(m)
			pc.haRes[it["sid"]] = it
		}
	})
	return pc.haRes, pc.haErr
}

// joinHA notes that this plan adds a guest to the HA resources: a rule
// naming it is created after it, in the same pass.
func (pc *planContext) joinHA(sid string) {
	if pc.haJoining == nil {
		pc.haJoining = map[string]bool{}
	}
	pc.haJoining[sid] = true
}

// haField is one managed key of an HA resource: its Proxmox key, the
// manifest field, the wanted value and Proxmox's default for an unset
// key (read_and_check_resources_config).
type haField struct {
	key, field, want, def string
}

func haFields(h *manifest.GuestHA) []haField {
	num := func(p *int) string {
		if p == nil {
			return "1"
		}
		return strconv.Itoa(*p)
	}
	failback := "1"
	if h.Failback != nil && !*h.Failback {
		failback = "0"
	}
	return []haField{
		{"state", "state", h.WantedState(), "started"},
		{"max_restart", "maxRestart", num(h.MaxRestart), "1"},
		{"max_relocate", "maxRelocate", num(h.MaxRelocate), "1"},
		{"failback", "failback", failback, "1"},
		{"comment", "comment", strings.TrimSpace(h.Comment), ""},
	}
}

// haHave is a listed key in the form compared: the default when unset,
// enabled read as started (its backward-compatible name).
func haHave(it collItem, f haField) string {
	v, ok := it[f.key]
	if !ok || v == "" {
		return f.def
	}
	if f.key == "state" && v == "enabled" {
		return "started"
	}
	return v
}

// planGuestHA adds a guest's HA resource (spec.ha) to its action: added
// after a create, added, changed or removed (state absent) on an owned
// guest, after whatever else the action does. A guest proxmops does not
// own, and one without spec.ha, keep their HA resource as it is.
func planGuestHA(pc *planContext, a *Action, want *manifest.GuestHA, typ string) *Action {
	if want == nil || a.VMID <= 0 || a.Status != vocab.StatusSynced && a.Status != vocab.StatusOutOfSync {
		return a
	}
	sid := pve.HASID(typ, a.VMID)
	absent := want.WantedState() == manifest.HAAbsent
	if a.Action == vocab.ActionCreate {
		if absent {
			return a
		}
		var changes []vocab.Change
		params := pve.NewParams().Set("sid", sid)
		for _, f := range haFields(want) {
			if f.want != f.def {
				params.Set(f.key, f.want)
			}
			if f.want != "" {
				changes = append(changes, haChange(f, "", f.want))
			}
		}
		a.Changes = append(a.Changes, changes...)
		pc.joinHA(sid)
		return chainRun(a, collReq{method: "POST", path: "cluster/ha/resources", params: params})
	}
	g := pc.snap.Guests[a.VMID]
	if g == nil || !a.Owned || a.Refused() {
		return a
	}
	res, err := pc.haResources()
	if err != nil {
		a.Reason = joinReasons([]string{a.Reason, "spec.ha not compared: " + err.Error()})
		if a.Action == vocab.ActionNone {
			a.Status = vocab.StatusUnknown
		}
		return a
	}
	have, exists := res[sid]
	var changes []vocab.Change
	var op collReq
	switch {
	case absent && !exists:
		return a
	case absent:
		changes = []vocab.Change{{Field: "ha", Path: "spec.ha.state", From: haHave(have, haFields(want)[0]), To: manifest.HAAbsent}}
		op = collReq{method: "DELETE", path: "cluster/ha/resources/" + pve.PathEscape(sid)}
	case !exists:
		params := pve.NewParams().Set("sid", sid)
		for _, f := range haFields(want) {
			if f.want != f.def {
				params.Set(f.key, f.want)
			}
			changes = append(changes, haChange(f, "", f.want))
		}
		op = collReq{method: "POST", path: "cluster/ha/resources", params: params}
	default:
		params, del := pve.NewParams(), []string{}
		for _, f := range haFields(want) {
			if h := haHave(have, f); h != f.want {
				changes = append(changes, haChange(f, h, f.want))
				if f.want == "" {
					del = append(del, f.key)
				} else {
					params.Set(f.key, f.want)
				}
			}
		}
		if len(del) > 0 {
			params.Set("delete", strings.Join(del, ","))
		}
		// No digest: it is resources.cfg's, which other guests' HA changes
		// in the same apply and the HA stack's hastart and hastop rewrite.
		op = collReq{method: "PUT", path: "cluster/ha/resources/" + pve.PathEscape(sid), params: params}
	}
	if len(changes) == 0 {
		return a
	}
	a.Changes = append(a.Changes, changes...)
	why := "the HA resource " + sid + " differs from spec.ha"
	if !exists {
		why = "the guest is not an HA resource (spec.ha adds it as " + sid + ")"
	} else if absent {
		why = "spec.ha.state absent: " + sid + " leaves the HA resources"
	}
	a.guestChange(why, g.Node)
	if !exists {
		pc.joinHA(sid)
	}
	return chainRun(a, op)
}

func haChange(f haField, from, to string) vocab.Change {
	return vocab.Change{Field: "ha." + f.key, Path: "spec.ha." + f.field, From: from, To: to}
}

// chainRun runs op after the action's own step.
func chainRun(a *Action, op collReq) *Action {
	chainStep(a, func(ctx context.Context, x *execCtx) error {
		if err := op.do(ctx, x.e.client); err != nil {
			return fmt.Errorf("%s %s: %w", op.method, op.path, err)
		}
		return nil
	})
	return a
}

// guestHANeeds is what a change of a guest's HA resource asks.
func guestHANeeds(a *Action) []privNeed {
	for _, c := range a.Changes {
		if strings.HasPrefix(c.Path, "spec.ha.") {
			return []privNeed{needAll("change the guest's HA resource", "/", haPriv), needAll("read the HA resources", "/", "Sys.Audit")}
		}
	}
	return nil
}

// HARuleSpec is a desired HA rule; SIDs are its guests' HA resource ids,
// resolved when it is planned.
type HARuleSpec struct {
	Meta
	Type     string
	Guests   []string
	Nodes    string // node[:priority],... in Proxmox's read-back form
	Strict   bool
	Affinity string
	Disable  bool
	Comment  string
	SIDs     []string
}

func haRuleFromManifest(r *manifest.HARule, _ SecretReader) *HARuleSpec {
	s := r.Spec
	out := &HARuleSpec{Meta: metaOf(r), Type: s.Type, Guests: s.Guests, Strict: s.Strict, Affinity: s.Affinity,
		Disable: s.Enabled != nil && !*s.Enabled, Comment: strings.TrimSpace(s.Comment)}
	if s.Type == "node-affinity" {
		out.Nodes = manifest.HARuleNodes(s.Nodes)
	}
	return out
}

// declaredGuest finds the declared VM or container of a name: its kind,
// Proxmox type, VMID and spec.ha.
func declaredGuest(d *Desired, name string) (kind, typ string, vmid int, ha *manifest.GuestHA) {
	for _, s := range specsOf[*VMSpec](d, KindVirtualMachine) {
		if s.Name == name {
			return KindVirtualMachine, "qemu", s.VMID, s.HA
		}
	}
	for _, s := range specsOf[*ContainerSpec](d, KindContainer) {
		if s.Name == name {
			return KindContainer, "lxc", s.VMID, s.HA
		}
	}
	return "", "", 0, nil
}

// resolveHARule turns the rule's guests into HA resource ids. Proxmox
// takes only configured HA resources in a rule (Rules.pm
// $assert_valid_resources_param) on existing nodes
// ($assert_valid_nodes_param): a guest neither under HA nor given spec.ha,
// and a node not in the cluster, refuse the rule.
func resolveHARule(pc *planContext, sp Spec) (Spec, error) {
	s := *sp.(*HARuleSpec)
	s.SIDs = nil
	res, err := pc.haResources()
	if err != nil {
		return nil, err
	}
	for _, name := range s.Guests {
		kind, typ, vmid, ha := declaredGuest(pc.d, name)
		if kind == "" {
			return nil, fmt.Errorf("guest %q is not a declared VirtualMachine or Container", name)
		}
		sid := pve.HASID(typ, vmid)
		s.SIDs = append(s.SIDs, sid)
		_, configured := res[sid]
		switch {
		case ha != nil && ha.WantedState() == manifest.HAAbsent:
			return nil, fmt.Errorf("%s/%s (%s) has spec.ha.state absent: it leaves HA, and Proxmox takes no rule naming a guest outside HA", kind, name, sid)
		case !configured && ha == nil:
			return nil, fmt.Errorf("%s/%s (%s) is not an HA resource: Proxmox takes no rule naming a guest outside HA; give it spec.ha", kind, name, sid)
		}
	}
	sort.Strings(s.SIDs)
	for _, n := range strings.Split(s.Nodes, ",") {
		node, _, _ := strings.Cut(n, ":")
		if node != "" && len(pc.snap.Nodes) > 0 && !slices.Contains(pc.snap.Nodes, node) {
			return nil, fmt.Errorf("node %s is not in the cluster (nodes: %s): Proxmox takes no rule naming it", node, strings.Join(pc.snap.Nodes, ", "))
		}
	}
	return &s, nil
}

// haRuleHolds holds a rule this pass while a guest it names is not an HA
// resource and this plan does not add it.
func haRuleHolds(pc *planContext, sp Spec) *Wait {
	res, _ := pc.haResources()
	for _, name := range sp.(*HARuleSpec).Guests {
		kind, typ, vmid, _ := declaredGuest(pc.d, name)
		sid := pve.HASID(typ, vmid)
		if _, ok := res[sid]; !ok && !pc.haJoining[sid] {
			return &Wait{Key: vocab.Key(kind, name), Status: vocab.StatusOutOfSync}
		}
	}
	return nil
}

// haRuleParams are a rule's keys as create_rule and update_rule take them.
func haRuleParams(s *HARuleSpec, marked string) *pve.Params {
	p := pve.NewParams().Set("type", s.Type).Set("resources", strings.Join(s.SIDs, ",")).Set("comment", marked)
	if s.Type == "node-affinity" {
		p.Set("nodes", s.Nodes).Set("strict", boolParam(s.Strict))
	} else {
		p.Set("affinity", s.Affinity)
	}
	if s.Disable {
		p.Set("disable", "1")
	}
	return p
}

func boolParam(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// falseIfUnset compares a boolean read back without its default.
func falseIfUnset(have, want string) bool {
	if have == "" {
		have = "0"
	}
	return have == want || want == "" && have == "0"
}

var haRules = &collection{
	kind: KindHARule, noun: "HA rule", plural: "HA rules", list: "cluster/ha/rules", key: "rule",
	privPath: "/", read: "Sys.Audit", write: haPriv,
	resolve: resolveHARule, holds: haRuleHolds,
	fields: func(sp Spec) []collField {
		s := sp.(*HARuleSpec)
		out := []collField{
			// A rule's type is fixed: update_rule checks the keys against the
			// rule's own plugin.
			{key: "type", path: "spec.type", want: s.Type, replace: true},
			{key: "resources", path: "spec.guests", want: strings.Join(s.SIDs, ",")},
		}
		if s.Type == "node-affinity" {
			out = append(out, collField{key: "nodes", path: "spec.nodes", want: s.Nodes},
				collField{key: "strict", path: "spec.strict", want: boolParam(s.Strict), same: falseIfUnset})
		} else {
			out = append(out, collField{key: "affinity", path: "spec.affinity", want: s.Affinity})
		}
		want := ""
		if s.Disable {
			want = "1"
		}
		return append(out, collField{key: "disable", path: "spec.enabled", want: want, same: falseIfUnset})
	},
	comment: func(sp Spec) string { return sp.(*HARuleSpec).Comment },
	create: func(sp Spec, marked string) collReq {
		return collReq{method: "POST", path: "cluster/ha/rules", params: haRuleParams(sp.(*HARuleSpec), marked).Set("rule", sp.meta().Name)}
	},
	update: func(name string, sp Spec, marked string, _ collItem) collReq {
		// No digest: it is rules.cfg's, which any other rule's change in the
		// same apply alters; every managed key is sent.
		s := sp.(*HARuleSpec)
		p := haRuleParams(s, marked)
		if !s.Disable {
			// update_rule drops disable=0: enabling deletes the flag.
			p.Set("delete", "disable")
		}
		return collReq{method: "PUT", path: "cluster/ha/rules/" + pve.PathEscape(name), params: p}
	},
	remove: func(name string) collReq {
		return collReq{method: "DELETE", path: "cluster/ha/rules/" + pve.PathEscape(name)}
	},
	dependsOn: func(_ *Desired, sp Spec) []string {
		// The declared guests it places, in the rule's order.
		needs := sp.meta().needs(KindVirtualMachine, KindContainer)
		var out []string
		for _, g := range sp.(*HARuleSpec).Guests {
			for _, k := range needs {
				if _, name, _ := vocab.SplitKey(k); name == g {
					out = append(out, k)
				}
			}
		}
		return out
	},
}
