package engine

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
)

// Onboarding (issue 16): the manifests of guests proxmops did not make,
// read from the cluster. Every exported field comes from a row of the
// field tables (fields_vm.go, fields_ct.go): the export walks the rows and
// each row path has one reader here (exportQemu, exportCT), so a field the
// engine manages cannot be left out of an export, and the export writes
// what the row compares (Proxmox's values), not a second idea of them.

// ExportSelect says what Observe reads for an export.
type ExportSelect struct {
	Node  string         // only guests and networks of this node ("" all)
	VMIDs func(int) bool // nil: every guest
	// Networks reads the host interfaces of the selected nodes; SDN the
	// zones, vnets and subnets.
	Networks, SDN bool
}

// ExportSnapshot is the cluster as an export reads it.
type ExportSnapshot struct {
	*Snapshot
	sel     ExportSelect
	subnets map[string][]pve.SDNEntry // every vnet's subnets when SDN is read
}

// ObserveForExport reads the selected guests' configurations (and, when
// asked, host networks and SDN) with the engine's own observation.
func (e *Engine) ObserveForExport(ctx context.Context, sel ExportSelect) (*ExportSnapshot, error) {
	snap, err := e.observe(ctx, nil, func(s *Snapshot) *scope {
		sc := newScope()
		for id, g := range s.Guests {
			if sel.wants(g) {
				// The manifest's state comes from the guest's own status:
				// /cluster/resources has pvestatd's report, up to 10 s old.
				sc.guest(id)
				sc.status[id] = true
			}
		}
		if sel.Networks {
			for _, n := range s.Nodes {
				if sel.Node == "" || n == sel.Node {
					sc.kinds.networks[n] = true
				}
			}
		}
		sc.kinds.sdn = sel.SDN
		return sc
	})
	if err != nil {
		return nil, err
	}
	es := &ExportSnapshot{Snapshot: snap, sel: sel, subnets: map[string][]pve.SDNEntry{}}
	if sel.SDN {
		if snap.kinds.sdnErr != nil {
			return nil, snap.kinds.sdnErr
		}
		for _, v := range snap.kinds.vnets {
			subs, err := e.client.SDNPending(ctx, "vnets/"+pve.PathEscape(v.ID)+"/subnets")
			if err != nil {
				return nil, fmt.Errorf("reading the subnets of vnet %s: %w", v.ID, err)
			}
			es.subnets[v.ID] = subs
		}
	}
	return es, nil
}

func (sel ExportSelect) wants(g *Guest) bool {
	return (g.Type == "qemu" || g.Type == "lxc") && (sel.Node == "" || g.Node == sel.Node) && (sel.VMIDs == nil || sel.VMIDs(g.VMID))
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
func (es *ExportSnapshot) Export() (out []Exported, skipped, refused []string) {
	names, refusedNames := es.guestNames()
	ids := make([]int, 0, len(es.Guests))
	for id := range es.Guests {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		g := es.Guests[id]
		if !es.sel.wants(g) {
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
			refused = append(refused, fmt.Sprintf("VMID %d (%s on %s): %s", id, guestNoun(g), g.Node, refusedNames[id]))
			continue
		}
		if g.Type == "lxc" {
			out = append(out, es.exportCT(g, names))
		} else {
			out = append(out, es.exportQemu(g, names))
		}
	}
	out = append(out, es.exportNetworks()...)
	sdn, sdnSkipped := es.exportSDN()
	return append(out, sdn...), append(skipped, sdnSkipped...), refused
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
func (es *ExportSnapshot) guestNames() (names map[int]string, refused map[int]string) {
	byName := map[string][]int{}
	for id, g := range es.Guests {
		k := guestKind(g) + "/" + proxmoxName(g)
		byName[k] = append(byName[k], id)
	}
	names, refused = map[int]string{}, map[int]string{}
	taken := map[string]bool{}
	var derive []int
	for id, g := range es.Guests {
		kind, pn := guestKind(g), proxmoxName(g)
		same := byName[kind+"/"+pn]
		switch {
		case kind == KindContainer && (dnsLabel(pn) != pn || pn == "" || len(same) > 1):
			derive = append(derive, id)
		case kind == KindContainer:
			names[id] = pn
		case pn == "":
			refused[id] = "the guest has no name, and a manifest would name it (a change): give it a name on the cluster"
		case dnsLabel(pn) != pn:
			refused[id] = fmt.Sprintf("its name %q is not a manifest name (lower-case letters, digits and '-', at most 63), and a manifest would rename it: rename it on the cluster (e.g. to %q)", pn, orStr(dnsLabel(pn), "vm-"+strconv.Itoa(id)))
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
			taken[kind+"/"+n] = true
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
		if base == "" || labels[base] > 1 || taken[KindContainer+"/"+base] {
			base = strings.Trim(base+"-"+strconv.Itoa(id), "-")
		}
		n := base
		for i := 2; taken[KindContainer+"/"+n]; i++ {
			n = base + "-" + strconv.Itoa(i)
		}
		names[id], taken[KindContainer+"/"+n] = n, true
	}
	return names, refused
}

// guestKind is the manifest kind that declares g.
func guestKind(g *Guest) string {
	switch {
	case g.Type == "lxc":
		return KindContainer
	case g.Template:
		return KindTemplate
	}
	return KindVirtualMachine
}

// proxmoxName is the name the plan compares with the manifest's: the
// configuration's name (hostname) when it was read, else pvestatd's.
func proxmoxName(g *Guest) string {
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
func guestMeta(g *Guest, name string) manifest.Metadata {
	m := manifest.Metadata{Name: name, Node: g.Node}
	if !g.Owned {
		m.Annotations = map[string]string{manifest.AnnotationAdopt: "true"}
	}
	return m
}

// exportTags reads a tags value without proxmops' own tags.
func exportTags(v string) []string {
	return slices.DeleteFunc(pve.SplitTags(v), func(t string) bool { return strings.EqualFold(t, OwnerTag) || strings.EqualFold(t, AdoptedTag) })
}

// readers of both tables

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
	s, err := manifest.ParseSize(FormatSize(b))
	return s, err == nil
}
