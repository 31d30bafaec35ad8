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
// guests and guests that could not be read are skipped with a note.
func (es *ExportSnapshot) Export() (out []Exported, skipped []string) {
	names := es.guestNames()
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
		}
		if g.Type == "lxc" {
			out = append(out, es.exportCT(g, names))
		} else {
			out = append(out, es.exportQemu(g, names))
		}
	}
	out = append(out, es.exportNetworks()...)
	sdn, sdnSkipped := es.exportSDN()
	return append(out, sdn...), append(skipped, sdnSkipped...)
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

// guestNames gives every guest of the cluster its manifest name: its own
// when it is a DNS label unique in its kind, else a derived one.
func (es *ExportSnapshot) guestNames() map[int]string {
	kindOf := func(g *Guest) string {
		switch {
		case g.Type == "lxc":
			return KindContainer
		case g.Template:
			return KindTemplate
		}
		return KindVirtualMachine
	}
	count := map[string]int{}
	for _, g := range es.Guests {
		count[kindOf(g)+"/"+dnsLabel(g.Name)]++
	}
	out := map[int]string{}
	for id, g := range es.Guests {
		n := dnsLabel(g.Name)
		if n == "" || count[kindOf(g)+"/"+n] > 1 {
			n = strings.Trim(n+"-"+strconv.Itoa(id), "-")
		}
		out[id] = n
	}
	return out
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
	return slices.DeleteFunc(normalTags(pve.SplitTags(v)), func(t string) bool { return t == OwnerTag || t == AdoptedTag })
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
