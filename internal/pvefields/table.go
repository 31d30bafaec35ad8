package pvefields

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// The managed fields of a guest kind are one table (qemu.go for
// VirtualMachine and Template, container.go for Container): each row says
// once how the manifest's value becomes a Proxmox parameter, what Proxmox
// assumes when the key is absent, how a read-back value is compared, how it
// is shown, when a running guest takes a change and whether it can change
// after the create. The diff of an existing guest, the parameters of the
// create and the create preview are all read from the rows, so a field
// cannot be created one way and compared another (a perpetual diff).

// takes says when a running guest takes a changed key.
type takes uint8

const (
	takesLive      takes = iota // at once
	takesReboot                 // at the next reboot
	takesHotplug                // at once when the VM's hotplug setting has the row's class
	takesCloudInit              // at the next boot, through the cloud-init drive
	takesNewDrive               // a new drive at the next reboot, a change of medium at once
)

// param is one Proxmox key of a guest with its desired value: a scalar
// row evaluated for a spec, or one slot of a slot-keyed row.
type param struct {
	key  string // Proxmox key: cores, net1, ipconfig0
	path string // manifest path: spec.cores, spec.net[1]
	// label names the change when it is not the key ("cloudinit drive").
	label string
	want  string // the Proxmox parameter value
	// to shows want in a change or the preview ("" uses show(want)).
	to string
	// def is the value Proxmox assumes when the key is absent; createDef is
	// sent at a create that leaves the field unset.
	def, createDef string
	// same compares the read-back value (def when absent) with want; nil
	// is string equality.
	same func(have, want string) bool
	// show renders a value for display (memory's current=, an abbreviated
	// description); nil shows it as is.
	show func(v string) string
	// update renders the value that changes an existing key from have (cpu
	// keeps its flags); nil sends want.
	update  func(want, have string) string
	takes   takes
	hotplug string // takesHotplug's class: memory, network, disk
	async   bool   // allocates a volume (POST .../config)
	last    bool   // sent alone after every other change
	// createOnly: set at the create, a difference afterwards is reported
	// (and not applied). writeOnly: set at the create, never read back, so
	// never compared.
	createOnly, writeOnly bool
	// noParam: not a create parameter; the converge right after the create
	// applies it (the userData seed).
	noParam bool
	// delEmpty: an empty want deletes the key (and is not sent at create).
	delEmpty bool
	// refuse says why a change from have to want cannot be applied ("").
	refuse func(have, want string) string
	// parts lists the differences of a property-string value key by key
	// (net0.bridge, net0.tag); nil compares the whole value with same.
	parts func(have string) []vocab.Change
	// diff replaces the comparison of an existing key (disks and mount
	// points: growth, refusals, creation-only storage).
	diff func(have string, x *diffCtx, d *Diff)
	// add handles a missing key itself when it returns true (a bind mount
	// an API token cannot add is refused); false adds it as want.
	add func(x *diffCtx, d *Diff) bool
}

// row is one managed field of a kind: a scalar (want) or a slot-keyed list
// (each) that expands to one param per declared entry.
type row[S any] struct {
	param
	// want renders the spec's value; ok is false when the manifest leaves
	// the field unset (Proxmox's value is then left alone).
	want func(s S) (v string, ok bool)
	// each expands a slot-keyed list for a spec and the guest's
	// configuration (nil at create).
	each func(s S, x *fieldCtx) []param
	// prune removes undeclared keys prefix+N when the list is declared.
	prune string
}

// fieldCtx is what a row's expansion may look at.
type fieldCtx struct {
	eff        map[string]string // the guest's configuration, nil at create
	vmid       int
	importFrom string // the boot disk's import source at create
	adopted    bool   // the guest carries AdoptedTag, or is being adopted
	// adoptLine is the guest's adoption record line (the engine's adoptrecord.go), kept
	// by a change of the description.
	adoptLine string
	// tagCase says whether the cluster's tags are case-sensitive (nil: no).
	tagCase func() bool
}

// descParam is the description row of both tables: the user's text,
// compared without proxmops' record lines; a change keeps the adoption
// record in the same request, so it is never lost in between.
func descParam(desc string, x *fieldCtx) []param {
	if desc == "" {
		return nil
	}
	line := x.adoptLine
	return []param{{key: "description", path: "spec.description", same: SameDescription, show: ShowDescription, want: desc,
		update: func(w, _ string) string { return WithAdoptionLine(w, line) }}}
}

// tagsParam is the tags row of both tables: the manifest's tags and
// OwnerTag, and AdoptedTag on an adopted guest, so that a sync keeps the
// record of what its adoption accepted.
func tagsParam(tags []string, x *fieldCtx) []param {
	want := append(append([]string(nil), tags...), OwnerTag)
	if x.adopted {
		want = append(want, AdoptedTag)
	}
	return []param{{key: "tags", path: "metadata.tags", same: SameTags(x.tagCase), show: ShowTags, want: strings.Join(AppendTags(nil, want...), ";")}}
}

// params evaluates a table for a spec.
func params[S any](rows []row[S], s S, x *fieldCtx) []param {
	var out []param
	for _, r := range rows {
		if r.each != nil {
			out = append(out, r.each(s, x)...)
			continue
		}
		v, ok := r.want(s)
		if !ok && r.createDef != "" && x.eff == nil {
			v, ok = r.createDef, true
		}
		if ok {
			p := r.param
			p.want = v
			out = append(out, p)
		}
	}
	return out
}

func (p *param) display(v string) string {
	if p.show != nil {
		return p.show(v)
	}
	return v
}

func (p *param) field() string {
	if p.label != "" {
		return p.label
	}
	return p.key
}

func (p *param) wantShown() string {
	if p.to != "" {
		return p.to
	}
	return p.display(p.want)
}

func (p *param) sameAs(have string) bool {
	if p.same != nil {
		return p.same(have, p.want)
	}
	return have == p.want
}

// diffCtx is the guest a table is compared with.
type diffCtx struct {
	eff map[string]string
	hp  map[string]bool // the VM's hotplug classes
	// gate is false for a stopped container: nothing of it waits for a
	// restart (a VM's reboot is decided from its state by the engine's planGuestUpdate).
	gate bool
}

func (x *diffCtx) reboot(p *param, present bool) bool {
	rb := false
	switch p.takes {
	case takesReboot:
		rb = true
	case takesHotplug:
		rb = !x.hp[p.hotplug]
	case takesNewDrive:
		rb = !present
	}
	return rb && x.gate
}

// change is the ConfigChange that sets p to value.
func (x *diffCtx) change(p *param, from, value string, present bool) ConfigChange {
	return ConfigChange{Change: vocab.Change{Field: p.field(), Path: p.path, From: from, To: p.wantShown()},
		Key: p.key, Value: value, Async: p.async, Last: p.last, Reboot: x.reboot(p, present), CI: p.takes == takesCloudInit}
}

// diffParams compares params with the guest's effective configuration.
func diffParams(ps []param, x *diffCtx, d *Diff) {
	for i := range ps {
		p := &ps[i]
		if p.writeOnly {
			continue
		}
		if !p.createOnly {
			d.managed[p.key] = p
		}
		have, present := x.eff[p.key]
		switch {
		case !present && p.add != nil:
			if p.add(x, d) {
				continue
			}
		case present && p.diff != nil:
			p.diff(have, x, d)
			continue
		case present && p.parts != nil:
			x.setParts(p, p.parts(have), have, d)
			continue
		}
		if !present {
			if p.parts != nil || p.diff != nil || p.add != nil {
				d.Config = append(d.Config, x.change(p, "", p.want, false))
				continue
			}
			have = p.def
		}
		if p.sameAs(have) {
			continue
		}
		if p.createOnly {
			d.CreationOnly = append(d.CreationOnly, vocab.Change{Field: p.field(), Path: p.path, From: p.display(have), To: p.wantShown()})
			continue
		}
		if p.refuse != nil {
			if reason := p.refuse(have, p.want); reason != "" {
				d.Refused = append(d.Refused, reason)
				continue
			}
		}
		if p.delEmpty && p.want == "" {
			c := x.change(p, have, "", present)
			c.Del = true
			d.Config = append(d.Config, c)
			continue
		}
		value := p.want
		if p.update != nil {
			value = p.update(p.want, have)
		}
		d.Config = append(d.Config, x.change(p, p.display(have), value, present))
	}
}

// setParts records the sub-key differences of one property-string value:
// the first change carries the new value, the others are shown only.
func (x *diffCtx) setParts(p *param, parts []vocab.Change, have string, d *Diff) {
	value := p.want
	if p.update != nil {
		value = p.update(p.want, have)
	}
	for i, f := range parts {
		// f.Path stays empty: the engine's Plan.finish finds the entry's sub-field
		// (net0.bridge is spec.net[0].bridge) from the manifest's tags.
		c := ConfigChange{Change: f, Key: p.key, Value: value, Reboot: x.reboot(p, true), CI: p.takes == takesCloudInit}
		if i > 0 {
			c.Key = "" // display only; the first carries the value
		}
		d.Config = append(d.Config, c)
	}
}

// pruneSlots deletes the keys prefix+N a declared list no longer has; row
// says how the guest takes it.
func pruneSlots(prefix string, row param, ps []param, x *diffCtx, d *Diff) {
	declared := map[string]bool{}
	for _, p := range ps {
		declared[p.key] = true
	}
	for _, k := range slices.Sorted(maps.Keys(x.eff)) {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok || declared[k] {
			continue
		}
		if _, err := strconv.Atoi(rest); err != nil {
			continue
		}
		p := row
		p.key = k
		d.managed[k] = &p
		d.Config = append(d.Config, ConfigChange{Change: vocab.Change{Field: k, Path: p.path, From: x.eff[k]}, Key: k, Del: true, Reboot: x.reboot(&p, true)})
	}
}

// diffTable compares a spec's table with a guest.
func diffTable[S any](rows []row[S], s S, fx *fieldCtx, x *diffCtx, d *Diff) {
	for _, r := range rows {
		if r.each == nil {
			if v, ok := r.want(s); ok {
				p := r.param
				p.want = v
				diffParams([]param{p}, x, d)
			}
			continue
		}
		ps := r.each(s, fx)
		diffParams(ps, x, d)
		if r.prune != "" && len(ps) > 0 {
			pruneSlots(r.prune, r.param, ps, x, d)
		}
	}
}

// pendingOf lists the managed keys whose desired value already waits for a
// reboot (those the diff changes again are left out).
func pendingOf(g *Observed, d *Diff) []vocab.Change {
	changed := map[string]bool{}
	for _, c := range d.Config {
		changed[c.Key] = true
	}
	var out []vocab.Change
	for _, k := range slices.Sorted(maps.Keys(d.managed)) {
		if changed[k] {
			continue
		}
		p := d.managed[k]
		if pv, ok := g.Pending[k]; ok {
			out = append(out, vocab.Change{Field: k, Path: p.path, From: p.display(g.Current[k]), To: p.display(pv)})
		} else if g.PendingDelete[k] {
			out = append(out, vocab.Change{Field: k, Path: p.path, From: p.display(g.Current[k])})
		}
	}
	return out
}

// createParamsOf renders a table's create parameters into p.
func createParamsOf(ps []param, p *pve.Params) {
	for _, x := range ps {
		if x.noParam || x.delEmpty && x.want == "" {
			continue
		}
		p.Set(x.key, x.want)
	}
}

// previewOf lists a table's declared fields for the create preview.
func previewOf(ps []param) []vocab.Change {
	var out []vocab.Change
	for _, x := range ps {
		if to := x.wantShown(); to != "" {
			out = append(out, vocab.Change{Field: x.field(), Path: x.path, To: to})
		}
	}
	return out
}

// Comparisons and displays the tables share.

func itoa(n int) string { return strconv.Itoa(n) }

// declared helpers for want functions.
func str(v string) (string, bool) { return v, v != "" }
func positive(n int) (string, bool) {
	return itoa(n), n > 0
}
func intPtr(n *int) (string, bool) {
	if n == nil {
		return "", false
	}
	return itoa(*n), true
}
func boolPtr(b *bool) (string, bool) {
	if b == nil {
		return "", false
	}
	return FormatBool(*b), true
}

// hotplug reads the VM's hotplug setting.
func hotplug(cfg map[string]string) map[string]bool {
	v, ok := cfg["hotplug"]
	if !ok {
		v = "network,disk,usb"
	}
	switch v {
	case "0":
		return map[string]bool{}
	case "1":
		v = "network,disk,usb"
	}
	out := map[string]bool{}
	for _, p := range strings.Split(v, ",") {
		out[strings.TrimSpace(p)] = true
	}
	return out
}

// WithAdoptionLine appends the record line (when line is not "") to a
// description that holds none.
func WithAdoptionLine(desc, line string) string {
	desc = strings.TrimRight(desc, " \n\r\t")
	switch {
	case line == "":
		return desc
	case desc == "":
		return line
	}
	return desc + "\n\n" + line
}
