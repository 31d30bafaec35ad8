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
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// sdnReconciler manages SDN zones, vnets and their subnets under
// /cluster/sdn. Changes are written to the pending SDN configuration and
// applied with PUT /cluster/sdn once per Apply call, after all of them: the
// SDN actions of a pass run one after the other (zones, vnets with their
// subnets, then deletions zone by zone) and the last one of the call
// applies, so an action the daemon runs alone applies its own change. A
// pending change of proxmops (an apply that failed or was interrupted) is
// applied by the next pass: such objects wait for the pass's apply, or one
// of them carries it when nothing else is to be written.
//
// Ownership: a vnet is owned when its alias carries the ownership mark; its
// subnets are owned with it (Proxmox gives subnets no comment field). Zones
// have no free-text field at all: a zone counts as proxmops' when it holds
// at least one vnet and every vnet in it is owned. A declared zone that
// exists and matches the manifest is in sync whoever made it; one that
// differs is changed only when proxmops owns it, else it is a Conflict.
type sdnReconciler struct{}

func (sdnReconciler) scope(pc *planContext, sc *scope) {
	for _, z := range specsOf[*SdnZoneSpec](pc.d, KindSdnZone) {
		if z.Sync != vocab.SyncDisabled {
			sc.kinds.sdn = true
		}
	}
	for _, v := range specsOf[*SdnVnetSpec](pc.d, KindSdnVnet) {
		if v.Sync != vocab.SyncDisabled {
			sc.kinds.sdn = true
			sc.kinds.sdnVnets[v.Name] = true
		}
	}
	if pc.e.opts.Prune {
		sc.kinds.sdn = true
	}
}

// sdnState is the SDN configuration read this pass, indexed.
type sdnState struct {
	zones   map[string]pve.SDNEntry
	vnets   map[string]pve.SDNEntry
	subnets map[string][]pve.SDNEntry
}

// exists reports whether an entry is in the configuration (not only in the
// running one with its deletion pending).
func exists(e pve.SDNEntry, ok bool) bool { return ok && e.State != "deleted" }

func VnetZone(v pve.SDNEntry) string {
	if z := v.Config["zone"]; z != "" {
		return z
	}
	return v.Running["zone"]
}

// zoneOwned reports whether a zone holds vnets and all of them are owned.
func (st *sdnState) zoneOwned(zone string) (owned bool, vnets []string) {
	owned = true
	for _, id := range slices.Sorted(maps.Keys(st.vnets)) {
		v := st.vnets[id]
		if VnetZone(v) != zone {
			continue
		}
		// A vnet whose deletion is pending still tells who made the zone
		// (its alias is in the running configuration), until applied.
		vnets = append(vnets, id)
		if o, _ := ParseOwned(VnetAlias(v)); !o {
			owned = false
		}
	}
	return owned && len(vnets) > 0, vnets
}

// listKeys are zone options holding lists, compared as sets.
var listKeys = map[string]bool{"peers": true, "nodes": true, "exitnodes": true, "rt-import": true}

func sameSDNValue(key, have, want string) bool {
	switch {
	case listKeys[key]:
		return pvefields.NormalList(have) == pvefields.NormalList(want)
	case key == "dhcp-range":
		return pvefields.NormalRanges(have) == pvefields.NormalRanges(want)
	}
	return have == want
}

// optionChanges compares desired options with an object's configuration.
// boolKeys are managed even when not declared (absent means off).
func optionChanges(prefix string, want map[string]string, have map[string]string, managed []string) ([]vocab.Change, *pve.Params, []string) {
	p := pve.NewParams()
	var del []string
	var out []vocab.Change
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for _, k := range managed {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		w, declared := want[k]
		h := have[k]
		if !declared {
			if h != "" && h != "0" {
				out = append(out, vocab.Change{Field: prefix + k, From: h})
				del = append(del, k)
			}
			continue
		}
		if !sameSDNValue(k, h, w) {
			out = append(out, vocab.Change{Field: prefix + k, From: h, To: w})
			if k == "dhcp-range" {
				p.SetList(k, strings.Split(w, "\n"))
			} else {
				p.Set(k, w)
			}
		}
	}
	return out, p, del
}

// sdnStep is one staged SDN change, run in the pass's SDN sequence.
type sdnStep func(ctx context.Context, x *execCtx) error

// sdnApplier is the key of the action that applies the SDN configuration
// when p is applied: the last runnable action of the SDN sequence among
// p's actions. Whether the whole plan is applied or one action alone (the
// daemon hands actions to its dispatcher one by one, via Plan.Only), the
// SDN changes written by the call are applied once, by the last of them.
func sdnApplier(p *Plan) string {
	key, seq := "", 0
	for _, a := range p.Actions {
		if a.sdnSeq > seq && a.Runnable() {
			key, seq = a.Key(), a.sdnSeq
		}
	}
	return key
}

// sdnUnread plans every declared zone and vnet as Unknown when the SDN
// configuration could not be read (err) or was not.
func sdnUnread(pc *planContext, err error) []*Action {
	var out []*Action
	reason := "the SDN configuration was not read"
	if err != nil {
		reason = fmt.Sprintf("could not read the SDN configuration: %v", err)
	}
	for _, z := range specsOf[*SdnZoneSpec](pc.d, KindSdnZone) {
		a := baseAction(z.Meta, "", 0)
		a.Status, a.Reason = vocab.StatusUnknown, reason
		out = append(out, a)
	}
	for _, v := range specsOf[*SdnVnetSpec](pc.d, KindSdnVnet) {
		a := baseAction(v.Meta, "", 0)
		a.Status, a.Reason = vocab.StatusUnknown, reason
		out = append(out, a)
	}
	return out
}

func (r sdnReconciler) plan(pc *planContext) []*Action {
	k := pc.snap.kinds
	if !k.sdnRead {
		return sdnUnread(pc, k.sdnErr)
	}
	st := &sdnState{zones: sdnByID(k.zones), vnets: sdnByID(k.vnets), subnets: k.subnets}
	declaredZone, declaredVnet := map[string]*SdnZoneSpec{}, map[string]*SdnVnetSpec{}
	for _, z := range specsOf[*SdnZoneSpec](pc.d, KindSdnZone) {
		declaredZone[z.Name] = z
	}
	for _, v := range specsOf[*SdnVnetSpec](pc.d, KindSdnVnet) {
		declaredVnet[v.Name] = v
	}
	foreign := r.foreignPending(st, declaredZone, declaredVnet)

	steps := map[string]sdnStep{} // action key -> staging
	var zoneActs, vnetActs, delVnets, delZones []*Action
	for _, z := range specsOf[*SdnZoneSpec](pc.d, KindSdnZone) {
		a, step := r.planZone(pc, st, z)
		zoneActs = append(zoneActs, a)
		if step != nil {
			steps[a.Key()] = step
		}
	}
	zoneAction := map[string]*Action{}
	for _, a := range zoneActs {
		zoneAction[a.Name] = a
	}
	for _, v := range specsOf[*SdnVnetSpec](pc.d, KindSdnVnet) {
		za := zoneAction[v.Zone]
		a, step := r.planVnet(pc, st, v, za)
		if za != nil && a.Action != vocab.ActionNone && (za.Conflicted() || za.Status == vocab.StatusFailed) {
			// Blocked now rather than at apply time, so that it stays out of
			// the pass's SDN sequence.
			a.BlockedBy = za.Key()
			a.Reason = joinReasons([]string{a.Reason, fmt.Sprintf("blocked: %s is %s (%s)", za.Key(), za.Status, za.Reason)})
		}
		vnetActs = append(vnetActs, a)
		if step != nil {
			steps[a.Key()] = step
		}
	}
	delVnets, delZones = r.prune(pc, st, declaredZone, declaredVnet, steps)
	return sdnSequence(pc, foreign, steps, zoneActs, vnetActs, deletionOrder(delVnets, delZones))
}

// sdnSequence lists the pass's SDN actions and chains those that write:
// zones, vnets, vnet deletions, zone deletions, each after the one before,
// the last applying the SDN configuration. foreign says why nothing can be
// written (someone else's pending change), "" when it can.
func sdnSequence(pc *planContext, foreign string, steps map[string]sdnStep, zoneActs, vnetActs, deletions []*Action) []*Action {
	// The sequence: zones, vnets, vnet deletions, zone deletions. Objects
	// whose only difference is a pending change wait for the apply of the
	// sequence; when nothing else is to be written, the first of them
	// carries the apply, so that a pending change of proxmops (left by an
	// action that ran alone, failed or was interrupted) is always applied by
	// this pass or the next.
	var out, chain, waiting []*Action
	for _, group := range [][]*Action{zoneActs, vnetActs, deletions} {
		for _, a := range group {
			out = append(out, a)
			if a.sdnPending {
				switch {
				case a.Sync != vocab.SyncAuto:
					// Applied when a person syncs it.
					a.Action = vocab.ActionUpdate
					a.run = func(context.Context, *execCtx) error { return nil }
				case foreign != "":
					a.refuse(joinReasons([]string{a.Reason, foreign}))
				default:
					waiting = append(waiting, a)
				}
				continue
			}
			// The step is in steps until the sequence chains it; an SDN
			// action has no Waiting yet (dependencies are held after).
			if steps[a.Key()] == nil || !a.proceeds() {
				continue
			}
			if foreign != "" {
				a.refuse(joinReasons([]string{a.Reason, foreign}))
				continue
			}
			chain = append(chain, a)
		}
	}
	if len(chain) == 0 && len(waiting) > 0 {
		a := waiting[0]
		waiting = waiting[1:]
		a.Action = vocab.ActionUpdate
		if st, _ := a.Observed["state"].(string); st == "deleted" {
			a.Action = vocab.ActionDelete
		}
		steps[a.Key()] = func(context.Context, *execCtx) error { return nil }
		chain = append(chain, a)
	}
	if a := reapplier(pc, chain, waiting, zoneActs, vnetActs); a != nil {
		steps[a.Key()] = func(context.Context, *execCtx) error { return nil }
		chain = append(chain, a)
	}
	for i, a := range chain {
		step, key, deferApply := steps[a.Key()], a.Key(), a.sdnDefer
		a.sdnSeq = i + 1
		if i > 0 {
			a.DependsOn = append(a.DependsOn, chain[i-1].Key())
		}
		// Applied by the last SDN action of each Apply call (sdnApplier):
		// the last of the sequence when the whole plan is applied, this
		// one when it runs alone.
		a.run = func(ctx context.Context, x *execCtx) error {
			err := step(ctx, x)
			if err == nil && x.sdnApply == key && !deferApply {
				err = x.applySDN(ctx)
			}
			return explainSDNLock(err)
		}
	}
	if len(chain) > 0 {
		last := chain[len(chain)-1]
		pc.kinds.sdnApplyKey = last.Key()
		last.Reason = joinReasons([]string{last.Reason, "the SDN configuration is applied after this change (PUT /cluster/sdn)"})
		for _, a := range waiting {
			a.Reason = joinReasons([]string{a.Reason, fmt.Sprintf("applied with %s (PUT /cluster/sdn)", last.Key())})
			a.DependsOn = nil
		}
	}
	return out
}

// deletionOrder sequences deletions: vnets whose zone stays first, then
// each zone right after its own vnets. A vnet's deletion in a zone that
// goes is applied by the zone's deletion (sdnDefer), so no apply in
// between removes the vnets that tell whose the zone is.
func deletionOrder(delVnets, delZones []*Action) []*Action {
	var out []*Action
	byName := map[string]*Action{}
	for _, v := range delVnets {
		byName[v.Name] = v
		if !v.sdnDefer {
			out = append(out, v)
		}
	}
	for _, z := range delZones {
		for _, d := range z.DependsOn {
			if v := byName[strings.TrimPrefix(d, KindSdnVnet+"/")]; v != nil && v.sdnDefer {
				out = append(out, v)
			}
		}
		out = append(out, z)
	}
	return out
}

// foreignPending says why SDN cannot be applied this pass: pending changes
// proxmops did not make (an apply would apply them too).
func (sdnReconciler) foreignPending(st *sdnState, zones map[string]*SdnZoneSpec, vnets map[string]*SdnVnetSpec) string {
	var what []string
	for _, id := range slices.Sorted(maps.Keys(st.zones)) {
		z := st.zones[id]
		if !z.Pending() {
			continue
		}
		if owned, _ := st.zoneOwned(id); owned || zones[id] != nil {
			continue
		}
		what = append(what, fmt.Sprintf("zone %s (%s)", id, z.State))
	}
	for _, id := range slices.Sorted(maps.Keys(st.vnets)) {
		v := st.vnets[id]
		owned, _ := ParseOwned(VnetAlias(v))
		if v.Pending() && !owned {
			what = append(what, fmt.Sprintf("vnet %s (%s)", id, v.State))
		}
		if owned {
			continue
		}
		for _, s := range st.subnets[id] {
			if s.Pending() {
				what = append(what, fmt.Sprintf("subnet %s (%s)", s.ID, s.State))
			}
		}
	}
	if len(what) == 0 {
		return ""
	}
	return fmt.Sprintf("the SDN configuration has pending changes proxmops did not make (%s); applying would apply them too, and proxmops neither applies nor reverts other people's changes: apply or revert them in Proxmox (Datacenter > SDN), then the next pass continues",
		strings.Join(what, ", "))
}

// planSdnCreate makes a the creation of the SDN entry what (zone, vnet)
// called name: its changes are shown, then the options in key order; its
// step posts params with the options.
func planSdnCreate(a *Action, what, name string, shown []vocab.Change, params *pve.Params, options map[string]string) sdnStep {
	a.Action, a.Status = vocab.ActionCreate, vocab.StatusOutOfSync
	a.Reason = fmt.Sprintf("%s %s does not exist", what, name)
	a.Changes = shown
	for _, k := range slices.Sorted(maps.Keys(options)) {
		a.Changes = append(a.Changes, vocab.Change{Field: k, To: options[k]})
		params.Set(k, options[k])
	}
	return func(ctx context.Context, x *execCtx) error {
		if err := x.e.client.SDNCreate(ctx, what+"s", params); err != nil {
			return fmt.Errorf("creating SDN %s %s: %w", what, name, err)
		}
		return nil
	}
}

func (sdnReconciler) planZone(pc *planContext, st *sdnState, z *SdnZoneSpec) (*Action, sdnStep) {
	a := baseAction(z.Meta, "", 0)
	if syncDisabled(a) {
		return a, nil
	}
	have, ok := st.zones[z.Name]
	if !exists(have, ok) {
		return a, planSdnCreate(a, "zone", z.Name, []vocab.Change{{Field: "type", To: z.Type}},
			pve.NewParams().Set("zone", z.Name).Set("type", z.Type), z.Options)
	}
	a.Observed = map[string]any{"config": have.Config, "state": have.State}
	owned, vnets := st.zoneOwned(z.Name)
	a.Owned = owned
	if t := have.Config["type"]; t != z.Type {
		why := fmt.Sprintf("zone %s is a %s zone, the manifest declares a %s zone: the type of a zone cannot change", z.Name, t, z.Type)
		if !owned {
			return a.conflict(why), nil
		}
		a.refuse(why)
		return a, nil
	}
	changes, params, _ := optionChanges("", z.Options, have.Config, nil)
	if len(changes) == 0 {
		if have.Pending() {
			a.Status, a.sdnPending = vocab.StatusOutOfSync, true
			a.Reason = fmt.Sprintf("zone %s has a pending change (%s) not applied yet", z.Name, have.State)
			return a, nil
		}
		a.Status, a.Reason = vocab.StatusSynced, "in sync"
		return a, nil
	}
	a.Changes = changes
	fields := fieldNames(changes, ", ")
	if !owned {
		held := "it holds no vnet"
		if len(vnets) > 0 {
			held = "it holds vnets proxmops does not own (" + strings.Join(vnets, ", ") + ")"
		}
		return a.conflict(fmt.Sprintf("zone %s exists and differs from the manifest (%s), but proxmops cannot tell it made it: Proxmox zones have no comment field, so proxmops changes a zone only when every vnet in it is its own, and %s: left untouched",
			z.Name, fields, held)), nil
	}
	a.Action, a.Status = vocab.ActionUpdate, vocab.StatusOutOfSync
	a.Reason = fmt.Sprintf("%s differ from the manifest", fields)
	return a, func(ctx context.Context, x *execCtx) error {
		if err := x.e.client.SDNSet(ctx, "zones", z.Name, params, nil); err != nil {
			return fmt.Errorf("updating SDN zone %s: %w", z.Name, err)
		}
		return nil
	}
}

// vnetOptionKeys are the vnet options proxmops manages.
var vnetOptionKeys = []string{"tag", "vlanaware", "isolate-ports"}

// subnetOptionKeys are the subnet options proxmops manages.
var subnetOptionKeys = []string{"gateway", "snat", "dhcp-range", "dhcp-dns-server", "dnszoneprefix"}

// SubnetCIDR is a subnet entry's network in CIDR form.
func SubnetCIDR(e pve.SDNEntry) string {
	for _, m := range []map[string]string{e.Config, e.Running} {
		if c := m["cidr"]; c != "" {
			return c
		}
		if n, b := m["network"], m["mask"]; n != "" && b != "" {
			return n + "/" + b
		}
	}
	// zone-10.10.0.0-24
	parts := strings.Split(e.ID, "-")
	if len(parts) >= 3 {
		return parts[len(parts)-2] + "/" + parts[len(parts)-1]
	}
	return e.ID
}

func (sdnReconciler) planVnet(pc *planContext, st *sdnState, v *SdnVnetSpec, zoneAct *Action) (*Action, sdnStep) {
	a := baseAction(v.Meta, "", 0)
	if syncDisabled(a) {
		return a, nil
	}
	if zoneAct != nil {
		a.DependsOn = append(a.DependsOn, zoneAct.Key())
	} else if z, ok := st.zones[v.Zone]; !exists(z, ok) {
		a.refuse(fmt.Sprintf("zone %s is neither declared nor on the cluster", v.Zone))
		return a, nil
	}

	have, ok := st.vnets[v.Name]
	if !exists(have, ok) {
		shown := []vocab.Change{{Field: "zone", To: v.Zone}}
		if v.Alias != "" {
			shown = append(shown, vocab.Change{Field: "alias", To: v.Alias})
		}
		create := planSdnCreate(a, "vnet", v.Name, shown,
			pve.NewParams().Set("vnet", v.Name).Set("zone", v.Zone).Set("alias", markOwned(v.Alias)), v.Options)
		var subs sdnDiff
		subOps := vnetSubnetSteps(v, nil, &subs)
		a.Changes = append(a.Changes, subs.changes...)
		return a, runSteps(append([]sdnStep{create}, subOps...))
	}
	a.Observed = map[string]any{"config": have.Config, "state": have.State}
	owned, alias := ParseOwned(VnetAlias(have))
	a.Owned = owned
	if !owned {
		return a.conflict(fmt.Sprintf("vnet %s exists but proxmops does not own it (no %q in its alias): left untouched", v.Name, OwnerMark)), nil
	}
	var diff sdnDiff
	params := pve.NewParams()
	if z := VnetZone(have); z != v.Zone {
		diff.add("zone", vocab.Change{Field: "zone", From: z, To: v.Zone})
		params.Set("zone", v.Zone)
	}
	if alias != v.Alias {
		diff.add("alias", vocab.Change{Field: "alias", From: alias, To: v.Alias})
		params.Set("alias", markOwned(v.Alias))
	}
	optCh, optParams, del := optionChanges("", v.Options, have.Config, vnetOptionKeys)
	for _, c := range optCh {
		diff.add(c.Field, c) // a vnet option's field is its key
	}
	for _, k := range optParams.Keys() {
		val, _ := optParams.Get(k)
		params.Set(k, val)
	}
	subOps := vnetSubnetSteps(v, st.subnets[v.Name], &diff)
	pending := have.Pending()
	for _, s := range st.subnets[v.Name] {
		pending = pending || s.Pending()
	}
	if len(diff.changes) == 0 {
		if pending {
			a.Status, a.sdnPending = vocab.StatusOutOfSync, true
			a.Reason = fmt.Sprintf("vnet %s has pending changes not applied yet", v.Name)
			return a, nil
		}
		a.Status, a.Reason = vocab.StatusSynced, "in sync"
		return a, nil
	}
	a.Action, a.Status, a.Changes = vocab.ActionUpdate, vocab.StatusOutOfSync, diff.changes
	a.Reason = fmt.Sprintf("%s differ from the manifest", strings.Join(diff.groups, ", "))
	update := func(ctx context.Context, x *execCtx) error {
		if params.Len() == 0 && len(del) == 0 {
			return nil
		}
		if err := x.e.client.SDNSet(ctx, "vnets", v.Name, params, del); err != nil {
			return fmt.Errorf("updating SDN vnet %s: %w", v.Name, err)
		}
		return nil
	}
	return a, runSteps(append([]sdnStep{update}, subOps...))
}

// sdnDiff is a vnet's changes and what each belongs to ("tag", "subnet
// 10.10.0.0/24"), in order, for the action's reason.
type sdnDiff struct {
	changes []vocab.Change
	groups  []string
}

func (d *sdnDiff) add(group string, cs ...vocab.Change) {
	if len(cs) == 0 {
		return
	}
	d.changes = append(d.changes, cs...)
	if !slices.Contains(d.groups, group) {
		d.groups = append(d.groups, group)
	}
}

// vnetSubnetSteps compares a vnet's declared subnets with the existing
// ones, adds the changes to diff and returns the calls that make them.
func vnetSubnetSteps(v *SdnVnetSpec, existing []pve.SDNEntry, diff *sdnDiff) []sdnStep {
	var ops []sdnStep
	have := map[string]pve.SDNEntry{}
	for _, e := range existing {
		if e.State != "deleted" {
			have[SubnetCIDR(e)] = e
		}
	}
	want := map[string]bool{}
	for _, sub := range v.Subnets {
		want[sub.CIDR] = true
		e, ok := have[sub.CIDR]
		if !ok {
			diff.add("subnet "+sub.CIDR, vocab.Change{Field: "subnet " + sub.CIDR, To: describeOptions(sub.Options)})
			ops = append(ops, func(ctx context.Context, x *execCtx) error {
				p := pve.NewParams()
				for _, k := range slices.Sorted(maps.Keys(sub.Options)) {
					if k == "dhcp-range" {
						p.SetList(k, strings.Split(sub.Options[k], "\n"))
					} else {
						p.Set(k, sub.Options[k])
					}
				}
				if err := x.e.client.SDNSubnetCreate(ctx, v.Name, sub.CIDR, p); err != nil {
					return fmt.Errorf("creating subnet %s of vnet %s: %w", sub.CIDR, v.Name, err)
				}
				return nil
			})
			continue
		}
		ch, params, del := optionChanges("subnet "+sub.CIDR+".", sub.Options, e.Config, subnetOptionKeys)
		if len(ch) == 0 {
			continue
		}
		diff.add("subnet "+sub.CIDR, ch...)
		id := e.ID
		ops = append(ops, func(ctx context.Context, x *execCtx) error {
			if err := x.e.client.SDNSet(ctx, "vnets/"+pve.PathEscape(v.Name)+"/subnets", id, params, del); err != nil {
				return fmt.Errorf("updating subnet %s of vnet %s: %w", sub.CIDR, v.Name, err)
			}
			return nil
		})
	}
	for _, cidr := range slices.Sorted(maps.Keys(have)) {
		if want[cidr] {
			continue
		}
		id := have[cidr].ID
		diff.add("subnet "+cidr, vocab.Change{Field: "subnet " + cidr, From: describeOptions(have[cidr].Config)})
		ops = append(ops, func(ctx context.Context, x *execCtx) error {
			if err := x.e.client.SDNDelete(ctx, "vnets/"+pve.PathEscape(v.Name)+"/subnets", id); err != nil {
				return fmt.Errorf("deleting subnet %s of vnet %s: %w", cidr, v.Name, err)
			}
			return nil
		})
	}
	return ops
}

// runSteps runs SDN steps one after the other, stopping at the first error.
func runSteps(steps []sdnStep) sdnStep {
	return func(ctx context.Context, x *execCtx) error {
		for _, st := range steps {
			if err := st(ctx, x); err != nil {
				return err
			}
		}
		return nil
	}
}

func describeOptions(o map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(o)) {
		switch k {
		case "type", "vnet", "zone", "id", "network", "mask", "cidr", "subnet", "digest", "state":
			continue
		}
		parts = append(parts, k+"="+strings.ReplaceAll(o[k], "\n", " "))
	}
	return strings.Join(parts, ", ")
}

// sdnOrphan is the action of the owned, undeclared SDN entry en (what:
// zone, vnet), and whether its deletion by proxmops is pending already:
// then it only waits for the SDN apply.
func sdnOrphan(kind, what, id string, en pve.SDNEntry) (*Action, bool) {
	if en.State == "deleted" {
		a := orphan(kind, id, "", 0, map[string]any{"config": en.Running, "state": en.State})
		a.Status, a.sdnPending = vocab.StatusOutOfSync, true
		a.Reason = fmt.Sprintf("the deletion of %s %s is pending, not applied yet", what, id)
		return a, true
	}
	return orphan(kind, id, "", 0, map[string]any{"config": en.Config, "state": en.State}), false
}

// prune plans the deletion of owned vnets (with their subnets) and of the
// zones left holding only them, when no manifest declares them.
func (sdnReconciler) prune(pc *planContext, st *sdnState, zones map[string]*SdnZoneSpec, vnets map[string]*SdnVnetSpec, steps map[string]sdnStep) (delVnets, delZones []*Action) {
	leaving := map[string]bool{}
	for _, id := range slices.Sorted(maps.Keys(st.vnets)) {
		v := st.vnets[id]
		owned, _ := ParseOwned(VnetAlias(v))
		if !owned || vnets[id] != nil {
			continue
		}
		leaving[id] = true
		a, pending := sdnOrphan(KindSdnVnet, "vnet", id, v)
		delVnets = append(delVnets, a)
		if pending || !decidePrune(pc, a, ownedWhy("owned by proxmops"), "", vocab.Change{Field: "vnet", From: id}) {
			continue
		}
		subs := st.subnets[id]
		steps[a.Key()] = func(ctx context.Context, x *execCtx) error {
			for _, s := range subs {
				if s.State == "deleted" {
					continue
				}
				if err := x.e.client.SDNDelete(ctx, "vnets/"+pve.PathEscape(id)+"/subnets", s.ID); err != nil {
					return fmt.Errorf("deleting subnet %s of vnet %s: %w", s.ID, id, err)
				}
			}
			if err := x.e.client.SDNDelete(ctx, "vnets", id); err != nil {
				return fmt.Errorf("deleting SDN vnet %s: %w", id, err)
			}
			return nil
		}
	}
	for _, id := range slices.Sorted(maps.Keys(st.zones)) {
		z := st.zones[id]
		if zones[id] != nil {
			continue
		}
		owned, held := st.zoneOwned(id)
		if !owned {
			continue
		}
		a, pending := sdnOrphan(KindSdnZone, "zone", id, z)
		if pending {
			delZones = append(delZones, a)
			continue
		}
		allLeaving := true
		for _, v := range held {
			allLeaving = allLeaving && leaving[v]
		}
		if !allLeaving {
			continue
		}
		delZones = append(delZones, a)
		const holds = "holds only vnets of proxmops that are no longer in the repository"
		why := pruneWhy{kept: holds + "; prune is off, so it is left in place", gone: holds + " (prune)"}
		if !decidePrune(pc, a, why, "", vocab.Change{Field: "zone", From: id}) {
			continue
		}
		for _, v := range held {
			a.DependsOn = append(a.DependsOn, vocab.Key(KindSdnVnet, v))
			// Applying the vnet's deletion alone would leave the zone
			// without the vnets that tell it is proxmops': the zone's
			// deletion applies both.
			for _, d := range delVnets {
				if d.Name == v {
					d.sdnDefer = true
				}
			}
		}
		steps[a.Key()] = func(ctx context.Context, x *execCtx) error {
			if err := x.e.client.SDNDelete(ctx, "zones", id); err != nil {
				return fmt.Errorf("deleting SDN zone %s: %w", id, err)
			}
			return nil
		}
	}
	return delVnets, delZones
}

// reapplier picks the action that applies the SDN configuration again
// when nothing else does and the last apply's network reload failed on a
// node: the configuration is committed there too, so nothing is pending,
// but that node has no bridge for the vnets until it reloads.
func reapplier(pc *planContext, chain, waiting, zoneActs, vnetActs []*Action) *Action {
	why := pc.e.sdnReload.get()
	if why == "" || len(chain) > 0 || len(waiting) > 0 {
		return nil
	}
	for _, a := range append(append([]*Action(nil), vnetActs...), zoneActs...) {
		if a.Settled() && a.Sync == vocab.SyncAuto && a.BlockedBy == "" {
			a.Action, a.Status = vocab.ActionUpdate, vocab.StatusOutOfSync
			a.Reason = joinReasons([]string{a.Reason, why + " until the SDN configuration is applied again"})
			return a
		}
	}
	return nil
}

// bridgeNeeds are a guest's bridge edges (manifest.Dependencies: the
// Network with that interface on its node, or a declared vnet) resolved
// against node, where the guest is: the Network declared there with the
// interface, and a vnet followed by the action that applies the SDN
// configuration, since a vnet is a bridge on a node only once applied and
// that node's network reload has ended, which the applying action waits
// for (applySDN).
func bridgeNeeds(pc *planContext, m *Meta, node string) []string {
	var deps []string
	for _, k := range m.needs(KindNetwork) {
		for _, n := range specsOf[*NetworkSpec](pc.d, KindNetwork) {
			if vocab.Key(KindNetwork, n.Name) != k {
				continue
			}
			if key, ok := pc.kinds.netKeys[node+"/"+n.Iface]; ok {
				deps = append(deps, key)
			}
		}
	}
	for _, k := range m.needs(KindSdnVnet) {
		deps = append(deps, k)
		if pc.kinds.sdnApplyKey != "" {
			deps = append(deps, pc.kinds.sdnApplyKey)
		}
	}
	return deps
}

// SdnZoneSpec is a desired SDN zone; Options are Proxmox's keys.
type SdnZoneSpec struct {
	Meta
	Type    string
	Options map[string]string
}

// SubnetSpec is a vnet's subnet; Options are Proxmox's keys.
type SubnetSpec struct {
	CIDR    string
	Options map[string]string
}

// SdnVnetSpec is a desired SDN vnet with its subnets.
type SdnVnetSpec struct {
	Meta
	Zone    string
	Alias   string
	Options map[string]string // tag, vlanaware, isolate-ports
	Subnets []SubnetSpec
}

func zoneFromManifest(z *manifest.SdnZone, _ SecretReader) *SdnZoneSpec {
	sp := z.Spec
	o := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			o[k] = v
		}
	}
	setInt := func(k string, v int) {
		if v != 0 {
			o[k] = strconv.Itoa(v)
		}
	}
	set("bridge", sp.Bridge)
	setInt("tag", sp.Tag)
	set("vlan-protocol", sp.VLANProtocol)
	set("peers", strings.Join(sp.Peers, ","))
	set("controller", sp.Controller)
	setInt("vrf-vxlan", sp.VRFVXLAN)
	set("exitnodes", strings.Join(sp.ExitNodes, ","))
	if sp.AdvertiseSubnets {
		o["advertise-subnets"] = "1"
	}
	setInt("mtu", sp.MTU)
	set("nodes", strings.Join(sp.Nodes, ","))
	set("ipam", sp.IPAM)
	set("dns", sp.DNS)
	set("reversedns", sp.ReverseDNS)
	set("dnszone", sp.DNSZone)
	set("dhcp", sp.DHCP)
	m := metaOf(z)
	m.Node = ""
	return &SdnZoneSpec{Meta: m, Type: sp.Type, Options: o}
}

func vnetFromManifest(v *manifest.SdnVnet, _ SecretReader) *SdnVnetSpec {
	sp := v.Spec
	o := map[string]string{}
	if sp.Tag != 0 {
		o["tag"] = strconv.Itoa(sp.Tag)
	}
	if sp.VLANAware {
		o["vlanaware"] = "1"
	}
	if sp.IsolatePorts {
		o["isolate-ports"] = "1"
	}
	m := metaOf(v)
	m.Node = ""
	s := &SdnVnetSpec{Meta: m, Zone: sp.Zone, Alias: strings.TrimSpace(sp.Alias), Options: o}
	for _, sub := range sp.Subnets {
		so := map[string]string{}
		if sub.Gateway != "" {
			so["gateway"] = sub.Gateway
		}
		if sub.SNAT {
			so["snat"] = "1"
		}
		if sub.DHCPDNSServer != "" {
			so["dhcp-dns-server"] = sub.DHCPDNSServer
		}
		if sub.DNSZonePrefix != "" {
			so["dnszoneprefix"] = sub.DNSZonePrefix
		}
		var ranges []string
		for _, r := range sub.DHCPRange {
			ranges = append(ranges, "start-address="+r.Start+",end-address="+r.End)
		}
		if len(ranges) > 0 {
			so["dhcp-range"] = strings.Join(ranges, "\n")
		}
		s.Subnets = append(s.Subnets, SubnetSpec{CIDR: sub.Subnet, Options: so})
	}
	return s
}

// ZoneDrift is the first zone option the plan of m would change in config,
// "" when none.
func ZoneDrift(m *manifest.SdnZone, config map[string]string) string {
	if ch, _, _ := optionChanges("", zoneFromManifest(m, nil).Options, config, nil); len(ch) > 0 {
		return ch[0].Field
	}
	return ""
}
