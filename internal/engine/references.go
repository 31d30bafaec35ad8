package engine

import (
	"strings"

	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// References are the things on the cluster the manifests rely on without
// declaring them: the nodes they name, the storages they put volumes on
// (with the content type each needs), the bridges guests attach to and the
// SDN zones declared VNets live in. `proxmops check` looks each up.
type References struct {
	// Nodes maps a node to the first resource that names it.
	Nodes map[string]string
	// Storages are the uses of storages, in manifest order.
	Storages []StorageUse
	// Bridges are the bridges guests attach to that no Network or SdnVnet
	// manifest declares: they must exist already.
	Bridges []BridgeUse
	// Zones maps an SDN zone that declared VNets use but no SdnZone
	// declares to the first VNet in it.
	Zones map[string]string
}

// StorageUse is one volume (or file) a resource puts on a storage.
type StorageUse struct {
	Node, Storage string
	// Content is the storage content type the volume needs (images,
	// rootdir, iso, vztmpl, import).
	Content string
	// Bytes is the declared size (0 when the size comes from elsewhere).
	Bytes int64
	// VMID is the guest the volume belongs to (0 for files).
	VMID int
	Why  string
}

// BridgeUse is one NIC on a bridge the manifests do not declare.
type BridgeUse struct {
	Node, Bridge, Why string
}

// ReferencesOf lists what d relies on (see References).
func ReferencesOf(d *Desired) References {
	r := References{Nodes: map[string]string{}, Zones: map[string]string{}}
	declared := map[string]bool{} // node+" "+bridge, or " "+vnet
	for _, s := range specsOf[*NetworkSpec](d, KindNetwork) {
		iface := s.Iface
		if iface == "" {
			iface = s.Name
		}
		declared[s.Node+" "+iface] = true
	}
	zones := map[string]bool{}
	for _, s := range specsOf[*SdnZoneSpec](d, KindSdnZone) {
		zones[s.Name] = true
	}
	for _, s := range specsOf[*SdnVnetSpec](d, KindSdnVnet) {
		declared[" "+s.Name] = true
		if _, ok := r.Zones[s.Zone]; !ok && s.Zone != "" && !zones[s.Zone] {
			r.Zones[s.Zone] = vocab.Key(KindSdnVnet, s.Name)
		}
	}
	node := func(n, key string) {
		if _, ok := r.Nodes[n]; !ok && n != "" {
			r.Nodes[n] = key
		}
	}
	use := func(u StorageUse) {
		if u.Storage != "" {
			r.Storages = append(r.Storages, u)
		}
	}
	bridge := func(n, b, why string) {
		if b != "" && !declared[n+" "+b] && !declared[" "+b] {
			r.Bridges = append(r.Bridges, BridgeUse{Node: n, Bridge: b, Why: why})
		}
	}
	qemu := func(m *Meta, vmid int, img *ImageSpec, disks []DiskSpec, nics []NICSpec, ci *CloudInitSpec) {
		key := vocab.Key(m.Kind, m.Name)
		node(m.Node, key)
		if img != nil {
			stor := img.Storage
			if img.Volume != "" {
				stor = pvefields.StorageOf(img.Volume)
			}
			use(StorageUse{Node: m.Node, Storage: stor, Content: "import", Why: key + " (boot image)"})
		}
		for _, dk := range disks {
			use(StorageUse{Node: m.Node, Storage: dk.Storage, Content: "images", Bytes: dk.Size, VMID: vmid, Why: key + " (" + dk.Slot + ")"})
		}
		if ci != nil {
			use(StorageUse{Node: m.Node, Storage: ci.Storage, Content: "images", VMID: vmid, Why: key + " (cloud-init drive)"})
		}
		for _, n := range nics {
			bridge(m.Node, n.Bridge, key+" ("+n.Slot+")")
		}
	}
	for _, s := range specsOf[*TemplateSpec](d, KindTemplate) {
		qemu(&s.Meta, s.VMID, s.Image, s.Disks, s.NICs, s.CloudInit)
	}
	for _, s := range specsOf[*VMSpec](d, KindVirtualMachine) {
		qemu(&s.Meta, s.VMID, s.Image, s.Disks, s.NICs, s.CloudInit)
		if strings.Contains(s.Iso, ":") {
			use(StorageUse{Node: s.Node, Storage: pvefields.StorageOf(s.Iso), Content: "iso", Why: vocab.Key(KindVirtualMachine, s.Name) + " (ISO)"})
		}
	}
	for _, s := range specsOf[*ContainerSpec](d, KindContainer) {
		key := vocab.Key(KindContainer, s.Name)
		node(s.Node, key)
		for _, m := range append([]MountSpec{s.RootFS}, s.Mounts...) {
			use(StorageUse{Node: s.Node, Storage: m.Storage, Content: "rootdir", Bytes: m.Size, VMID: s.VMID, Why: key + " (" + m.Slot + ")"})
		}
		if strings.Contains(s.Template, ":") {
			use(StorageUse{Node: s.Node, Storage: pvefields.StorageOf(s.Template), Content: "vztmpl", Why: key + " (template)"})
		}
		for _, n := range s.NICs {
			bridge(s.Node, n.Bridge, key+" ("+n.Slot+")")
		}
	}
	for _, s := range specsOf[*IsoSpec](d, KindIso) {
		node(s.Node, vocab.Key(KindIso, s.Name))
		use(StorageUse{Node: s.Node, Storage: s.Storage, Content: "iso", Why: vocab.Key(KindIso, s.Name)})
	}
	for _, s := range specsOf[*CTemplateSpec](d, KindContainerTemplate) {
		node(s.Node, vocab.Key(KindContainerTemplate, s.Name))
		use(StorageUse{Node: s.Node, Storage: s.Storage, Content: "vztmpl", Why: vocab.Key(KindContainerTemplate, s.Name)})
	}
	for _, s := range specsOf[*NetworkSpec](d, KindNetwork) {
		node(s.Node, vocab.Key(KindNetwork, s.Name))
	}
	return r
}
