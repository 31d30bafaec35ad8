package engine

import (
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// OwnerTag marks guests proxmops owns.
const OwnerTag = "managed-by-proxmops"

// AdoptedTag marks, beside OwnerTag, a guest proxmops adopted rather than
// made. It records on the guest itself, for the daemon and the CLI alike,
// that the creation-time choices found at adoption (a larger disk, a
// template, a storage) are accepted as they are: they are reported, never
// failed, replaced nor shrunk, whether the adoption came from the
// annotation, `proxmops adopt` or the UI's button (adopt.go).
const AdoptedTag = "adopted-by-proxmops"

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

// DiskSpec is one disk, keyed by slot.
type DiskSpec struct {
	Slot    string // scsi0, virtio1, ...
	Storage string
	Size    int64 // bytes; 0 keeps what the image or template brings
	// Options are extra property-string keys (discard=on, ssd=1, ...),
	// compared only when declared.
	Options map[string]string
	// Format is the image format a new disk is allocated in (raw, qcow2,
	// vmdk; file storages); creation-only, read back from the volume name.
	Format string
}

// NICSpec is one network device, keyed by slot.
type NICSpec struct {
	Slot     string // net0, net1, ...
	Model    string // virtio (default), e1000, ...
	Bridge   string
	Tag      *int
	Firewall *bool
	MAC      string // compared only when declared
	MTU      *int
	Rate     string
	// Extra are further property-string keys (queues, link_down), compared
	// only when declared.
	Extra map[string]string
}

// CloudInitSpec are Proxmox's native cloud-init settings.
type CloudInitSpec struct {
	User     string
	Password string // resolved secret; "" when not declared
	// PasswordSet says a password is declared even if it resolved empty.
	PasswordSet  bool
	SSHKeys      []string
	Nameserver   string
	Searchdomain string
	// Storage holds the cloud-init drive ("" uses the first disk's).
	Storage string
	// Upgrade maps to ciupgrade when set.
	Upgrade *bool
	// IPConfigs maps a NIC slot (net0) to its ipconfig value ("ip=dhcp",
	// "gw=10.0.0.1,ip=10.0.0.5/24").
	IPConfigs map[string]string
}

// TemplateRef names the template a VM is cloned from.
type TemplateRef struct {
	Name   string
	Linked bool
}

// QemuHW is the QEMU hardware a VirtualMachine and a Template share
// (manifest.QemuHardware). It is embedded in VMSpec, TemplateSpec and
// guestSpec, so the field table reads it without a copy per kind.
type QemuHW struct {
	Cores   int
	Sockets int
	Memory  int // MiB
	CPU     string
	OSType  string
	BIOS    string
	Machine string
	SCSIHW  string
}
