package engine

import (
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Meta is what every desired resource carries.
type Meta struct {
	Kind string
	Name string
	Node string
	Tags []string
	Sync vocab.SyncPolicy
	// Adopt (annotation proxmops.dev/adopt) takes ownership of the
	// unowned guest at the resource's VMID (adopt.go).
	Adopt bool
	File  string // manifest file, for reports
	// Invalid, when set, says why the resource cannot be planned (an
	// unreadable secret, say): it is reported Failed and not touched.
	Invalid string
	// DependsOn lists the keys ("Kind/name") of metadata.dependsOn: the
	// resource is created or started once they are in sync and healthy,
	// and stopped or deleted before them (waits.go).
	DependsOn []string
	// Needs lists the keys of the declared resources the manifest's spec
	// refers to (manifest.Dependencies' references: a clone's template, a
	// VM's Iso, a container's template), which its action comes after.
	Needs []string

	// paths maps the manifest's fields to their paths (Change.Path).
	paths *pvefields.Paths
}

// Desired is the state the repository asks for, already validated and
// normalised (sizes in bytes, NIC and disk slots assigned): the specs of
// every kind (VMSpec, ContainerSpec, ...), filed by the kind their Meta
// names. DesiredFromSet fills it from manifests; Add from Go.
type Desired struct {
	specs map[string][]Spec
	// alsoList are storages (node, storage) to list besides those the
	// resources need (Delete uses it to see a volume it is asked to remove).
	alsoList [][2]string
	// former is the metadata.dependsOn of resources an earlier revision
	// declared and this one does not (WithFormer): pruned, they still go
	// before what they depended on.
	former map[string][]string
}

// Spec is one desired resource of any kind; every spec embeds Meta.
type Spec interface{ meta() *Meta }

func (m *Meta) meta() *Meta { return m }

// Add adds desired resources, each to the kind its Meta names.
func (d *Desired) Add(specs ...Spec) {
	if d.specs == nil {
		d.specs = map[string][]Spec{}
	}
	for _, s := range specs {
		k := s.meta().Kind
		d.specs[k] = append(d.specs[k], s)
	}
}

// Specs lists the desired resources of a kind, in manifest order.
func (d *Desired) Specs(kind string) []Spec { return d.specs[kind] }

// without is a copy of d without the resource kind/name, and that
// resource (nil when d has none).
func (d *Desired) without(kind, name string) (*Desired, Spec) {
	out := &Desired{specs: map[string][]Spec{}, alsoList: d.alsoList, former: d.former}
	var found Spec
	for k, list := range d.specs {
		for _, s := range list {
			if k == kind && s.meta().Name == name {
				found = s
				continue
			}
			out.specs[k] = append(out.specs[k], s)
		}
	}
	return out, found
}

// specsOf lists the desired resources of a kind as their spec type. A spec
// of another type filed under the kind is a programming error: it panics.
func specsOf[T Spec](d *Desired, kind string) []T {
	list := d.specs[kind]
	out := make([]T, 0, len(list))
	for _, s := range list {
		out = append(out, s.(T))
	}
	return out
}

// ImageSpec says where a boot disk comes from: a URL downloaded to an
// import-capable storage, or a volume already on a storage.
type ImageSpec struct {
	URL    string // http(s) URL, or "" when Volume is set
	Volume string // "local:import/debian.qcow2"
	// Storage receives the download (must allow "import"); "" picks one.
	Storage string
	// FileName overrides the name under which the image is stored.
	FileName string
	// Format is qcow2, raw or vmdk; "" takes it from the file name.
	Format string
	// Checksum of the download, "algo:value" ("" for none).
	ChecksumAlgo  string
	ChecksumValue string
}

// TemplateRef names the template a VM is cloned from.
type TemplateRef struct {
	Name   string
	Linked bool
}

// OwnerTag marks guests proxmops owns; AdoptedTag, beside it, a guest
// proxmops adopted (pvefields).
const (
	OwnerTag   = pvefields.OwnerTag
	AdoptedTag = pvefields.AdoptedTag
)

// The guests' component specs are the field tables' input (pvefields).
type (
	DiskSpec      = pvefields.DiskSpec
	NICSpec       = pvefields.NICSpec
	CloudInitSpec = pvefields.CloudInitSpec
	QemuHW        = pvefields.QemuHW
	MountSpec     = pvefields.MountSpec
	CTNICSpec     = pvefields.CTNICSpec
)
