package export

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// The manifests of guests proxmops did not make, read from the cluster.
// Every exported field comes from a row of the guest field tables
// (pvefields.FieldRows): the export walks the rows and each row path has one
// reader here (exportQemu, exportCT), so a field the engine manages cannot
// be left out of an export, and the export writes what the row compares
// (Proxmox's values, read with the tables' own readings), not a second
// idea of them.

// cluster is the cluster as an export reads it.
type cluster struct {
	*engine.Selected
}

// Exported is one manifest an export writes.
type Exported struct {
	Resource manifest.Resource
	// Dir is the layout folder: vms, templates, containers, networks, sdn.
	Dir string
	// File is the file name inside Dir.
	File string
	// Notes say what could not be exported as it is, for the file's head
	// comment and the report.
	Notes []string
	// Comments are lines added under a field of the document (a password
	// to fill in), by field path.
	Comments map[string]string
}

// Export builds the manifests of the selected guests (and networks, SDN).
// Guests proxmops does not own carry proxmops.dev/adopt: "true"; locked
// guests and guests that could not be read are skipped with a note. A VM
// or template whose name no manifest can keep (guestNames) is refused,
// with the reason: its manifest would plan a rename.
func (es *cluster) Export() (out []Exported, skipped, refused []string) {
	names, refusedNames := es.guestNames()
	ids := make([]int, 0, len(es.Guests))
	for id := range es.Guests {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		g := es.Guests[id]
		if !es.Selection.Wants(g) {
			continue
		}
		switch {
		case g.Lock != "":
			skipped = append(skipped, fmt.Sprintf("VMID %d (%s): locked (%s)", id, g.Name, g.Lock))
			continue
		case !g.Read:
			skipped = append(skipped, fmt.Sprintf("VMID %d (%s): configuration not read: %v", id, g.Name, g.ReadErr))
			continue
		case g.Type == "lxc" && g.Template:
			skipped = append(skipped, fmt.Sprintf("VMID %d (%s): a container template, which no manifest kind declares", id, g.Name))
			continue
		case refusedNames[id] != "":
			refused = append(refused, fmt.Sprintf("VMID %d (%s on %s): %s", id, engine.GuestNoun(g), g.Node, refusedNames[id]))
			continue
		}
		if g.Type == "lxc" {
			out = append(out, es.exportCT(g, names))
		} else {
			out = append(out, es.exportQemu(g, names))
		}
	}
	out = append(out, es.exportNetworks()...)
	pools, poolSkipped := es.exportPools()
	out = append(out, pools...)
	sdn, sdnSkipped := es.exportSDN()
	return append(out, sdn...), append(append(skipped, poolSkipped...), sdnSkipped...), refused
}

var notLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// dnsLabel turns a Proxmox name into a manifest name.
func dnsLabel(s string) string {
	s = strings.Trim(notLabel.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 63 {
		s = strings.Trim(s[:63], "-")
	}
	return s
}

// guestNames gives every guest of the cluster its manifest name. A VM's or
// a template's manifest name is its Proxmox name (the name row compares
// them), so one whose name is not a manifest name, or is shared with
// another guest of its kind, has no name an export can write without the
// plan renaming it: it is refused with the reason. A container keeps its
// Proxmox hostname in spec.hostname, so its manifest name is derived when
// need be (its own when a unique DNS label, else with its VMID).
func (es *cluster) guestNames() (names map[int]string, refused map[int]string) {
	byName := map[string][]int{}
	for id, g := range es.Guests {
		k := vocab.Key(engine.GuestKind(g), proxmoxName(g))
		byName[k] = append(byName[k], id)
	}
	names, refused = map[int]string{}, map[int]string{}
	taken := map[string]bool{}
	var derive []int
	for id, g := range es.Guests {
		kind, pn := engine.GuestKind(g), proxmoxName(g)
		same := byName[vocab.Key(kind, pn)]
		switch {
		case kind == engine.KindContainer && (dnsLabel(pn) != pn || pn == "" || len(same) > 1):
			derive = append(derive, id)
		case kind == engine.KindContainer:
			names[id] = pn
		case pn == "":
			refused[id] = "the guest has no name, and a manifest would name it (a change): give it a name on the cluster"
		case dnsLabel(pn) != pn:
			refused[id] = fmt.Sprintf("its name %q is not a manifest name (lower-case letters, digits and '-', at most 63), and a manifest would rename it: rename it on the cluster (e.g. to %q)", pn, cmp.Or(dnsLabel(pn), "vm-"+strconv.Itoa(id)))
		case len(same) > 1:
			slices.Sort(same)
			var where []string
			for _, o := range same {
				where = append(where, fmt.Sprintf("VMID %d on %s", o, es.Guests[o].Node))
			}
			refused[id] = fmt.Sprintf("%d guests of kind %s are named %q (%s), and manifest names are unique per kind: rename all but one on the cluster", len(same), kind, pn, strings.Join(where, ", "))
		default:
			names[id] = pn
		}
		if n, ok := names[id]; ok {
			taken[vocab.Key(kind, n)] = true
		}
	}
	slices.Sort(derive)
	labels := map[string]int{}
	for _, id := range derive {
		labels[dnsLabel(es.Guests[id].Name)]++
	}
	for _, id := range derive {
		// g.Name is "CT<vmid>" for a container without a hostname (vmstatus).
		base := dnsLabel(es.Guests[id].Name)
		if base == "" || labels[base] > 1 || taken[vocab.Key(engine.KindContainer, base)] {
			base = strings.Trim(base+"-"+strconv.Itoa(id), "-")
		}
		n := base
		for i := 2; taken[vocab.Key(engine.KindContainer, n)]; i++ {
			n = base + "-" + strconv.Itoa(i)
		}
		names[id], taken[vocab.Key(engine.KindContainer, n)] = n, true
	}
	return names, refused
}

// proxmoxName is the name the plan compares with the manifest's: the
// configuration's name (hostname) when it was read, else pvestatd's.
func proxmoxName(g *engine.Guest) string {
	key := "name"
	if g.Type == "lxc" {
		key = "hostname"
	}
	if g.Read {
		return g.Effective[key]
	}
	return g.Name
}

// guestMeta is the metadata of an exported guest: its tags without the
// ownership tag, and the adoption annotation unless proxmops owns it.
func guestMeta(g *engine.Guest, name string) manifest.Metadata {
	m := manifest.Metadata{Name: name, Node: g.Node}
	if !g.Owned {
		m.Annotations = map[string]string{manifest.AnnotationAdopt: "true"}
	}
	return m
}

// exportTags reads a tags value without proxmops' own tags.
func exportTags(v string) []string {
	return slices.DeleteFunc(pve.SplitTags(v), func(t string) bool {
		return strings.EqualFold(t, engine.OwnerTag) || strings.EqualFold(t, engine.AdoptedTag)
	})
}

// readers of both tables

// guestRead is what reading a VM and reading a container share: the
// guest's effective config, and the metadata, notes and comments written
// from it.
type guestRead struct {
	eff      map[string]string
	meta     manifest.Metadata
	notes    []string
	comments map[string]string
}

func (x *guestRead) note(format string, a ...any) {
	x.notes = append(x.notes, fmt.Sprintf(format, a...))
}

func (x *guestRead) int(k string) int {
	n, _ := atoiOK(x.eff[k])
	return n
}

// intP is k when it is set to a number, else nil.
func (x *guestRead) intP(k string) *int {
	if v, ok := present(x.eff, k); ok {
		if n, ok := atoiOK(v); ok {
			return &n
		}
	}
	return nil
}

// flag is k as a boolean when it is set, else nil.
func (x *guestRead) flag(k string) *bool {
	if v, ok := present(x.eff, k); ok {
		return boolP(pvefields.ParseBool(v))
	}
	return nil
}

// startup is the startup key when the manifest writes it back the same;
// another form is noted and left out.
func (x *guestRead) startup() *manifest.Startup {
	v, ok := present(x.eff, "startup")
	if !ok {
		return nil
	}
	s, same := startupOf(v)
	if !same {
		x.note("startup %q is not in the form the manifest writes (order=N,up=N,down=N): left out", v)
		return nil
	}
	return s
}

// slots lists the keys prefix+N (net0, mp1, ipconfig2) in order, with N.
func (x *guestRead) slots(prefix string) (keys []string, ns []int) {
	for _, k := range slices.Sorted(maps.Keys(x.eff)) {
		rest, ok := strings.CutPrefix(k, prefix)
		if n, err := strconv.Atoi(rest); ok && err == nil {
			keys, ns = append(keys, k), append(ns, n)
		}
	}
	return keys, ns
}

// exported is the read manifest, filed in its kind's folder.
func (x *guestRead) exported(kind manifest.Kind, r manifest.Resource) Exported {
	return Exported{Dir: kind.Info().Folder, File: x.meta.Name + ".yaml", Notes: x.notes, Comments: x.comments, Resource: r}
}

// readRows calls the reader of each of kind's field rows; a row without a
// reader is a programming error (TestEveryFieldRowIsExported).
func readRows[X any](kind string, readers map[string]func(X), x X) {
	for _, k := range pvefields.FieldRows(kind) {
		read, ok := readers[k]
		if !ok {
			panic("export: no export reader for " + kind + " field " + k)
		}
		read(x)
	}
}

func present(eff map[string]string, k string) (string, bool) {
	v, ok := eff[k]
	return v, ok && v != ""
}

func atoiOK(v string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return n, err == nil
}

func boolP(b bool) *bool { return &b }

// startupOf reads a startup value; ok is false when the manifest's form
// would not write it back the same (Startup.String always leads with
// order=).
func startupOf(v string) (*manifest.Startup, bool) {
	ps := pve.ParsePropertyString(v, "order")
	var s manifest.Startup
	for k, dst := range map[string]*int{"order": &s.Order, "up": &s.Up, "down": &s.Down} {
		if x, ok := ps.Values[k]; ok {
			n, ok := atoiOK(x)
			if !ok {
				return nil, false
			}
			*dst = n
		}
	}
	return &s, s.String() == v
}

// sizeOf renders a size in bytes as the manifest writes it.
func sizeOf(b int64) (manifest.Size, bool) {
	if b <= 0 {
		return manifest.Size{}, false
	}
	s, err := manifest.ParseSize(pvefields.FormatSize(b))
	return s, err == nil
}
