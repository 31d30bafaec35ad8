package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// A cluster-wide collection (firewall aliases, IP sets, ...) is planned by
// one generic reconciler fed by a row of the collections table
// (firewall.go holds the firewall rows). The whole collection is listed
// with one request per pass, plus one per declared item with nested
// entries (an IP set's addresses). An item is proxmops' when its comment
// carries the ownership mark (markOwned, as interfaces do): the user's
// comment text is kept beside it; an unmarked item under a declared name
// is a Conflict unless adopted, and an unmarked item is never pruned.

// collection is one row of the collections table.
type collection struct {
	kind   string
	noun   string // "alias", "IP set": for reasons
	plural string
	list   string // GET: the whole collection
	key    string // the item's name in the listing
	// fold: names compared in lower case (Proxmox's aliases).
	fold bool
	// fields are the managed fields besides the comment, with their
	// wanted values in Proxmox's read-back form.
	fields  func(Spec) []collField
	comment func(Spec) string
	// create, update (with the marked comment and every managed field,
	// given the item as listed) and remove are the item's requests.
	create func(s Spec, marked string) collReq
	update func(name string, s Spec, marked string, have collItem) collReq
	remove func(name string) collReq
	// id and nameOf map a declared name to the item's key and back, for
	// a collection whose keys proxmops chooses (a backup job's
	// "proxmops-<name>"); nameOf's false is a key proxmops never gives,
	// whose item is never pruned. Nil: the key is the name.
	id     func(name string) string
	nameOf func(key string) (string, bool)
	// adoptKey, when set, is the key of the item an adopting manifest
	// takes over when none is at id(name) (a key Proxmox cannot change):
	// the item is made again under id(name) and the old one removed.
	adoptKey func(name string) string
	// resolve, when set, completes a spec from the plan (a backup job's
	// guests as VMIDs); its error refuses the item's action.
	resolve func(pc *planContext, s Spec) (Spec, error)
	// needs adds the privileges a change of an item needs besides write.
	needs func(a *Action, s Spec) []privNeed
	// entries is the item's nested list, nil when it has none; rules is
	// its ordered rule list instead (compared by position).
	entries *collEntries
	rules   *collRules
	// dependsOn names the actions an item's creation waits for.
	dependsOn func(d *Desired, s Spec) []string
	// holds, when set, is what a resolved item waits for this pass (an HA
	// rule's guest not yet an HA resource, which this plan does not add);
	// nil when it is ready.
	holds func(pc *planContext, s Spec) *Wait
	// read and write are the privileges the listing and the changes need
	// (Proxmox's schema: Sys.Audit and Sys.Modify on / for the firewall).
	privPath    string
	read, write string

	// What a kind whose items carry no comment (storage definitions)
	// needs instead. owner, when set, proves ownership in place of the
	// mark (comment is then nil). patch, when set, replaces update: the
	// request that makes the item what the changes ask. fixed lists the
	// changes Proxmox refuses on update (fields fixed at creation): a
	// replacement, removal then creation, when replace allows it, refused
	// otherwise. guard reads why an owned item must stay ("" when it may
	// go), asked before a prune. secrets are the changes shown for what a
	// creation or adoption sends and Proxmox never returns (a password):
	// named, never with their value.
	owner   *collOwner
	patch   func(name string, s Spec, changes []vocab.Change, digest string) collReq
	fixed   func(s Spec, it collItem) []vocab.Change
	replace func(s Spec) bool
	guard   func(ctx context.Context, pc *planContext, it collItem) string
	secrets func(s Spec) []vocab.Change
}

// collOwner proves and records the ownership of a collection's items that
// carry no comment: the record is kept in Records (proxmops' store) when
// proxmops creates or adopts an item, and forgotten when it removes it.
type collOwner struct {
	// what says where the proof is, for reasons.
	what   string
	owned  func(ctx context.Context, rec Records, it collItem) (bool, error)
	record func(ctx context.Context, rec Records, s Spec) error
	forget func(ctx context.Context, rec Records, name string) error
}

// collField is one managed field: the Proxmox key, the manifest path and
// the wanted value ("" when unset), compared by same (nil: equal strings).
type collField struct {
	key, path, want string
	same            func(have, want string) bool
	// replace: Proxmox cannot change the field; a change deletes the item
	// and creates it again.
	replace bool
}

// collReq is one request to the API.
type collReq struct {
	method, path string
	params       *pve.Params
	// rules, when set, is an ordered rule list brought to the wanted one
	// (firewall_rules.go) instead of a single request.
	rules *rulePlan
}

func (q collReq) do(ctx context.Context, c *pve.Client) error {
	switch q.method {
	case "POST":
		return c.Post(ctx, q.path, q.params, nil)
	case "PUT":
		return c.Put(ctx, q.path, q.params, nil)
	case "DELETE":
		return c.Delete(ctx, q.path, q.params, nil)
	}
	return fmt.Errorf("unknown method %s", q.method)
}

// collEntries describes an item's nested entries, a list keyed by one
// field and compared as a set: GET path lists them, POST path adds one,
// PUT and DELETE path/{key} change and remove one.
type collEntries struct {
	path   func(name string) string
	key    string
	fields []string // compared besides the key
	want   func(Spec) []collEntry
}

// collRules describes an item's ordered firewall rule list (a security
// group's): GET path lists it; firewall_rules.go compares and changes it.
type collRules struct {
	path  func(name string) string
	field string // the manifest path of the rules
	want  func(Spec) []manifest.FirewallRule
	// users names what still applies the item (rules elsewhere naming
	// it), read before it is removed: it is not removed while any does.
	users func(ctx context.Context, c *pve.Client, name string) ([]string, error)
}

// nestedPath is the API path of an item's nested list, "" when it has none.
func (c *collection) nestedPath(name string) string {
	switch {
	case c.entries != nil:
		return c.entries.path(name)
	case c.rules != nil:
		return c.rules.path(name)
	}
	return ""
}

// collEntry is one wanted entry: its key, its fields in read-back form,
// and its manifest path.
type collEntry struct {
	key    string
	values map[string]string
	path   string
}

// collItem is one listed item, its values as strings.
type collItem map[string]string

func stringValues(in map[string]any) collItem {
	out := collItem{}
	for k, v := range in {
		switch x := v.(type) {
		case string:
			out[k] = x
		case float64:
			out[k] = fmt.Sprint(int64(x))
		case map[string]any:
			// A property string read back as an object (a backup job's
			// prune-backups): written again as one, keys sorted.
			parts := make([]string, 0, len(x))
			for _, pk := range sortedKeysOf(x) {
				if pv := stringValues(map[string]any{pk: x[pk]})[pk]; pv != "" {
					parts = append(parts, pk+"="+pv)
				}
			}
			out[k] = strings.Join(parts, ",")
		case nil:
		default:
			out[k] = fmt.Sprint(x)
		}
	}
	return out
}

func sortedKeysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// itemKey is the key of a declared name's item.
func (c *collection) itemKey(name string) string {
	if c.id != nil {
		return c.id(name)
	}
	return name
}

// declaredName is the declared name of an item's key; false for a key
// proxmops never gives.
func (c *collection) declaredName(key string) (string, bool) {
	if c.nameOf != nil {
		return c.nameOf(key)
	}
	return key, true
}

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
			key, seen := r.row.kind+"/"+r.norm(name), name+"\x00"+it["comment"]
			if cached, ok := pc.e.opts.Reads.cachedEntriesOf(key, seen); ok {
				r.entries[name] = cached
				continue
			}
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
			pc.e.opts.Reads.keepEntries(key, seen, list)
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
		a.Status, a.Reason = vocab.StatusFailed, s.meta().Invalid
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
	fields := make([]string, 0, len(changes))
	for _, c := range changes {
		fields = append(fields, c.Field)
	}
	reason := fmt.Sprintf("%s differ from the manifest", strings.Join(fields, ", "))
	switch {
	case adopt && r.row.owner != nil:
		return fmt.Sprintf("adopting %s %s proxmops did not make: records it in proxmops' store; %s", r.row.noun, name, reason)
	case adopt:
		return fmt.Sprintf("adopting %s %s proxmops did not make: marks its comment %q; %s", r.row.noun, name, OwnerMark, reason)
	}
	return reason
}

// runAndRecord sends ops, then records the item as proxmops' when record
// is set and the row keeps ownership records.
func (r *collectionReconciler) runAndRecord(key string, ops []collReq, s Spec, record bool) func(context.Context, *execCtx) error {
	return func(ctx context.Context, x *execCtx) error {
		if err := runOps(ctx, x, key, ops); err != nil {
			return err
		}
		if record && r.row.owner != nil {
			if err := r.row.owner.record(ctx, x.e.records, s); err != nil {
				return fmt.Errorf("recording %s %s as proxmops': %w", r.row.noun, s.meta().Name, err)
			}
		}
		return nil
	}
}

// runCreating sends the requests that make an item, recording it as
// proxmops' first when the row keeps ownership records: a creation whose
// answer was lost (it may have happened) leaves the item proxmops', not a
// Conflict of its own making. A refusal Proxmox answered (nothing made)
// forgets the record again.
func (r *collectionReconciler) runCreating(key string, ops []collReq, s Spec) func(context.Context, *execCtx) error {
	if r.row.owner == nil {
		return r.runAndRecord(key, ops, s, false)
	}
	return func(ctx context.Context, x *execCtx) error {
		if err := r.row.owner.record(ctx, x.e.records, s); err != nil {
			return fmt.Errorf("recording %s %s as proxmops': %w", r.row.noun, s.meta().Name, err)
		}
		err := runOps(ctx, x, key, ops)
		var apiErr *pve.APIError
		var paramErr *pve.ParamError
		var permErr *pve.PermissionError
		if errors.As(err, &apiErr) || errors.As(err, &paramErr) || errors.As(err, &permErr) {
			if ferr := r.row.owner.forget(ctx, x.e.records, s.meta().Name); ferr != nil {
				return fmt.Errorf("%w (and forgetting the record: %v)", err, ferr)
			}
		}
		return err
	}
}

// planFixedChange plans a change of fields fixed at creation: refused
// unless the manifest allows the replacement, then the item is removed
// and made again with what the manifest declares.
func (r *collectionReconciler) planFixedChange(a *Action, s Spec, it collItem, fixed []vocab.Change) *Action {
	row := r.row
	name := it[row.key]
	fields := make([]string, 0, len(fixed))
	for _, c := range fixed {
		fields = append(fields, c.Field)
	}
	a.Changes = fixed
	if row.replace == nil || !row.replace(s) {
		a.Action = vocab.ActionUpdate
		a.refuse(fmt.Sprintf("%s of %s %s differ from the manifest, and Proxmox fixes them at creation: changing them replaces the %s (its definition removed and made again; what is on the old one is not moved); annotate the manifest %s: \"true\" to allow it",
			strings.Join(fields, ", "), row.noun, name, row.noun, manifest.AnnotationReplace))
		return a
	}
	a.Action, a.Status = vocab.ActionUpdate, vocab.StatusOutOfSync
	a.Reason = fmt.Sprintf("%s of %s %s are fixed at creation: replacing it (annotation %s; what is on the old one is not moved)", strings.Join(fields, ", "), row.noun, name, manifest.AnnotationReplace)
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

func (r *collectionReconciler) nestedNoun() string {
	if r.row.rules != nil {
		return "rules"
	}
	return "entries"
}

// runOps sends an action's requests in order, then makes its rule list
// the wanted one (rules may be nil); the item's cached entries are
// forgotten first, whatever the outcome.
func runOps(ctx context.Context, x *execCtx, key string, ops []collReq) error {
	x.e.opts.Reads.forgetEntries(key)
	for _, op := range ops {
		if op.rules != nil {
			if err := op.rules.apply(ctx, x.e.client); err != nil {
				return err
			}
			continue
		}
		if err := op.do(ctx, x.e.client); err != nil {
			return fmt.Errorf("%s %s: %w", op.method, op.path, err)
		}
	}
	return nil
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
	keys := make([]string, 0, len(wanted))
	for k := range wanted {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
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

// emptyRules readies an item with a rule list for its removal: refused
// while rules elsewhere still apply it (Proxmox would remove it and leave
// them applying nothing), then its rules are removed (Proxmox removes
// only an empty one).
func (r *collectionReconciler) emptyRules(ctx context.Context, x *execCtx, name string) error {
	if r.row.rules.users != nil {
		users, err := r.row.rules.users(ctx, x.e.client, name)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			return fmt.Errorf("%s %s is still applied by %s: remove those rules first; it is left as it is", r.row.noun, name, strings.Join(users, ", "))
		}
	}
	l := r.ruleList(name)
	var got []map[string]any
	if err := x.e.client.Get(ctx, l.path, nil, &got); err != nil {
		return fmt.Errorf("reading %s: %w", l.path, err)
	}
	var have []collItem
	for _, m := range got {
		have = append(have, stringValues(m))
	}
	if _, p := l.diffRules(have, nil); p != nil {
		return p.apply(ctx, x.e.client)
	}
	return nil
}

// privHint names the privilege a refused read lacked.
func (r *collectionReconciler) privHint(err error) string {
	if err != nil && (strings.Contains(err.Error(), "403") || strings.Contains(err.Error(), "permission")) && !strings.Contains(err.Error(), r.row.read) {
		return fmt.Sprintf(" (reading needs %s on %s)", r.row.read, r.row.privPath)
	}
	return ""
}

// collectionRow makes a collection's registry row.
func collectionRow(c *collection, desired func(manifest.Resource, SecretReader) Spec) kindRow {
	return kindRow{kind: c.kind, desired: desired, reconciler: func() reconciler { return &collectionReconciler{row: c} },
		needs: func(_ *privContext, a *Action, s Spec) []privNeed {
			out := []privNeed{needAll("change the cluster's "+c.plural, c.privPath, c.write)}
			if c.needs != nil {
				out = append(out, c.needs(a, s)...)
			}
			return out
		}}
}

// OwnershipField names the change an adoption makes to a collection
// item's comment: the ownership mark.
const OwnershipField = "comment (ownership)"

// collections is the table: one row per cluster-wide collection.
var collections = []*collection{firewallAliases, firewallIPSets, firewallGroups, backupJobs, storages, haRules}

// CollectionItem is one item of a collection as Proxmox lists it, for
// export: its name, whether proxmops owns it, its comment without the
// mark, its values and its entries or rules (in Proxmox's order).
type CollectionItem struct {
	Name    string
	Owned   bool
	Comment string
	Values  map[string]string
	Entries []map[string]string
}

// IsCollection reports whether kind is one of the collections' kinds.
func IsCollection(kind string) bool {
	for _, c := range collections {
		if c.kind == kind {
			return true
		}
	}
	return false
}

// ReadCollection lists every item of a collection kind, with its entries
// (one request for the list, one per item with entries).
func (e *Engine) ReadCollection(ctx context.Context, kind string) ([]CollectionItem, error) {
	var row *collection
	for _, c := range collections {
		if c.kind == kind {
			row = c
		}
	}
	if row == nil {
		return nil, fmt.Errorf("%s is not a collection kind", kind)
	}
	var list []map[string]any
	if err := e.client.Get(ctx, row.list, nil, &list); err != nil {
		return nil, fmt.Errorf("listing %s: %w", row.list, err)
	}
	out := make([]CollectionItem, 0, len(list))
	for _, m := range list {
		it := stringValues(m)
		owned, comment := ParseOwned(it["comment"])
		if row.owner != nil {
			var err error
			if owned, err = row.owner.owned(ctx, e.records, it); err != nil {
				return nil, fmt.Errorf("reading the ownership record of %s %s: %w", row.noun, it[row.key], err)
			}
			comment = ""
		}
		ci := CollectionItem{Name: it[row.key], Owned: owned, Comment: comment, Values: it}
		if name, ours := row.declaredName(ci.Name); ours {
			ci.Name = name
		} else {
			ci.Owned = false
		}
		if path := row.nestedPath(it[row.key]); path != "" {
			var got []map[string]any
			if err := e.client.Get(ctx, path, nil, &got); err != nil {
				return nil, fmt.Errorf("reading the entries of %s %s: %w", row.noun, ci.Name, err)
			}
			for _, en := range got {
				ci.Entries = append(ci.Entries, stringValues(en))
			}
		}
		out = append(out, ci)
	}
	return out, nil
}

// cachedEntries are an item's entries as last read, with what the listing
// showed of the item then (its name and comment).
type cachedEntries struct {
	seen    string
	readAt  time.Time
	entries []collItem
}

// cachedEntriesOf returns an item's entries when the cache holds them,
// the listing shows the item as it did then, and they were read within
// the drift-check period: Proxmox's listing of IP sets carries no sign of
// a change of their entries (its digest covers names and comments), so a
// change made by hand is found at the cadence guests' configurations are.
func (c *ReadCache) cachedEntriesOf(key, seen string) ([]collItem, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ce := c.entries[key]
	if ce == nil || ce.seen != seen || c.now().Sub(ce.readAt) >= c.every {
		return nil, false
	}
	return ce.entries, true
}

func (c *ReadCache) keepEntries(key, seen string, entries []collItem) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*cachedEntries{}
	}
	c.entries[key] = &cachedEntries{seen: seen, readAt: c.now(), entries: entries}
}

// forgetEntries makes the next plan read an item's entries (after
// proxmops changed them).
func (c *ReadCache) forgetEntries(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.entries, key)
	c.mu.Unlock()
}
