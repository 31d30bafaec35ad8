package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// The collection reconciler's plan: what the listing shows against each
// declared item, and the owned items no longer declared (collection.go
// has the rows).

// collectionReconciler plans one row's kind; one per plan.
type collectionReconciler struct {
	row      *collection
	items    []collItem
	err      error
	entries  map[string][]collItem // by the item's name as listed
	entryErr map[string]error
	owned    map[string]bool   // by the item's key as listed, with an owner
	kept     map[string]string // why an owned undeclared item stays (guard)
}

func (r *collectionReconciler) scope(pc *planContext, sc *scope) {
	specs := pc.d.Specs(r.row.kind)
	if len(specs) == 0 && !pc.e.opts.Prune {
		return
	}
	sc.read(func(ctx context.Context) error {
		var list []map[string]any
		if err := pc.e.client.Get(ctx, r.row.list, nil, &list); err != nil {
			r.err = fmt.Errorf("listing %s: %w", r.row.list, err)
			return nil
		}
		for _, m := range list {
			r.items = append(r.items, stringValues(m))
		}
		if err := r.readOwners(ctx, pc, specs); err != nil {
			r.err = err
			return nil
		}
		if r.row.entries == nil && r.row.rules == nil {
			return nil
		}
		r.entries, r.entryErr = map[string][]collItem{}, map[string]error{}
		for _, s := range specs {
			it := r.find(r.row.itemKey(s.meta().Name))
			if it == nil || s.meta().Sync == vocab.SyncDisabled {
				continue
			}
			name := it[r.row.key]
			key, seen := vocab.Key(r.row.kind, r.norm(name)), name+"\x00"+it["comment"]
			if cached, ok := pc.e.opts.Reads.cachedEntriesOf(key, seen); ok {
				r.entries[name] = cached
				continue
			}
			mark := pc.e.opts.Reads.entriesMark()
			var got []map[string]any
			if err := pc.e.client.Get(ctx, r.row.nestedPath(name), nil, &got); err != nil {
				r.entryErr[name] = err
				continue
			}
			list := []collItem{}
			for _, m := range got {
				list = append(list, stringValues(m))
			}
			r.entries[name] = list
			pc.e.opts.Reads.keepEntries(key, seen, list, mark)
		}
		return nil
	})
}

// readOwners reads the ownership records of the listed items (a row with
// an owner) and, for the owned ones prune would remove, why they must
// stay (a row with a guard).
func (r *collectionReconciler) readOwners(ctx context.Context, pc *planContext, specs []Spec) error {
	declared := map[string]bool{}
	for _, s := range specs {
		declared[r.norm(r.row.itemKey(s.meta().Name))] = true
	}
	r.owned, r.kept = map[string]bool{}, map[string]string{}
	for _, it := range r.items {
		key := it[r.row.key]
		owned := false
		if r.row.owner != nil {
			var err error
			if owned, err = r.row.owner.owned(ctx, pc.e.records, it); err != nil {
				return fmt.Errorf("reading the ownership record of %s %s: %w", r.row.noun, key, err)
			}
			r.owned[key] = owned
		} else {
			owned, _ = ParseOwned(it["comment"])
		}
		if owned && !declared[r.norm(key)] && pc.e.opts.Prune && r.row.guard != nil {
			r.kept[key] = r.row.guard(ctx, pc, it)
		}
	}
	return nil
}

// ownership says whether proxmops owns a listed item, and the item's
// comment without the mark.
func (r *collectionReconciler) ownership(it collItem) (bool, string) {
	if r.row.owner != nil {
		return r.owned[it[r.row.key]], ""
	}
	return ParseOwned(it["comment"])
}

// find returns the listed item of a name.
func (r *collectionReconciler) find(name string) collItem {
	for _, it := range r.items {
		if it[r.row.key] == name || (r.row.fold && strings.EqualFold(it[r.row.key], name)) {
			return it
		}
	}
	return nil
}

func (r *collectionReconciler) plan(pc *planContext) []*Action {
	var out []*Action
	declared := map[string]bool{}
	for _, s := range pc.d.Specs(r.row.kind) {
		declared[r.norm(r.row.itemKey(s.meta().Name))] = true
		out = append(out, r.planOne(pc, s))
	}
	if r.err != nil {
		return out
	}
	return append(out, r.prune(pc, declared)...)
}

func (r *collectionReconciler) norm(name string) string {
	if r.row.fold {
		return strings.ToLower(name)
	}
	return name
}

func (r *collectionReconciler) planOne(pc *planContext, s Spec) *Action {
	row := r.row
	a := baseAction(*s.meta(), "", 0)
	if syncDisabled(a) {
		return a
	}
	if r.err != nil {
		a.Status, a.Reason = vocab.StatusUnknown, fmt.Sprintf("could not read the %s: %v%s", row.plural, r.err, r.privHint(r.err))
		return a
	}
	if row.dependsOn != nil {
		a.DependsOn = append(a.DependsOn, row.dependsOn(pc.d, s)...)
	}
	if row.resolve != nil {
		rs, err := row.resolve(pc, s)
		if err != nil {
			a.refuse(err.Error())
			return a
		}
		s = rs
	}
	want := ""
	if row.comment != nil {
		want = row.comment(s)
	}
	if s.meta().Invalid != "" {
		a.refuse(s.meta().Invalid)
		return a
	}
	if row.holds != nil {
		a.Waiting = row.holds(pc, s)
	}
	it := r.find(row.itemKey(s.meta().Name))
	if it == nil {
		if old := r.adoptable(pc, s); old != nil {
			return r.planReplace(a, s, want, old)
		}
		return r.planCreate(a, s, want)
	}
	name := it[row.key]
	owned, comment := r.ownership(it)
	a.Owned = owned
	a.Observed = map[string]any{row.noun: map[string]string(it)}
	adopt := !owned && pc.adoptRequested(*s.meta())
	a.Adopt = adopt
	if !owned && !adopt {
		proof := fmt.Sprintf("no %q in its comment", OwnerMark)
		if row.owner != nil {
			proof = row.owner.what
		}
		return a.conflict(fmt.Sprintf("%s %s exists but proxmops does not own it (%s): left untouched; annotate the manifest proxmops.dev/adopt: \"true\" to take it over", row.noun, name, proof))
	}
	if row.fixed != nil {
		if fc := row.fixed(s, it); len(fc) > 0 {
			return r.planFixedChange(a, s, it, fc)
		}
	}
	changes, replace := r.fieldDiff(s, it, comment, want)
	fieldChanges := slices.Clone(changes)
	if adopt && row.owner == nil {
		changes = append(changes, vocab.Change{Field: OwnershipField, Path: "spec.comment", From: it["comment"], To: markOwned(want)})
	}
	if adopt && row.owner != nil {
		changes = append(changes, vocab.Change{Field: OwnershipField, Path: "metadata.annotations", To: "recorded in proxmops' store"})
		if row.secrets != nil {
			fieldChanges = append(fieldChanges, row.secrets(s)...)
			changes = append(changes, row.secrets(s)...)
		}
	}
	itemChanged := len(fieldChanges) > 0 || (adopt && row.owner == nil)
	if err := r.entryErr[name]; err != nil && (row.entries != nil || row.rules != nil) {
		a.Status, a.Reason = vocab.StatusUnknown, fmt.Sprintf("could not read the %s of %s %s: %v%s", r.nestedNoun(), row.noun, name, err, r.privHint(err))
		return a
	}
	if key, list := r.observedNested(name); key != "" {
		a.Observed[key] = list
	}
	nested, ops, rules := r.nestedDiff(s, name)
	changes = append(changes, nested...)
	if len(changes) == 0 {
		a.Status, a.Reason = vocab.StatusSynced, "in sync"
		return a
	}
	a.Action, a.Status, a.Changes = vocab.ActionUpdate, vocab.StatusOutOfSync, changes
	a.Reason = r.updateReason(changes, name, adopt)
	switch {
	case replace:
		a.Reason += fmt.Sprintf(" (Proxmox cannot change it in place: %s %s is deleted and created again)", row.noun, name)
		ops = append([]collReq{row.remove(name), row.create(s, markOwned(want))}, ops...)
	case itemChanged:
		op := collReq{}
		if row.patch != nil {
			op = row.patch(name, s, fieldChanges, it["digest"])
		} else {
			op = row.update(name, s, markOwned(want), it)
		}
		ops = append([]collReq{op}, ops...)
	}
	if rules != nil {
		ops = append(ops, collReq{rules: rules})
	}
	a.run = r.runAndRecord(a.Key(), ops, s, adopt)
	return a
}

// fieldDiff compares an item's managed fields and comment with the
// spec's; replace is true when a changed field cannot change in place.
func (r *collectionReconciler) fieldDiff(s Spec, it collItem, comment, want string) (changes []vocab.Change, replace bool) {
	for _, f := range r.row.fields(s) {
		same := f.same
		if same == nil {
			same = func(a, b string) bool { return a == b }
		}
		if !same(it[f.key], f.want) {
			changes = append(changes, vocab.Change{Field: f.key, Path: f.path, From: it[f.key], To: f.want})
			replace = replace || f.replace
		}
	}
	if r.row.comment != nil && comment != want {
		changes = append(changes, vocab.Change{Field: "comment", Path: "spec.comment", From: comment, To: want})
	}
	return changes, replace
}

// nestedDiff compares an item's nested entries (a set: the requests that
// change them) or rules (an ordered list: its plan) with the spec's.
func (r *collectionReconciler) nestedDiff(s Spec, name string) (changes []vocab.Change, ops []collReq, rules *rulePlan) {
	if r.row.entries != nil {
		changes, ops = r.entryDiff(s, name, r.entries[name])
	}
	if r.row.rules != nil {
		var rc []vocab.Change
		rc, rules = r.ruleList(name).diffRules(r.entries[name], r.row.rules.want(s))
		changes = append(changes, rc...)
	}
	return changes, ops, rules
}

// updateReason says which fields differ, and how an adoption proves the
// item proxmops' from now on.
func (r *collectionReconciler) updateReason(changes []vocab.Change, name string, adopt bool) string {
	reason := fieldNames(changes, ", ") + " differ from the manifest"
	switch {
	case adopt && r.row.owner != nil:
		return fmt.Sprintf("adopting %s %s proxmops did not make: records it in proxmops' store; %s", r.row.noun, name, reason)
	case adopt:
		return fmt.Sprintf("adopting %s %s proxmops did not make: marks its comment %q; %s", r.row.noun, name, OwnerMark, reason)
	}
	return reason
}

// planFixedChange plans a change of fields fixed at creation: refused
// unless the manifest allows the replacement, then the item is removed
// and made again with what the manifest declares.
func (r *collectionReconciler) planFixedChange(a *Action, s Spec, it collItem, fixed []vocab.Change) *Action {
	row := r.row
	name := it[row.key]
	fields := fieldNames(fixed, ", ")
	a.Changes = fixed
	if row.replace == nil || !row.replace(s) {
		a.Action = vocab.ActionUpdate
		a.refuse(fmt.Sprintf("%s of %s %s differ from the manifest, and Proxmox fixes them at creation: changing them replaces the %s (its definition removed and made again; what is on the old one is not moved); annotate the manifest %s: \"true\" to allow it",
			fields, row.noun, name, row.noun, manifest.AnnotationReplace))
		return a
	}
	a.Action, a.Status = vocab.ActionUpdate, vocab.StatusOutOfSync
	a.Reason = fmt.Sprintf("%s of %s %s are fixed at creation: replacing it (annotation %s; what is on the old one is not moved)", fields, row.noun, name, manifest.AnnotationReplace)
	if row.secrets != nil {
		a.Changes = append(a.Changes, row.secrets(s)...)
	}
	// Recorded after: the record names the new fixed fields, and the old
	// item stays proxmops' should its removal fail.
	a.run = r.runAndRecord(a.Key(), []collReq{row.remove(name), row.create(s, "")}, s, true)
	return a
}

// adoptable returns the unowned item an adopting manifest takes over
// under a new key (the row's adoptKey), or nil.
func (r *collectionReconciler) adoptable(pc *planContext, s Spec) collItem {
	if r.row.adoptKey == nil || !pc.adoptRequested(*s.meta()) {
		return nil
	}
	old := r.find(r.row.adoptKey(s.meta().Name))
	if old == nil {
		return nil
	}
	if owned, _ := r.ownership(old); owned {
		return nil
	}
	return old
}

// planReplace takes over an item made by hand whose key proxmops cannot
// give it: the item is made under proxmops' key with the manifest's
// values, then the old one is removed (the manifest's adoption names it).
func (r *collectionReconciler) planReplace(a *Action, s Spec, want string, old collItem) *Action {
	row := r.row
	from, to := old[row.key], row.itemKey(s.meta().Name)
	a.Adopt = true
	a.Observed = map[string]any{row.noun: map[string]string(old)}
	r.planCreate(a, s, want)
	a.Reason = fmt.Sprintf("adopting %s %s proxmops did not make: Proxmox cannot rename it, so it is made again as %s with the manifest's settings and %s is removed", row.noun, from, to, from)
	a.Changes = append([]vocab.Change{{Field: row.key, Path: "metadata.name", From: from, To: to}}, a.Changes...)
	create, remove := row.create(s, markOwned(want)), row.remove(from)
	a.run = func(ctx context.Context, x *execCtx) error {
		return runOps(ctx, x, a.Key(), []collReq{create, remove})
	}
	return a
}

// ruleList is an item's rule list.
func (r *collectionReconciler) ruleList(name string) ruleList {
	return ruleList{path: r.row.rules.path(name), field: r.row.rules.field}
}

// observedNested is an item's nested list as the cluster has it, in the
// manifest's form and order (a security group's rules, an IP set's
// entries), for the detail beside the item's own values: its key in the
// manifest's spec and the list; "" for an item without one.
func (r *collectionReconciler) observedNested(name string) (string, any) {
	listed := r.entries[name]
	switch {
	case r.row.rules != nil:
		rules := make([]manifest.FirewallRule, 0, len(listed))
		for _, f := range listed {
			rules = append(rules, RuleAsDeclared(f))
		}
		return "rules", rules
	case r.row.entries != nil:
		entries := make([]map[string]string, 0, len(listed))
		for _, f := range listed {
			e := map[string]string{r.row.entries.key: f[r.row.entries.key]}
			for _, k := range r.row.entries.fields {
				if v := f[k]; v != "" {
					e[k] = v
				}
			}
			entries = append(entries, e)
		}
		return "entries", entries
	}
	return "", nil
}

func (r *collectionReconciler) nestedNoun() string {
	if r.row.rules != nil {
		return "rules"
	}
	return "entries"
}

func (r *collectionReconciler) planCreate(a *Action, s Spec, want string) *Action {
	row := r.row
	a.Action, a.Status = vocab.ActionCreate, vocab.StatusOutOfSync
	a.Reason = fmt.Sprintf("%s %s does not exist", row.noun, s.meta().Name)
	for _, f := range row.fields(s) {
		if f.want != "" {
			a.Changes = append(a.Changes, vocab.Change{Field: f.key, Path: f.path, To: f.want})
		}
	}
	if want != "" {
		a.Changes = append(a.Changes, vocab.Change{Field: "comment", Path: "spec.comment", To: want})
	}
	if row.secrets != nil {
		a.Changes = append(a.Changes, row.secrets(s)...)
	}
	marked := ""
	if row.comment != nil {
		marked = markOwned(want)
	}
	ops := []collReq{row.create(s, marked)}
	if row.entries != nil {
		ec, add := r.entryDiff(s, s.meta().Name, nil)
		a.Changes, ops = append(a.Changes, ec...), append(ops, add...)
	}
	var rules *rulePlan
	if row.rules != nil {
		var rc []vocab.Change
		rc, rules = r.ruleList(s.meta().Name).diffRules(nil, row.rules.want(s))
		a.Changes = append(a.Changes, rc...)
	}
	if rules != nil {
		ops = append(ops, collReq{rules: rules})
	}
	a.run = r.runCreating(a.Key(), ops, s)
	return a
}

// entryDiff compares an item's entries as a set keyed by the key field:
// the changes, and the requests that make the listed entries the wanted
// ones (removals first, then updates, then additions).
func (r *collectionReconciler) entryDiff(s Spec, name string, have []collItem) ([]vocab.Change, []collReq) {
	en := r.row.entries
	base := en.path(name)
	at := func(key string) string { return base + "/" + pve.PathEscape(key) }
	wanted := map[string]collEntry{}
	for _, w := range en.want(s) {
		wanted[w.key] = w
	}
	listed := map[string]collItem{}
	for _, h := range have {
		listed[h[en.key]] = h
	}
	label := func(key string) string { return "entries[" + key + "]" }
	var changes []vocab.Change
	var removes, updates, adds []collReq
	for _, h := range have {
		k := h[en.key]
		if _, ok := wanted[k]; !ok {
			changes = append(changes, vocab.Change{Field: label(k), Path: "spec.entries", From: describeEntry(en, h)})
			removes = append(removes, collReq{method: "DELETE", path: at(k)})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(wanted)) {
		w := wanted[k]
		p := pve.NewParams()
		for _, f := range en.fields {
			if v := w.values[f]; v != "" {
				p.Set(f, v)
			}
		}
		h, ok := listed[k]
		if !ok {
			changes = append(changes, vocab.Change{Field: label(k), Path: w.path, To: describeEntry(en, collItem(w.values))})
			adds = append(adds, collReq{method: "POST", path: base, params: p.Set(en.key, k)})
			continue
		}
		differs := false
		for _, f := range en.fields {
			if h[f] != w.values[f] {
				differs = true
				changes = append(changes, vocab.Change{Field: label(k) + "." + f, Path: w.path + "." + f, From: h[f], To: w.values[f]})
			}
		}
		if differs {
			updates = append(updates, collReq{method: "PUT", path: at(k), params: p})
		}
	}
	return changes, append(append(removes, updates...), adds...)
}

// describeEntry shows an entry's fields: "nomatch=1 comment=laptop".
func describeEntry(en *collEntries, e collItem) string {
	parts := []string{}
	for _, f := range en.fields {
		if v := e[f]; v != "" {
			parts = append(parts, f+"="+v)
		}
	}
	if len(parts) == 0 {
		return "present"
	}
	return strings.Join(parts, " ")
}

// prune plans the deletion of owned items no manifest declares.
func (r *collectionReconciler) prune(pc *planContext, declared map[string]bool) []*Action {
	var out []*Action
	for _, it := range r.items {
		key := it[r.row.key]
		owned, _ := r.ownership(it)
		name, ours := r.row.declaredName(key)
		if !owned || !ours || declared[r.norm(key)] {
			continue
		}
		a := orphan(r.row.kind, r.norm(name), "", 0, map[string]any{r.row.noun: map[string]string(it)})
		out = append(out, a)
		if decidePrune(pc, a, ownedWhy(fmt.Sprintf("%s %s is owned by proxmops", r.row.noun, key)), r.kept[key], vocab.Change{Field: r.row.key, From: key}) {
			op := r.row.remove(key)
			a.run = func(ctx context.Context, x *execCtx) error {
				if r.row.rules != nil {
					if err := r.emptyRules(ctx, x, key); err != nil {
						return err
					}
				}
				if err := runOps(ctx, x, a.Key(), []collReq{op}); err != nil {
					return err
				}
				if r.row.owner != nil {
					return r.row.owner.forget(ctx, x.e.records, key)
				}
				return nil
			}
		}
	}
	return out
}

// privHint names the privilege a refused read lacked.
func (r *collectionReconciler) privHint(err error) string {
	if err != nil && (strings.Contains(err.Error(), "403") || strings.Contains(err.Error(), "permission")) && !strings.Contains(err.Error(), r.row.read) {
		return fmt.Sprintf(" (reading needs %s on %s)", r.row.read, r.row.privPath)
	}
	return ""
}
