package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Explicit adoption of guests proxmops did not make. A guest
// manifest annotated proxmops.dev/adopt: "true", or named to `proxmops
// adopt` (Options.Adopt), takes ownership of the unowned guest at its
// VMID: the plan shows "adopt" with the ownership tag (the guest's other
// tags kept) and every other difference as an ordinary update, applied
// only by a sync. What only a create can set (the source image or
// template, linked or full clone, the storage of existing disks) is
// accepted as it is, and disks larger than declared are reported, never
// shrunk: adopting never replaces nor shrinks anything. Without the
// annotation or the command a foreign guest stays a Conflict (gate.go).
//
// What an adoption accepts stays accepted after it, however it was made,
// and no more: the adoption tags the guest with AdoptedTag beside OwnerTag
// and records its disk sizes in its description (adoptrecord.go). Every
// later plan of a guest carrying both notes the creation-only differences
// and the disks up to their size at adoption, and reports a disk grown
// beyond it as drift (OutOfSync, never shrunk). An owned guest whose
// adoption lacks the tag or the record (adopted before they existed) has
// them added by `proxmops adopt` again, or by the next sync of a manifest
// still annotated.

// adoptionTags are the tags an adoption adds.
var adoptionTags = strings.Join(pvefields.NormalTags([]string{OwnerTag, AdoptedTag}), ";")

// adoptingReason opens the reason of an adoption of a guest with rec.
func adoptingReason(g *Guest, rec AdoptionRecord) string {
	what := "adopting a guest proxmops did not make: adds the ownership tag " + OwnerTag + " and " + AdoptedTag
	if g.Owned {
		what = "completing the adoption of a guest proxmops adopted before it recorded adoptions: adds " + AdoptedTag
	}
	return what + " and records its disk sizes (" + rec.String() + ") in its description's " + AdoptedLinePrefix +
		" line: they stay accepted, growth beyond them is drift"
}

// adoptRequested reports whether m asks to adopt the guest at its VMID.
func (pc *planContext) adoptRequested(m Meta) bool {
	return m.Adopt || slices.Contains(pc.e.opts.Adopt, vocab.Key(m.Kind, m.Name))
}

// adoptionComplete says whether g carries everything an adoption leaves.
func adoptionComplete(g *Guest) bool {
	return g.Owned && g.Adopted && g.AdoptionRecord != nil
}

// adoptGate decides, before the ownership gate, whether a's resource
// adopts g. It returns the guest to plan with (a copy seen as owned and
// adopted when adopting) and a finished action when the adoption is
// refused. typ and template are what the kind declares, as for guestGate.
func adoptGate(pc *planContext, a *Action, kind string, m Meta, g *Guest) (*Guest, *Action) {
	typ, template := guestTypeOf(kind)
	if g != nil && g.Owned && g.Adopted {
		// Adopted earlier: what it accepted stays accepted, up to the
		// record (nil: not recorded, growth is reported).
		a.acceptAsIs, a.accepted = true, g.AdoptionRecord
	}
	if !pc.adoptRequested(m) || g == nil || a.Sync == vocab.SyncDisabled || adoptionComplete(g) {
		return g, nil
	}
	if g.Owned && (g.Lock != "" || !g.Read || g.Type != typ || g.Template != template) {
		return g, nil // completed on a later pass; the ordinary gates say the rest
	}
	a.placeOn(g)
	if unfinished(a, g) {
		return g, a
	}
	refuse := func(why string) (*Guest, *Action) {
		a.Observed = observedSummary(g)
		return g, a.conflict(fmt.Sprintf("cannot adopt VMID %d (%s %q on %s): %s; left untouched", g.VMID, GuestNoun(g), g.Name, g.Node, why))
	}
	switch {
	case g.Type != typ:
		return refuse(fmt.Sprintf("it is a %s, the manifest declares a %s", GuestNoun(g), kind))
	case g.Template != template:
		return refuse(fmt.Sprintf("it is a %s, the manifest declares a %s", GuestNoun(g), kind))
	case g.Lock != "":
		return refuse(fmt.Sprintf("it is locked (%s)", g.Lock))
	case !g.Read:
		return refuse(fmt.Sprintf("its configuration could not be read: %v", g.ReadErr))
	}
	rec := diskSizes(g)
	own := *g
	own.Owned, own.Adopted, own.AdoptionRecord = true, true, &rec
	a.Adopt, a.acceptAsIs, a.accepted, a.adoptedBefore = true, true, &rec, g.Owned
	a.adoptReason = adoptingReason(g, rec)
	// The guest's own tags stay as they are (case and order: tag-style
	// decides what Proxmox makes of them); proxmops' tags are added.
	tags := pvefields.AppendTags(g.Tags, OwnerTag, AdoptedTag)
	node, vmid := g.Node, g.VMID
	// The record first: without the tags it is never read, so a failure
	// in between leaves the guest as it was.
	a.adoptRecord = func(ctx context.Context, x *execCtx) error { return x.writeAdoptionRecord(ctx, typ, node, vmid, rec) }
	a.tagOnly = func(ctx context.Context, x *execCtx) error {
		p := pve.NewParams().Set("tags", strings.Join(tags, ";"))
		if typ == "lxc" {
			return x.e.client.LxcSetConfig(ctx, node, vmid, p)
		}
		return x.e.client.QemuSetConfig(ctx, node, vmid, p)
	}
	return &own, nil
}

// adoptDiff drops from an adopted or adopting guest's diff what adoption
// accepts as it is: creation-only differences, and shrinks down to no
// less than the size at adoption, which are only noted; it turns a disk
// grown beyond that size into drift (d.grown). It returns the notes for
// the action's reason.
func adoptDiff(a *Action, d *pvefields.Diff) []string {
	if !a.acceptAsIs {
		return nil
	}
	var notes []string
	for _, c := range d.CreationOnly {
		notes = append(notes, fmt.Sprintf("%s is %q on the guest (creation-only: accepted as it is)", c.Field, c.From))
	}
	d.CreationOnly = nil
	notes = append(notes, d.AsIs...)
	for _, s := range d.Shrinks {
		d.Refused = slices.DeleteFunc(d.Refused, func(r string) bool { return r == s.Refused })
		at, recorded := int64(0), a.accepted != nil
		if recorded {
			at = a.accepted.Sizes[s.Slot]
		}
		switch {
		case s.Have <= at:
			notes = append(notes, fmt.Sprintf("%s: never shrunk (%s at adoption, accepted)", s.Head, pvefields.FormatSize(at)))
		case recorded:
			since := "it had no disk there at adoption"
			if at > 0 {
				since = pvefields.FormatSize(at) + " at adoption"
			}
			grow(d, s, fmt.Sprintf("%s, grown since its adoption (%s): never shrunk; raise the size in the manifest to %s to accept it", s.Head, since, pvefields.FormatSize(s.Have)))
		default:
			grow(d, s, fmt.Sprintf("%s, and its size at adoption is not recorded (adopted before proxmops recorded it): never shrunk; run `proxmops adopt %s` to record the sizes it has now, or raise the size in the manifest", s.Head, a.Key()))
		}
	}
	d.Shrinks = nil
	return notes
}

// grow records a disk larger than both the manifest and its size at
// adoption: drift that is reported (OutOfSync), never applied.
func grow(d *pvefields.Diff, s pvefields.Shrink, reason string) {
	d.Grown = append(d.Grown, reason)
	d.GrownChanges = append(d.GrownChanges, vocab.Change{Field: s.Slot + ".size", From: pvefields.FormatSize(s.Have), To: pvefields.FormatSize(s.Want), Hold: vocab.HoldGrownSinceAdoption})
}

// finishAdopt words an adopting action once its diff is planned: always
// an update (the ownership tag at least), the adoption first in its reason.
func finishAdopt(a *Action, notes []string) {
	if !a.Adopt || a.Status == vocab.StatusFailed || a.Conflicted() {
		if len(notes) > 0 && a.Reason != "" {
			a.Reason = joinReasons(append([]string{a.Reason}, notes...))
		}
		return
	}
	if a.Action == vocab.ActionNone {
		a.Action = vocab.ActionUpdate
		a.Reason = ""
	}
	a.Status = vocab.StatusOutOfSync
	if !a.Acts() {
		a.run, a.claim = a.tagOnly, claim{nodes: []string{a.Node}}
	}
	if !slices.ContainsFunc(a.Changes, func(c vocab.Change) bool { return c.Field == "tags" }) {
		a.Changes = append([]vocab.Change{{Field: "tags", Path: "metadata.tags", To: adoptionTags}}, a.Changes...)
	}
	reason := a.adoptReason
	if a.Reason != "" && a.Reason != "in sync" {
		reason += "; " + a.Reason
	}
	a.Reason = joinReasons(append([]string{reason}, notes...))
}

// ErrAlreadyAdopted is what adopting a guest whose adoption is complete
// answers: nothing to do (`proxmops adopt` run again succeeds with it).
var ErrAlreadyAdopted = errors.New("is already adopted")

// AdoptOnly returns a plan holding only the adoption of key (the
// ownership tag, the guest's other tags kept), for `proxmops adopt`: the
// other differences it listed wait for a sync. It fails with the reason
// when the plan does not adopt key.
func (p *Plan) AdoptOnly(key string) (*Plan, error) {
	for _, a := range p.Actions {
		if a.Key() != key {
			continue
		}
		if a.Owned && !a.Adopt && a.acceptAsIs && a.accepted != nil {
			return nil, fmt.Errorf("%s %w: it carries %s and %s, and its disk sizes at adoption are recorded (%s); nothing to do",
				key, ErrAlreadyAdopted, OwnerTag, AdoptedTag, a.accepted)
		}
		if !a.Adopt || a.tagOnly == nil || a.Status == vocab.StatusFailed {
			return nil, fmt.Errorf("%s is not adopted: %s", key, a.Reason)
		}
		b := *a
		b.Changes = []vocab.Change{{Field: "tags", Path: "metadata.tags", To: adoptionTags}}
		b.Reason = a.adoptReason
		b.run, b.NeedsReboot, b.Sync = a.tagOnly, false, vocab.SyncAuto
		b.claim = claim{nodes: []string{a.Node}}
		b.DependsOn, b.snapshot = nil, nil // the tag alone: no snapshot before it
		sub := &Plan{Revision: p.Revision, Stats: p.Stats, pass: p.pass, Actions: []*Action{&b}}
		sub.finish()
		return sub, nil
	}
	return nil, fmt.Errorf("%s is not declared", key)
}

// planTemplateAdopt plans the adoption of a template: only its tag, as a
// template is never changed in place; what else differs is noted.
func planTemplateAdopt(a *Action, d *pvefields.Diff) *Action {
	notes := adoptDiff(a, d)
	var fields []string
	for _, c := range d.Changes() {
		if c.Field != "tags" {
			fields = append(fields, strings.SplitN(c.Field, ".", 2)[0])
		}
	}
	if len(fields) > 0 {
		notes = append(notes, fmt.Sprintf("the template differs from the manifest (%s); templates cannot be changed in place: fix the manifest to match", strings.Join(uniqStrings(fields), ", ")))
	}
	a.Action, a.run = vocab.ActionNone, nil
	finishAdopt(a, notes)
	return a
}

// Adoption is what an explicit adoption of one guest does: `proxmops
// adopt` and POST /api/v1/resources/{kind}/{name}/adopt both go through
// PlanAdoption and Adopt, so they adopt alike.
type Adoption struct {
	Key  string
	Node string
	VMID int
	// Plan is the guest's plan with the adoption: the ownership tag, then
	// the ordinary updates a sync applies afterwards (a tag the manifest
	// does not declare shows as removed there, before anything happens).
	Plan *Plan
	// Completes says the guest was owned already: the adoption adds what
	// an older one lacked (AdoptedTag, the record of its disk sizes).
	Completes bool
	// Record is the disk sizes the adoption records.
	Record AdoptionRecord
	// tagOnly is the plan Adopt applies: the record and the tags alone.
	tagOnly *Plan
}

// PlanAdoption plans the explicit adoption of key ("Kind/name") without
// changing anything. It fails, wrapping api.ErrNotFound, when key is not
// declared, and wrapping api.ErrConflict, with the reason, when the plan
// does not adopt it: a refusal (another type, a template mismatch, a
// lock), a guest proxmops made, or no guest at the VMID. A guest whose
// adoption is complete fails with ErrAlreadyAdopted (and api.ErrConflict);
// an owned guest whose adoption lacks AdoptedTag or the record of its
// disk sizes (adopted before they existed) is adopted again, which adds
// them.
func (e *Engine) PlanAdoption(ctx context.Context, d *Desired, revision, key string) (*Adoption, error) {
	ae := *e // a copy that adopts key, sharing the limiter and caches
	ae.opts.Adopt = append(slices.Clone(e.opts.Adopt), key)
	full, err := ae.Plan(ctx, d, revision)
	if err != nil {
		return nil, fmt.Errorf("planning against %s: %w", e.client.Endpoint(), err)
	}
	kind, name, _ := vocab.SplitKey(key)
	a := full.Find(kind, name)
	if a == nil {
		return nil, fmt.Errorf("%s is not declared in the repository: %w", key, api.ErrNotFound)
	}
	p, err := full.AdoptOnly(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, api.ErrConflict)
	}
	ad := &Adoption{Key: key, Node: a.Node, VMID: a.VMID, Plan: full.Only(key), tagOnly: p, Completes: a.adoptedBefore}
	if a.accepted != nil {
		ad.Record = *a.accepted
	}
	return ad, nil
}

// ApplyAdoption adopts as PlanAdoption planned: it tags the guest with
// the ownership tag (its other tags kept until a sync) and changes
// nothing else. prog, when set, follows the one action.
func (e *Engine) ApplyAdoption(ctx context.Context, ad *Adoption, prog Progress) error {
	rep, err := e.Apply(ctx, ad.tagOnly, prog)
	if err != nil {
		return err
	}
	for _, r := range rep.Results {
		if r.Status != vocab.StatusSynced {
			return fmt.Errorf("adopting %s failed: %s", ad.Key, orStr(r.Error, r.Status.String()))
		}
	}
	return nil
}

// AdoptionMessage is the history text of the adoption a sync of an
// annotated manifest made (a.Adopt), the same for the daemon and
// `proxmops apply`.
func (a *Action) AdoptionMessage(revision string) string {
	rec := ""
	if a.accepted != nil {
		rec = a.accepted.String()
	}
	what := "adopted"
	if a.adoptedBefore {
		what = "completed the adoption of"
	}
	return fmt.Sprintf("%s VMID %d on %s (tagged %s, disk sizes recorded: %s) as annotated proxmops.dev/adopt at %s", what, a.VMID, a.Node, adoptionTags, rec, shortCommit(revision))
}

// HistoryMessage is the history text of a done adoption, the same for
// the command and the API.
func (ad *Adoption) HistoryMessage(revision string) string {
	what := "adopted"
	if ad.Completes {
		what = "completed the adoption of"
	}
	return fmt.Sprintf("%s VMID %d on %s (tagged %s, disk sizes recorded: %s) at %s; the other differences wait for a sync",
		what, ad.VMID, ad.Node, adoptionTags, ad.Record, shortCommit(revision))
}

func shortCommit(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
