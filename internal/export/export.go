// Package export writes manifests for what is already on a Proxmox cluster
// (onboarding): one file per guest in the layout users keep
// (vms/, templates/, containers/, and networks/ and sdn/ on request), in
// Proxmox's values, each guest proxmops does not own annotated
// proxmops.dev/adopt: "true". The cluster is read with the engine's own
// observation and every guest field comes from a row of the field tables
// the engine plans with, read with their readings (internal/pvefields;
// guests.go, qemu.go, container.go, network.go), so a plan of the exported tree against the
// same cluster shows nothing but the adoptions.
package export

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing/fstest"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// ErrOptions marks an error in the options (a bad --vmid, --kind or
// --node), as opposed to one reading the cluster.
var ErrOptions = errors.New("invalid export options")

// Options select what is exported (the flags of `proxmops export`).
type Options struct {
	Node string // only this node's guests and interfaces ("" all)
	// VMIDs is a list such as "100,105-110"; All selects every guest.
	// One of them is needed when a guest kind is exported.
	VMIDs string
	All   bool
	// Kinds lists the kinds to export (names as in manifests, case-folded,
	// plural and short forms accepted); empty means the guest kinds.
	Kinds []string
}

// GuestKinds are exported when no kind is named.
var GuestKinds = manifest.GuestKinds()

// exportable is true for a kind export writes (its row has a folder).
func exportable(k manifest.Kind) bool { return k.Info().Folder != "" }

// kindsNamed returns the kinds --kind's word selects: a kind export writes
// by its name or one of its aliases (manifest.KindTable).
func kindsNamed(w string) []manifest.Kind {
	return slices.DeleteFunc(manifest.KindsNamed(w), func(k manifest.Kind) bool { return !exportable(k) })
}

// KindWords names the kinds export writes and the words that select
// several of them, for --kind's help and errors.
func KindWords() string {
	var names []string
	groups := map[string][]string{}
	var shared []string
	for _, info := range manifest.KindTable() {
		if !exportable(info.Kind) {
			continue
		}
		names = append(names, string(info.Kind))
		for _, a := range info.Aliases {
			if len(groups[a]) == 1 {
				shared = append(shared, a)
			}
			groups[a] = append(groups[a], string(info.Kind))
		}
	}
	out := strings.Join(names, ", ")
	for _, a := range shared {
		out += "; " + a + " for " + strings.Join(groups[a], " and ")
	}
	return out
}

// ParseKinds reads --kind values (repeated or comma-separated).
func ParseKinds(list []string) ([]manifest.Kind, error) {
	var out []manifest.Kind
	add := func(k manifest.Kind) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	for _, item := range list {
		for _, w := range strings.Split(item, ",") {
			w = strings.TrimSpace(w)
			if w == "" {
				continue
			}
			ks := kindsNamed(w)
			if len(ks) == 0 {
				return nil, fmt.Errorf("--kind %q: not a kind export writes (%s)", w, KindWords())
			}
			for _, k := range ks {
				add(k)
			}
		}
	}
	if len(out) == 0 {
		out = append(out, GuestKinds...)
	}
	return out, nil
}

// ParseVMIDs reads a VMID list such as "100,105-110".
func ParseVMIDs(list string) (func(int) bool, error) {
	type span struct{ lo, hi int }
	var spans []span
	for _, part := range strings.Split(list, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err != nil || a < 100 || b < a {
			return nil, fmt.Errorf("--vmid %q: %q is not a VMID (100 or more) nor a range such as 105-110", list, part)
		}
		spans = append(spans, span{a, b})
	}
	if len(spans) == 0 {
		return nil, fmt.Errorf("--vmid %q names no VMID", list)
	}
	return func(id int) bool {
		return slices.ContainsFunc(spans, func(s span) bool { return id >= s.lo && id <= s.hi })
	}, nil
}

// File is one written manifest.
type File struct {
	Path string // slash-separated, relative to the output directory
	Data []byte
	Kind manifest.Kind
	Name string
	// Notes say what could not be exported as it is (also in the file's
	// head comment).
	Notes []string
}

// Result is what an export read and wrote.
type Result struct {
	Files []File
	// Skipped lists the guests left out, with the reason.
	Skipped []string
	// Refused lists the guests whose Proxmox name no manifest can keep
	// (not a manifest name, or shared within a kind): a manifest of
	// theirs would plan a rename, so none is written.
	Refused []string
}

// Run reads the cluster through client and renders the manifests. The
// rendered tree is validated as `proxmops validate` does: an export that
// does not validate is an error.
func Run(ctx context.Context, client *pve.Client, o Options) (*Result, error) {
	kinds, err := ParseKinds(o.Kinds)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	sel := engine.Selection{Node: o.Node}
	guests := slices.ContainsFunc(kinds, func(k manifest.Kind) bool { return k.Info().Guest })
	switch {
	case o.All && o.VMIDs != "":
		return nil, fmt.Errorf("%w: --vmid and --all exclude each other", ErrOptions)
	case guests && !o.All && o.VMIDs == "":
		return nil, fmt.Errorf("%w: name the guests to export: --vmid LIST (e.g. 100,105-110) or --all", ErrOptions)
	case o.VMIDs != "":
		if sel.VMIDs, err = ParseVMIDs(o.VMIDs); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrOptions, err)
		}
	}
	if !guests {
		sel.VMIDs = func(int) bool { return false }
	}
	sel.Networks = slices.Contains(kinds, manifest.KindNetwork)
	sel.SDN = slices.Contains(kinds, manifest.KindSdnZone) || slices.Contains(kinds, manifest.KindSdnVnet)
	sel.Pools = slices.Contains(kinds, manifest.KindPool)
	eng := engine.New(client, engine.Options{})
	read, err := eng.ObserveSelection(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster: %w", err)
	}
	if o.Node != "" && !slices.Contains(read.Nodes, o.Node) {
		return nil, fmt.Errorf("%w: --node %s: no such node in the cluster (nodes: %s)", ErrOptions, o.Node, strings.Join(read.Nodes, ", "))
	}
	exported, skipped, refused := (&cluster{read}).Export()
	if guests {
		if err := exportGuestHA(ctx, client, exported); err != nil {
			skipped = append(skipped, "spec.ha of the guests: "+err.Error())
		}
	}
	// A backup job names the guests this export writes.
	guestNames := map[int]string{}
	for _, ex := range exported {
		if ex.Resource.VMID() > 0 && slices.Contains(kinds, ex.Resource.Kind()) {
			guestNames[ex.Resource.VMID()] = ex.Resource.Name()
		}
	}
	colls, collRefused, err := exportCollections(ctx, eng, kinds, guestNames)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster: %w", err)
	}
	exported = append(exported, colls...)
	res := &Result{Skipped: skipped, Refused: append(refused, collRefused...)}
	for _, ex := range exported {
		k := ex.Resource.Kind()
		if !slices.Contains(kinds, k) {
			continue
		}
		data, err := render(ex)
		if err != nil {
			return nil, fmt.Errorf("rendering %s/%s: %w", k, ex.Resource.Name(), err)
		}
		res.Files = append(res.Files, File{Path: ex.Dir + "/" + ex.File, Data: data, Kind: k, Name: ex.Resource.Name(), Notes: ex.Notes})
	}
	sort.Slice(res.Files, func(i, j int) bool { return res.Files[i].Path < res.Files[j].Path })
	if _, err := res.Load(); err != nil {
		return nil, fmt.Errorf("the exported manifests do not validate (please report this):\n%w", err)
	}
	return res, nil
}

// Load loads the rendered tree as the loader of a repository does.
func (r *Result) Load() (*manifest.Set, error) {
	fsys := fstest.MapFS{}
	for _, f := range r.Files {
		fsys[f.Path] = &fstest.MapFile{Data: f.Data, Mode: 0o644}
	}
	return manifest.LoadFS(fsys, ".")
}

// Check plans the exported tree against the cluster as a first sync
// would, and lists what it would do besides adopting: for a faithful
// export of unowned guests, nothing. Networks and SDN objects proxmops
// does not own are Conflicts (they have no adoption) and are listed too.
func (r *Result) Check(ctx context.Context, client *pve.Client) ([]string, error) {
	set, err := r.Load()
	if err != nil {
		return nil, err
	}
	p, err := engine.New(client, engine.Options{}).Plan(ctx, engine.DesiredFromSet(set, nil), "")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range p.Actions {
		switch {
		case set.Get(manifest.Kind(a.Kind), a.Name) == nil:
			// Not one of the exported manifests: a partial export is a part
			// of the repository, and the owned guests it left out are not
			// leaving it.
		case a.Adopt && a.Action == vocab.ActionUpdate && onlyTags(a.Changes):
		case a.Adopt && a.Action == vocab.ActionCreate:
			// An adoption that makes the object again under proxmops' key
			// (a backup job, which Proxmox cannot rename).
		case a.Action == vocab.ActionNone && a.Status == vocab.StatusSynced:
		default:
			out = append(out, fmt.Sprintf("%s/%s: %s: %s", a.Kind, a.Name, a.Action, a.Reason))
			for _, c := range a.Changes {
				if (c.Field != "tags" && c.Field != engine.OwnershipField && !engine.SecretChange(c)) || !a.Adopt {
					out = append(out, fmt.Sprintf("  %s: %s -> %s", c.Label(), c.From, c.To))
				}
			}
		}
	}
	return out, nil
}

// onlyTags: an adoption that only adds proxmops' marks (a guest's tags, a
// firewall object's comment).
func onlyTags(cs []vocab.Change) bool {
	for _, c := range cs {
		if c.Field != "tags" && c.Field != engine.OwnershipField && !engine.SecretChange(c) {
			return false
		}
	}
	return true
}
