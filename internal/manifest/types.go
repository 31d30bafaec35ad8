package manifest

import (
	"encoding/json"
	"strconv"

	"github.com/proxmops/proxmops/internal/vocab"
)

// APIVersion is the only apiVersion manifests may declare.
const APIVersion = "proxmops.dev/v1"

// Kind names a manifest kind.
type Kind string

// The manifest kinds.
const (
	KindVirtualMachine    Kind = "VirtualMachine"
	KindTemplate          Kind = "Template"
	KindIso               Kind = "Iso"
	KindContainer         Kind = "Container"
	KindNetwork           Kind = "Network"
	KindContainerTemplate Kind = "ContainerTemplate"
	KindSdnZone           Kind = "SdnZone"
	KindSdnVnet           Kind = "SdnVnet"
	KindFirewallAlias     Kind = "FirewallAlias"
	KindFirewallIPSet     Kind = "FirewallIPSet"
	KindPool              Kind = "Pool"
)

// AnnotationSync is the annotation that sets a resource's SyncPolicy.
const AnnotationSync = "proxmops.dev/sync"

// AnnotationAdopt ("true") lets a guest manifest take ownership of the
// unowned guest at its VMID (docs/manifests.md, Adoption).
const AnnotationAdopt = "proxmops.dev/adopt"

// Adopt reports whether the resource asks to adopt the guest at its VMID.
func (m *Metadata) Adopt() bool { return m.Annotations[AnnotationAdopt] == "true" }

// Metadata is common to every kind.
type Metadata struct {
	Name        string            `json:"name" pm:"required,format=dns-label" doc:"Unique per kind; a lower-case DNS label. Used as the Proxmox guest name for VMs, templates and containers."`
	Node        string            `json:"node,omitempty" pm:"format=node" doc:"Target node. Required for guests, Iso, ContainerTemplate and Network; not allowed on SdnZone, SdnVnet, FirewallAlias, FirewallIPSet, FirewallGroup and ClusterFirewall, which are cluster-wide."`
	Tags        []string          `json:"tags,omitempty" pm:"format=tag" doc:"Proxmox tags; proxmops adds its ownership tag managed-by-proxmops itself."`
	Annotations map[string]string `json:"annotations,omitempty" doc:"Free-form annotations; proxmops.dev/sync: auto | manual | disabled."`
	DependsOn   []string          `json:"dependsOn,omitempty" doc:"Declared resources (Kind/name) this one waits for: it is created or started only once they are in sync and healthy, and stopped or deleted before them."`
}

// Sync returns the resource's sync policy, vocab.SyncAuto when not annotated.
func (m *Metadata) Sync() vocab.SyncPolicy {
	if v, ok := m.Annotations[AnnotationSync]; ok && v != "" {
		p, err := vocab.ParseSyncPolicy(v)
		if err != nil {
			// Validation refuses it; should one pass, it is planned and
			// never applied by itself.
			return vocab.SyncManual
		}
		return p
	}
	return vocab.SyncAuto
}

// Origin says where a resource was declared.
type Origin struct {
	File     string `json:"file"`     // slash-separated path relative to the loaded root
	Line     int    `json:"line"`     // 1-based line of the document's first key
	Column   int    `json:"column"`   // 1-based column of the document's first key
	Document int    `json:"document"` // 0-based index of the document in the file
}

// Ref is one reference from a resource to another resource or to something
// that must already exist on the cluster.
type Ref struct {
	Kind Kind   `json:"kind"` // what is referenced: Template, Iso, ContainerTemplate, SdnZone, Network, SdnVnet or Pool
	Name string `json:"name"` // the declared resource's name; for an external reference, what is expected on the cluster (template name, volume ID, appliance, bridge)
	Path string `json:"path"` // field of the referencing manifest, e.g. "spec.fromTemplate"
	// Relation, when set, is how the referring kind needs the target
	// (a backup job backs up a guest, an HA rule places it); empty takes
	// the target kind's row (KindInfo.Relation).
	Relation Relation `json:"relation,omitempty"`
	// External is true when nothing in the set declares the target: it is
	// expected on the cluster (an existing template, volume or bridge).
	External bool `json:"external"`
	// Volume is true when Name is a storage volume ID (storage:path).
	Volume bool `json:"volume,omitempty"`
	// DependsOn is true for an entry of metadata.dependsOn: it must be
	// declared, and it is waited for until healthy.
	DependsOn bool `json:"dependsOn,omitempty"`
	// guest, when set, is the rule of a reference to a declared guest
	// named by its name alone (guestRule.ref): it must be declared.
	guest *guestRule
}

// Resource is any loaded manifest. The concrete types are *VirtualMachine,
// *Template, *Iso, *Container, *Network, *ContainerTemplate, *SdnZone and
// *SdnVnet; a type switch gives access to their Spec.
type Resource interface {
	Kind() Kind
	Name() string
	// Node is the target node ("" for cluster-wide kinds).
	Node() string
	// VMID is the guest ID for VirtualMachine, Template and Container, else 0.
	VMID() int
	Meta() *Metadata
	Source() Origin
	// References lists what this resource depends on, resolved against the
	// set it was loaded with.
	References() []Ref
	json.Marshaler
}

// Summarizer is a kind that says in a line what one of its manifests
// declares (a backup job's schedule and guests): the UI card's line for
// kinds without tags. Each kind implements it in its own file.
type Summarizer interface {
	Summary() string
}

// Summary is r's line (Summarizer), "" for a kind without one.
func Summary(r Resource) string {
	if s, ok := r.(Summarizer); ok {
		return s.Summary()
	}
	return ""
}

// countWord says n things: "1 guest", "3 guests".
func countWord(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Object holds what every kind has besides its spec.
type Object struct {
	Metadata Metadata
	Origin   Origin
	Refs     []Ref

	locs []loc // positions of the fields the cross-document checks report on
}

// Meta returns the metadata.
func (o *Object) Meta() *Metadata { return &o.Metadata }

// object is the Object itself, promoted to every kind that embeds it.
func (o *Object) object() *Object { return o }

// Name returns metadata.name.
func (o *Object) Name() string { return o.Metadata.Name }

// Node returns metadata.node.
func (o *Object) Node() string { return o.Metadata.Node }

// Source returns where the resource was declared.
func (o *Object) Source() Origin { return o.Origin }

// References returns the resolved references.
func (o *Object) References() []Ref { return o.Refs }

// VMID is 0 for kinds that are not guests.
func (o *Object) VMID() int { return 0 }

type manifestJSON struct {
	APIVersion string   `json:"apiVersion"`
	Kind       Kind     `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       any      `json:"spec"`
}

func marshalManifest(kind Kind, o *Object, spec any) ([]byte, error) {
	return json.Marshal(manifestJSON{APIVersion: APIVersion, Kind: kind, Metadata: o.Metadata, Spec: spec})
}

// PowerState is the desired power state of a guest.
type PowerState string

// Power states.
const (
	StateRunning PowerState = "running"
	StateStopped PowerState = "stopped"
)

// ApplyMode says how changes that need a guest restart are applied.
type ApplyMode string

// Apply modes.
const (
	// ApplyPending leaves such changes pending in Proxmox and reports them
	// as "needs reboot" (the default).
	ApplyPending ApplyMode = "pending"
	// ApplyReboot reboots the running guest to apply them.
	ApplyReboot ApplyMode = "reboot"
)

// QemuHardware is the virtual hardware VirtualMachine and Template declare
// alike; both specs embed it, so its fields sit directly under spec.
type QemuHardware struct {
	Cores   int    `json:"cores,omitempty" pm:"min=1,max=1024" doc:"Cores per socket."`
	Sockets int    `json:"sockets,omitempty" pm:"min=1,max=16" doc:"CPU sockets."`
	Memory  int    `json:"memory,omitempty" pm:"min=16" doc:"Memory in MiB."`
	CPU     string `json:"cpu,omitempty" pm:"format=cpu-type" doc:"CPU type, e.g. host, x86-64-v2-AES, x86-64-v3, or custom-NAME."`
	OSType  string `json:"ostype,omitempty" pm:"enum=other|wxp|w2k|w2k3|w2k8|wvista|win7|win8|win10|win11|l24|l26|solaris" doc:"Guest OS type."`
	BIOS    string `json:"bios,omitempty" pm:"enum=seabios|ovmf" doc:"Firmware."`
	Machine string `json:"machine,omitempty" pm:"format=machine" doc:"QEMU machine type, e.g. q35 or pc-i440fx-9.0."`
	SCSIHW  string `json:"scsihw,omitempty" pm:"enum=lsi|lsi53c810|virtio-scsi-pci|virtio-scsi-single|megasas|pvscsi" doc:"SCSI controller model."`
}

// VirtualMachine is a QEMU guest.
type VirtualMachine struct {
	Object
	Spec VirtualMachineSpec
}

// VirtualMachineSpec is the desired state of a QEMU guest. Zero values of
// optional scalars mean "not declared": Proxmox's default at creation, not
// managed afterwards.
type VirtualMachineSpec struct {
	VMID int `json:"vmid" pm:"required,min=100,max=999999999" doc:"Proxmox VMID, unique across VirtualMachine, Template and Container."`
	QemuHardware
	Balloon      *int           `json:"balloon,omitempty" pm:"min=0" doc:"Minimum memory in MiB for the balloon driver; 0 disables ballooning."`
	Description  string         `json:"description,omitempty" doc:"Notes shown in the Proxmox UI: Proxmox takes 8192 bytes, less the room proxmops keeps for its record lines (766 bytes, 29 more per disk beyond the first)."`
	Pool         string         `json:"pool,omitempty" pm:"format=pve-poolid" doc:"Resource pool the guest belongs to: a declared Pool or one that exists on the cluster. Unset leaves the guest's pool alone."`
	HA           *GuestHA       `json:"ha,omitempty" doc:"The guest's HA resource (vm:VMID): proxmops adds and keeps it; unset leaves HA alone; state absent takes the guest out of HA."`
	OnBoot       *bool          `json:"onboot,omitempty" doc:"Start the guest when its node boots."`
	Startup      *Startup       `json:"startup,omitempty" doc:"Start order and delays."`
	Agent        *bool          `json:"agent,omitempty" doc:"Enable the QEMU guest agent."`
	Image        *Image         `json:"image,omitempty" doc:"Cloud image imported as the first disk; excludes fromTemplate."`
	FromTemplate *FromTemplate  `json:"fromTemplate,omitempty" doc:"Clone from a template: a name (full clone) or {name, linked}; excludes image."`
	Disks        []Disk         `json:"disks,omitempty" doc:"Disks keyed by slot; entries without slot take the lowest free scsiN in order."`
	Net          []NIC          `json:"net,omitempty" doc:"Network devices keyed by slot; entries without slot take the lowest free netN in order."`
	CloudInit    *CloudInit     `json:"cloudInit,omitempty" doc:"Proxmox cloud-init settings; excludes userData."`
	UserData     string         `json:"userData,omitempty" doc:"Raw user-data delivered on a NoCloud CIDATA ISO; excludes cloudInit and iso."`
	ISO          string         `json:"iso,omitempty" doc:"CD-ROM: an Iso resource's name or a volume ID such as local:iso/x.iso; excludes userData."`
	ApplyMode    ApplyMode      `json:"applyMode,omitempty" pm:"enum=pending|reboot" doc:"pending (default): changes needing a restart are reported; reboot: the guest is rebooted to apply them."`
	State        PowerState     `json:"state,omitempty" pm:"enum=running|stopped" doc:"Desired power state (default running)."`
	Provision    *Provision     `json:"provision,omitempty" doc:"Packages, files, copied directories and commands applied inside the VM over SSH after it is created and started, and again whenever their inputs change."`
	Snapshots    *Snapshots     `json:"snapshots,omitempty" doc:"Proxmox snapshots proxmops takes before it changes the guest."`
	HealthCheck  *HealthCheck   `json:"healthCheck,omitempty" doc:"How proxmops tells whether the running VM works: its guest agent, a TCP port or an HTTP endpoint, probed every interval; a guest failing it is Degraded."`
	Firewall     *GuestFirewall `json:"firewall,omitempty" doc:"The VM's own firewall: its options (and rules). Unset leaves the VM's firewall alone."`
}

// Snapshots asks proxmops for a Proxmox snapshot before each change it
// makes to an existing guest (see engine/guestsnapshot.go).
type Snapshots struct {
	BeforeChange bool `json:"beforeChange,omitempty" doc:"Snapshot the guest (proxmops-<UTC time>, without RAM) before a configuration update, resize, reboot for pending changes or provisioning re-run; a guest Proxmox cannot snapshot gets no change."`
	Keep         int  `json:"keep,omitempty" pm:"min=1,max=100" doc:"How many proxmops-* snapshots to keep (default 3); older ones of proxmops are deleted, other snapshots never."`
}

// Kind returns KindVirtualMachine.
func (*VirtualMachine) Kind() Kind { return KindVirtualMachine }

// VMID returns spec.vmid.
func (v *VirtualMachine) VMID() int { return v.Spec.VMID }

// MarshalJSON gives back the manifest shape.
func (v *VirtualMachine) MarshalJSON() ([]byte, error) {
	return marshalManifest(v.Kind(), &v.Object, &v.Spec)
}

// Template is a QEMU template built from a cloud image.
type Template struct {
	Object
	Spec TemplateSpec
}

// TemplateSpec is the desired state of a template. Templates cannot be
// changed in place; drift is reported.
type TemplateSpec struct {
	VMID  int    `json:"vmid" pm:"required,min=100,max=999999999" doc:"Proxmox VMID, unique across VirtualMachine, Template and Container."`
	Image *Image `json:"image" pm:"required" doc:"Cloud image imported as the first disk."`
	QemuHardware
	Description string     `json:"description,omitempty" doc:"Notes shown in the Proxmox UI: Proxmox takes 8192 bytes, less the room proxmops keeps for its record lines (766 bytes, 29 more per disk beyond the first)."`
	Agent       *bool      `json:"agent,omitempty" doc:"Enable the QEMU guest agent."`
	Disks       []Disk     `json:"disks,omitempty" doc:"Disks keyed by slot, as for VirtualMachine."`
	Net         []NIC      `json:"net,omitempty" doc:"Network devices keyed by slot, as for VirtualMachine."`
	CloudInit   *CloudInit `json:"cloudInit,omitempty" doc:"Cloud-init defaults inherited by clones."`
}

// Kind returns KindTemplate.
func (*Template) Kind() Kind { return KindTemplate }

// VMID returns spec.vmid.
func (t *Template) VMID() int { return t.Spec.VMID }

// MarshalJSON gives back the manifest shape.
func (t *Template) MarshalJSON() ([]byte, error) {
	return marshalManifest(t.Kind(), &t.Object, &t.Spec)
}

// volumeKind is a kind whose resource is a volume it downloads: Iso and
// ContainerTemplate.
type volumeKind interface {
	Resource
	VolumeID() string
}

// Iso is an ISO image downloaded onto a storage.
type Iso struct {
	Object
	Spec IsoSpec
}

// IsoSpec is the desired ISO volume. spec.node is folded into metadata.node
// by the loader (both may be given only when equal).
type IsoSpec struct {
	Source   string    `json:"source" pm:"required,format=http-url" doc:"http or https URL to download."`
	Node     string    `json:"node,omitempty" pm:"format=node" doc:"Node that downloads it (same as metadata.node, which it fills)."`
	Storage  string    `json:"storage" pm:"required,format=storage-id" doc:"Storage with content type iso."`
	Filename string    `json:"filename,omitempty" pm:"format=filename" doc:"Volume file name; defaults to the URL's last path element. Must end in .iso or .img."`
	Checksum *Checksum `json:"checksum,omitempty" doc:"Verified by Proxmox after the download."`
}

// Kind returns KindIso.
func (*Iso) Kind() Kind { return KindIso }

// MarshalJSON gives back the manifest shape.
func (i *Iso) MarshalJSON() ([]byte, error) {
	return marshalManifest(i.Kind(), &i.Object, &i.Spec)
}

// VolumeID is the volume the ISO becomes: "storage:iso/filename".
func (i *Iso) VolumeID() string {
	return i.Spec.Storage + ":iso/" + i.FileName()
}

// FileName is spec.filename, or the last path element of the source URL.
func (i *Iso) FileName() string {
	if i.Spec.Filename != "" {
		return i.Spec.Filename
	}
	return urlBase(i.Spec.Source)
}

// ContainerTemplate is an LXC OS template on a storage: a Proxmox appliance
// (aplinfo) or a download.
type ContainerTemplate struct {
	Object
	Spec ContainerTemplateSpec
}

// ContainerTemplateSpec is the desired vztmpl volume. Exactly one of
// Appliance and Source is set.
type ContainerTemplateSpec struct {
	Appliance string    `json:"appliance,omitempty" pm:"format=filename" doc:"Proxmox appliance template as listed by pveam: a file name such as debian-12-standard_12.7-1_amd64.tar.zst, or a package name such as debian-12-standard for the newest version in the catalogue; excludes source."`
	Source    string    `json:"source,omitempty" pm:"format=http-url" doc:"http or https URL of a template archive; excludes appliance."`
	Node      string    `json:"node,omitempty" pm:"format=node" doc:"Node that downloads it (same as metadata.node, which it fills)."`
	Storage   string    `json:"storage" pm:"required,format=storage-id" doc:"Storage with content type vztmpl."`
	Filename  string    `json:"filename,omitempty" pm:"format=filename" doc:"Volume file name for a source download; defaults to the URL's last path element. Proxmox stores it with every character other than a letter, digit, _, . or - replaced by _, and so does proxmops."`
	Checksum  *Checksum `json:"checksum,omitempty" doc:"Checksum of a source download."`
}

// Kind returns KindContainerTemplate.
func (*ContainerTemplate) Kind() Kind { return KindContainerTemplate }

// MarshalJSON gives back the manifest shape.
func (c *ContainerTemplate) MarshalJSON() ([]byte, error) {
	return marshalManifest(c.Kind(), &c.Object, &c.Spec)
}

// FileName is the template's file name on the storage.
func (c *ContainerTemplate) FileName() string {
	switch {
	case c.Spec.Appliance != "":
		return c.Spec.Appliance
	case c.Spec.Filename != "":
		return c.Spec.Filename
	}
	return urlBase(c.Spec.Source)
}

// VolumeID is the volume the template becomes: "storage:vztmpl/filename".
func (c *ContainerTemplate) VolumeID() string {
	return c.Spec.Storage + ":vztmpl/" + c.FileName()
}

// Container is an LXC container.
type Container struct {
	Object
	Spec ContainerSpec
}

// ContainerSpec is the desired state of an LXC container.
type ContainerSpec struct {
	VMID         int            `json:"vmid" pm:"required,min=100,max=999999999" doc:"Proxmox VMID, unique across VirtualMachine, Template and Container."`
	Pool         string         `json:"pool,omitempty" pm:"format=pve-poolid" doc:"Resource pool the container belongs to: a declared Pool or one that exists on the cluster. Unset leaves its pool alone."`
	HA           *GuestHA       `json:"ha,omitempty" doc:"The container's HA resource (ct:VMID): proxmops adds and keeps it; unset leaves HA alone; state absent takes it out of HA."`
	Template     string         `json:"template" pm:"required,format=not-empty" doc:"OS template: a ContainerTemplate's name, a volume ID such as local:vztmpl/x.tar.zst, or an appliance name expected on the cluster."`
	Hostname     string         `json:"hostname,omitempty" pm:"format=dns-name" doc:"Host name inside the container (default metadata.name)."`
	OSType       string         `json:"ostype,omitempty" pm:"enum=debian|devuan|ubuntu|centos|fedora|opensuse|archlinux|alpine|gentoo|nixos|unmanaged" doc:"OS type; detected from the template when omitted."`
	Arch         string         `json:"arch,omitempty" pm:"enum=amd64|i386|arm64|armhf|riscv32|riscv64" doc:"Architecture (default amd64)."`
	Cores        int            `json:"cores,omitempty" pm:"min=1,max=8192" doc:"CPU cores."`
	CPULimit     float64        `json:"cpulimit,omitempty" pm:"min=0,max=8192" doc:"CPU time limit in cores; 0 is unlimited."`
	Memory       int            `json:"memory,omitempty" pm:"min=16" doc:"Memory in MiB."`
	Swap         *int           `json:"swap,omitempty" pm:"min=0" doc:"Swap in MiB."`
	RootFS       *RootFS        `json:"rootfs" pm:"required" doc:"Root volume."`
	Mountpoints  []Mountpoint   `json:"mountpoints,omitempty" doc:"Extra mount points keyed by slot (mp0...): storage-backed (storage, size) or bind (a host path)."`
	Net          []ContainerNIC `json:"net,omitempty" doc:"Network interfaces keyed by slot (net0...)."`
	Unprivileged *bool          `json:"unprivileged,omitempty" doc:"Run unprivileged (default true). Creation-only."`
	Features     *Features      `json:"features,omitempty" doc:"LXC features."`
	Nameserver   string         `json:"nameserver,omitempty" doc:"DNS servers, space separated."`
	SearchDomain string         `json:"searchDomain,omitempty" doc:"DNS search domains, space separated."`
	SSHKeys      []string       `json:"sshKeys,omitempty" pm:"format=ssh-key" doc:"Public SSH keys for root. Creation-only."`
	PasswordFrom *SecretRef     `json:"passwordFrom,omitempty" doc:"Root password, read from an environment variable or a file. Creation-only."`
	OnBoot       *bool          `json:"onboot,omitempty" doc:"Start when the node boots."`
	Startup      *Startup       `json:"startup,omitempty" doc:"Start order and delays."`
	Description  string         `json:"description,omitempty" doc:"Notes shown in the Proxmox UI: Proxmox takes 8192 bytes, less the room proxmops keeps for its record lines (766 bytes, 29 more per disk beyond the first)."`
	Timezone     string         `json:"timezone,omitempty" doc:"Time zone, e.g. Europe/Berlin, or host."`
	State        PowerState     `json:"state,omitempty" pm:"enum=running|stopped" doc:"Desired power state (default running)."`
	ApplyMode    ApplyMode      `json:"applyMode,omitempty" pm:"enum=pending|reboot" doc:"pending (default): changes Proxmox keeps pending on a running container are reported; reboot: the container is rebooted to apply them."`
	Provision    *Provision     `json:"provision,omitempty" doc:"Packages, files, copied directories and commands applied inside the container over SSH after it is created and started, and again whenever their inputs change."`
	Snapshots    *Snapshots     `json:"snapshots,omitempty" doc:"Proxmox snapshots proxmops takes before it changes the container."`
	HealthCheck  *HealthCheck   `json:"healthCheck,omitempty" doc:"How proxmops tells whether the running container works: a TCP port or an HTTP endpoint, probed every interval; a container failing it is Degraded."`
	Firewall     *GuestFirewall `json:"firewall,omitempty" doc:"The container's own firewall: its options (and rules). Unset leaves the container's firewall alone."`
}

// Kind returns KindContainer.
func (*Container) Kind() Kind { return KindContainer }

// VMID returns spec.vmid.
func (c *Container) VMID() int { return c.Spec.VMID }

// MarshalJSON gives back the manifest shape.
func (c *Container) MarshalJSON() ([]byte, error) {
	return marshalManifest(c.Kind(), &c.Object, &c.Spec)
}

// Network is one host network interface on a node (/nodes/{node}/network).
type Network struct {
	Object
	Spec NetworkSpec
}

// NetworkSpec is a Linux bridge, bond or VLAN interface.
type NetworkSpec struct {
	Type          string   `json:"type" pm:"required,enum=bridge|bond|vlan" doc:"Interface type."`
	Iface         string   `json:"iface,omitempty" pm:"format=iface" doc:"Interface name, e.g. vmbr1, bond0, vmbr0.30 (default metadata.name)."`
	Ports         []string `json:"ports,omitempty" pm:"format=iface" doc:"Bridge ports, or the bond's member interfaces."`
	VLANAware     bool     `json:"vlanAware,omitempty" doc:"Bridge: VLAN-aware."`
	VLANIDs       string   `json:"vlanIds,omitempty" pm:"format=vlan-list" doc:"Bridge: allowed VLAN IDs when VLAN-aware, e.g. 2-4094 or \"10 20 30-40\"."`
	CIDR          string   `json:"cidr,omitempty" pm:"format=cidr4" doc:"IPv4 address with prefix length."`
	Gateway       string   `json:"gateway,omitempty" pm:"format=ipv4" doc:"IPv4 default gateway."`
	CIDR6         string   `json:"cidr6,omitempty" pm:"format=cidr6" doc:"IPv6 address with prefix length."`
	Gateway6      string   `json:"gateway6,omitempty" pm:"format=ipv6" doc:"IPv6 default gateway."`
	MTU           int      `json:"mtu,omitempty" pm:"min=1280,max=65520" doc:"MTU."`
	Autostart     *bool    `json:"autostart,omitempty" doc:"Bring up at boot (default true)."`
	Comments      string   `json:"comments,omitempty" doc:"Comment; proxmops adds its ownership marker."`
	BondMode      string   `json:"bondMode,omitempty" pm:"enum=balance-rr|active-backup|balance-xor|broadcast|802.3ad|balance-tlb|balance-alb" doc:"Bond: mode."`
	HashPolicy    string   `json:"hashPolicy,omitempty" pm:"enum=layer2|layer2+3|layer3+4" doc:"Bond: transmit hash policy."`
	BondPrimary   string   `json:"bondPrimary,omitempty" pm:"format=iface" doc:"Bond: primary member (active-backup)."`
	VLANID        int      `json:"vlanId,omitempty" pm:"min=1,max=4094" doc:"VLAN: tag (default: from the name, e.g. vmbr0.30)."`
	VLANRawDevice string   `json:"vlanRawDevice,omitempty" pm:"format=iface" doc:"VLAN: parent interface (default: from the name)."`
}

// Kind returns KindNetwork.
func (*Network) Kind() Kind { return KindNetwork }

// MarshalJSON gives back the manifest shape.
func (n *Network) MarshalJSON() ([]byte, error) {
	return marshalManifest(n.Kind(), &n.Object, &n.Spec)
}

// InterfaceName is spec.iface, or metadata.name when iface is omitted.
func (n *Network) InterfaceName() string {
	if n.Spec.Iface != "" {
		return n.Spec.Iface
	}
	return n.Metadata.Name
}

// SdnZone is a Proxmox SDN zone (cluster-wide).
type SdnZone struct {
	Object
	Spec SdnZoneSpec
}

// SdnZoneSpec is the desired SDN zone; metadata.name is the zone ID.
type SdnZoneSpec struct {
	Type             string   `json:"type" pm:"required,enum=simple|vlan|qinq|vxlan|evpn" doc:"Zone type."`
	Bridge           string   `json:"bridge,omitempty" pm:"format=bridge" doc:"vlan, qinq: the VLAN-aware bridge the zone uses."`
	Tag              int      `json:"tag,omitempty" pm:"min=1,max=4094" doc:"qinq: service VLAN tag."`
	VLANProtocol     string   `json:"vlanProtocol,omitempty" pm:"enum=802.1q|802.1ad" doc:"qinq: outer VLAN protocol."`
	Peers            []string `json:"peers,omitempty" pm:"format=ip" doc:"vxlan: addresses of all nodes' VXLAN endpoints."`
	Controller       string   `json:"controller,omitempty" pm:"format=sdn-id" doc:"evpn: the EVPN controller's ID."`
	VRFVXLAN         int      `json:"vrfVxlan,omitempty" pm:"min=1,max=16777215" doc:"evpn: VRF VXLAN ID."`
	ExitNodes        []string `json:"exitNodes,omitempty" pm:"format=node" doc:"evpn: exit nodes."`
	AdvertiseSubnets bool     `json:"advertiseSubnets,omitempty" doc:"evpn: advertise subnets."`
	MTU              int      `json:"mtu,omitempty" pm:"min=1280,max=65520" doc:"MTU of the zone's vnets."`
	Nodes            []string `json:"nodes,omitempty" pm:"format=node" doc:"Restrict the zone to these nodes (default all)."`
	IPAM             string   `json:"ipam,omitempty" pm:"format=sdn-id" doc:"IPAM plugin, e.g. pve."`
	DNS              string   `json:"dns,omitempty" pm:"format=sdn-id" doc:"DNS plugin ID."`
	ReverseDNS       string   `json:"reverseDns,omitempty" pm:"format=sdn-id" doc:"Reverse DNS plugin ID."`
	DNSZone          string   `json:"dnsZone,omitempty" pm:"format=dns-name" doc:"DNS domain of the zone."`
	DHCP             string   `json:"dhcp,omitempty" pm:"enum=dnsmasq" doc:"DHCP server for the zone's subnets (simple and evpn zones)."`
}

// Kind returns KindSdnZone.
func (*SdnZone) Kind() Kind { return KindSdnZone }

// MarshalJSON gives back the manifest shape.
func (z *SdnZone) MarshalJSON() ([]byte, error) {
	return marshalManifest(z.Kind(), &z.Object, &z.Spec)
}

// SdnVnet is a Proxmox SDN virtual network (cluster-wide); guests attach to
// it with its name as their bridge.
type SdnVnet struct {
	Object
	Spec SdnVnetSpec
}

// SdnVnetSpec is the desired vnet; metadata.name is the vnet ID.
type SdnVnetSpec struct {
	Zone         string   `json:"zone" pm:"required,format=sdn-id" doc:"The SdnZone (declared or on the cluster)."`
	Tag          int      `json:"tag,omitempty" pm:"min=1,max=16777215" doc:"VLAN or VXLAN ID (required in vlan, qinq, vxlan and evpn zones)."`
	Alias        string   `json:"alias,omitempty" doc:"Display name."`
	VLANAware    bool     `json:"vlanAware,omitempty" doc:"Allow VLAN tags inside the vnet."`
	IsolatePorts bool     `json:"isolatePorts,omitempty" doc:"Isolate guests' ports from each other."`
	Subnets      []Subnet `json:"subnets,omitempty" doc:"Subnets of the vnet."`
}

// Kind returns KindSdnVnet.
func (*SdnVnet) Kind() Kind { return KindSdnVnet }

// MarshalJSON gives back the manifest shape.
func (v *SdnVnet) MarshalJSON() ([]byte, error) {
	return marshalManifest(v.Kind(), &v.Object, &v.Spec)
}

// Subnet is an IP subnet of a vnet.
type Subnet struct {
	Subnet        string      `json:"subnet" pm:"required,format=cidr" doc:"Network in CIDR form, e.g. 10.10.0.0/24."`
	Gateway       string      `json:"gateway,omitempty" pm:"format=ip" doc:"Gateway address inside the subnet."`
	SNAT          bool        `json:"snat,omitempty" doc:"Source NAT for traffic leaving the subnet."`
	DHCPRange     []DHCPRange `json:"dhcpRange,omitempty" doc:"Address pools for the zone's DHCP server."`
	DHCPDNSServer string      `json:"dhcpDnsServer,omitempty" pm:"format=ip" doc:"DNS server announced by DHCP."`
	DNSZonePrefix string      `json:"dnsZonePrefix,omitempty" pm:"format=dns-name" doc:"Prefix of the DNS zone."`
}

// DHCPRange is an inclusive address range.
type DHCPRange struct {
	Start string `json:"start" pm:"required,format=ip" doc:"First address."`
	End   string `json:"end" pm:"required,format=ip" doc:"Last address."`
}

// Pool is a Proxmox resource pool (cluster-wide, /pools).
type Pool struct {
	Object
	Spec PoolSpec
}

// PoolSpec is the desired pool; metadata.name is the pool ID.
type PoolSpec struct {
	Comment string `json:"comment,omitempty" doc:"Comment; proxmops adds its ownership marker."`
}

// Kind returns KindPool.
func (*Pool) Kind() Kind { return KindPool }

// Summary is the pool's comment.
func (p *Pool) Summary() string { return p.Spec.Comment }

// MarshalJSON gives back the manifest shape.
func (p *Pool) MarshalJSON() ([]byte, error) {
	return marshalManifest(p.Kind(), &p.Object, &p.Spec)
}
