package manifest

import (
	"fmt"
	"slices"
	"strconv"
)

// Set is a loaded tree of manifests with its cross-document checks done and
// its references resolved.
type Set struct {
	// Resources in file order, then document order.
	Resources []Resource
	// Files is the number of manifest files read (0 when built by NewSet).
	Files int

	byKind map[Kind]map[string]Resource
	byVMID map[int]Resource
}

// NewSet runs the cross-document checks on resources that each passed
// ParseFile: unique (kind, name), unique VMIDs across guests, unique network
// interfaces per node and volumes per storage, references resolved (or
// marked External), and rules that span documents (vnet tags by zone type,
// linked clones on the template's node). It returns the set even when it
// reports errors; the first of duplicate resources is the one indexed.
func NewSet(resources []Resource) (*Set, ErrorList) {
	s := &Set{
		Resources: resources,
		byKind:    map[Kind]map[string]Resource{},
		byVMID:    map[int]Resource{},
	}
	var errs ErrorList
	fail := func(r Resource, p, format string, args ...any) {
		o := objectOf(r)
		line, col := o.locate(p)
		errs = append(errs, Error{File: o.Origin.File, Line: line, Column: col, Path: p, Message: fmt.Sprintf(format, args...)})
	}
	where := func(r Resource) string {
		o := r.Source()
		return o.File + ":" + strconv.Itoa(o.Line)
	}
	ifaces := map[string]Resource{}  // node/iface -> Network
	volumes := map[string]Resource{} // node/volume -> Iso or ContainerTemplate
	for _, r := range resources {
		m := s.byKind[r.Kind()]
		if m == nil {
			m = map[string]Resource{}
			s.byKind[r.Kind()] = m
		}
		if first, dup := m[r.Name()]; dup {
			fail(r, "metadata.name", "%s %q is already declared at %s", r.Kind(), r.Name(), where(first))
			continue
		}
		m[r.Name()] = r
		if id := r.VMID(); id != 0 {
			if first, dup := s.byVMID[id]; dup {
				fail(r, "spec.vmid", "VMID %d is already used by %s %q at %s", id, first.Kind(), first.Name(), where(first))
			} else {
				s.byVMID[id] = r
			}
		}
		switch v := r.(type) {
		case *Network:
			k := v.Node() + "/" + v.InterfaceName()
			if first, dup := ifaces[k]; dup {
				fail(r, "spec", "interface %s on node %s is already declared by Network %q at %s", v.InterfaceName(), v.Node(), first.Name(), where(first))
			} else {
				ifaces[k] = r
			}
		case volumeKind:
			k := v.Node() + "/" + v.VolumeID()
			if first, dup := volumes[k]; dup {
				fail(r, "spec", "volume %s on node %s is already declared by %s %q at %s", v.VolumeID(), v.Node(), first.Kind(), first.Name(), where(first))
			} else {
				volumes[k] = r
			}
		}
	}
	volumeOwner := map[string]Resource{} // volume ID -> Iso/ContainerTemplate, any node
	for _, r := range resources {
		switch v := r.(type) {
		case volumeKind:
			volumeOwner[v.VolumeID()] = r
		case *BackupJob:
			v.addTaggedGuests(resources)
		}
	}
	for _, r := range resources {
		o := objectOf(r)
		for i := range o.Refs {
			ref := &o.Refs[i]
			target := s.resolve(r, ref, ifaces, volumeOwner)
			if ref.DependsOn && target == nil {
				fail(r, ref.Path, "%s/%s is not declared in the manifests", ref.Kind, ref.Name)
			}
			if ref.guest != nil && target == nil {
				fail(r, ref.Path, "%s", ref.guest.refusal(s, ref.Name))
			}
			ref.External = target == nil
			if target != nil {
				ref.Kind, ref.Name = target.Kind(), target.Name()
			}
			s.checkRef(r, ref, target, fail)
		}
		// A storage only on the cluster is no reference (a guest's disk
		// names one anyway); only a declared Storage gives an edge.
		o.Refs = slices.DeleteFunc(o.Refs, func(ref Ref) bool { return ref.Kind == KindStorage && ref.External })
	}
	s.checkDependencyCycles(fail)
	return s, errs
}

// resolve finds the declared resource a reference names, or nil.
func (s *Set) resolve(from Resource, ref *Ref, ifaces map[string]Resource, volumeOwner map[string]Resource) Resource {
	if ref.DependsOn {
		return s.Get(ref.Kind, ref.Name)
	}
	if ref.guest != nil {
		if found := ref.guest.find(s, ref.Name); len(found) == 1 || len(found) > 1 && !ref.guest.unique {
			return found[0]
		}
		return nil // none, or ambiguous: refused by refusal
	}
	if ref.Volume {
		if t, ok := volumeOwner[ref.Name]; ok && t.Kind() == ref.Kind {
			return t
		}
		return nil
	}
	if ref.Kind == KindNetwork {
		// A bridge or port: a Network on the same node, or an SDN vnet.
		if n, ok := ifaces[from.Node()+"/"+ref.Name]; ok {
			return n
		}
		if from.Kind() != KindNetwork {
			if v := s.Get(KindSdnVnet, ref.Name); v != nil {
				return v
			}
		}
		return nil
	}
	return s.Get(ref.Kind, ref.Name)
}

func (s *Set) checkRef(from Resource, ref *Ref, target Resource, fail func(Resource, string, string, ...any)) {
	if target == nil {
		return
	}
	switch t := target.(type) {
	case *Template:
		vm, ok := from.(*VirtualMachine)
		if ok && vm.Spec.FromTemplate != nil && vm.Spec.FromTemplate.Linked && vm.Node() != t.Node() {
			fail(from, ref.Path, "a linked clone must be on its template's node (%s), not %s", t.Node(), vm.Node())
		}
	case *Network:
		if from.Kind() != KindNetwork && t.Spec.Type != "bridge" {
			fail(from, ref.Path, "%s is a %s interface, not a bridge", t.InterfaceName(), t.Spec.Type)
		}
	case *SdnZone:
		vnet := from.(*SdnVnet)
		switch t.Spec.Type {
		case "simple":
			if vnet.Spec.Tag != 0 {
				fail(from, "spec.tag", "vnets of the simple zone %s take no tag", t.Name())
			}
		case "vlan", "qinq":
			if vnet.Spec.Tag == 0 {
				fail(from, "spec", "vnets of the %s zone %s need a tag (1-4094)", t.Spec.Type, t.Name())
			} else if vnet.Spec.Tag > 4094 {
				fail(from, "spec.tag", "a VLAN tag is 1-4094 in the %s zone %s", t.Spec.Type, t.Name())
			}
		case "vxlan", "evpn":
			if vnet.Spec.Tag == 0 {
				fail(from, "spec", "vnets of the %s zone %s need a tag (the VXLAN ID)", t.Spec.Type, t.Name())
			}
		}
	}
}

// Get returns the resource of a kind and name, or nil.
func (s *Set) Get(kind Kind, name string) Resource {
	return s.byKind[kind][name]
}

// OfKind returns the resources of one kind in load order.
func (s *Set) OfKind(kind Kind) []Resource {
	var out []Resource
	for _, r := range s.Resources {
		if r.Kind() == kind {
			out = append(out, r)
		}
	}
	return out
}

// Counts returns the number of resources per kind.
func (s *Set) Counts() map[Kind]int {
	out := map[Kind]int{}
	for _, r := range s.Resources {
		out[r.Kind()]++
	}
	return out
}

func ofType[T Resource](s *Set) []T {
	var out []T
	for _, r := range s.Resources {
		if v, ok := r.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// VirtualMachines returns the VirtualMachine resources in load order.
func (s *Set) VirtualMachines() []*VirtualMachine { return ofType[*VirtualMachine](s) }

// Templates returns the Template resources in load order.
func (s *Set) Templates() []*Template { return ofType[*Template](s) }

// Isos returns the Iso resources in load order.
func (s *Set) Isos() []*Iso { return ofType[*Iso](s) }

// Containers returns the Container resources in load order.
func (s *Set) Containers() []*Container { return ofType[*Container](s) }

// Networks returns the Network resources in load order.
func (s *Set) Networks() []*Network { return ofType[*Network](s) }

// ContainerTemplates returns the ContainerTemplate resources in load order.
func (s *Set) ContainerTemplates() []*ContainerTemplate { return ofType[*ContainerTemplate](s) }

// SdnZones returns the SdnZone resources in load order.
func (s *Set) SdnZones() []*SdnZone { return ofType[*SdnZone](s) }

// SdnVnets returns the SdnVnet resources in load order.
func (s *Set) SdnVnets() []*SdnVnet { return ofType[*SdnVnet](s) }

// guestRule is how a reference names a declared guest by its name alone
// (a backup job's or an HA rule's guests), said once for every such
// reference: which kinds the name may be, and what an unknown or an
// ambiguous name is told.
type guestRule struct {
	kinds []Kind // in the order they are looked for
	// unique refuses a name two of the kinds declare; otherwise the first
	// found is meant.
	unique bool
	// missing is the refusal of a name none declares (the name its
	// argument).
	missing string
}

var (
	// anyGuest: a VirtualMachine, Container or Template.
	anyGuest = &guestRule{kinds: GuestKinds(), missing: "no VirtualMachine, Container or Template %s is declared in the manifests"}
	// haGuest: a VirtualMachine or Container (no template is an HA
	// resource); both kinds under one name refuse it.
	haGuest = &guestRule{kinds: kindsWhere(func(i KindInfo) bool { return i.Guest && i.Kind != KindTemplate }), unique: true,
		missing: "no VirtualMachine or Container %q is declared in the manifests"}
)

// ref is a reference to the guest named name; its Kind is VirtualMachine
// until resolved.
func (g *guestRule) ref(name, path string, rel Relation) Ref {
	return Ref{Kind: KindVirtualMachine, Name: name, Path: path, Relation: rel, guest: g}
}

// find lists the declared guests named name, in the rule's kind order.
func (g *guestRule) find(s *Set, name string) []Resource {
	var out []Resource
	for _, k := range g.kinds {
		if t := s.Get(k, name); t != nil {
			out = append(out, t)
		}
	}
	return out
}

// refusal says why name resolves to no guest.
func (g *guestRule) refusal(s *Set, name string) string {
	if found := g.find(s, name); len(found) > 1 {
		return fmt.Sprintf("both a %s and a %s are named %q: rename one", found[0].Kind(), found[1].Kind(), name)
	}
	return fmt.Sprintf(g.missing, name)
}
