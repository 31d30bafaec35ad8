package pvefields

import "github.com/proxmops/proxmops/internal/cloudinit"

// OwnerTag marks guests proxmops owns.
const OwnerTag = "managed-by-proxmops"

// AdoptedTag marks, beside OwnerTag, a guest proxmops adopted rather than
// made. It records on the guest itself, for the daemon and the CLI alike,
// that the creation-time choices found at adoption (a larger disk, a
// template, a storage) are accepted as they are: they are reported, never
// failed, replaced nor shrunk, whether the adoption came from the
// annotation, `proxmops adopt` or the UI's button (the engine's adopt.go).
const AdoptedTag = "adopted-by-proxmops"

// GuestSpec is the configuration VirtualMachine and Template share.
type GuestSpec struct {
	Kind, Name    string
	VMID          int
	Node          string
	Tags          []string
	QemuHW        // VirtualMachine and Template alike
	Description   string
	OnBoot        *bool
	Startup       string
	Agent         *bool
	Balloon       *int
	Disks         []DiskSpec
	NICs          []NICSpec
	CloudInit     *CloudInitSpec
	UserData      string
	ISOVolume     string // volume id attached as cdrom
	CidataStorage string // storage for the CIDATA seed
	Pool          string // resource pool the guest is created in
}

func (gs *GuestSpec) WantTags() []string {
	return AppendTags(gs.Tags, OwnerTag)
}

func (gs *GuestSpec) Seed() cloudinit.Seed {
	return cloudinit.Seed{UserData: gs.UserData, Hostname: gs.Name}
}

// CidataVolume is the volume id the CIDATA seed gets for vmid.
func (gs *GuestSpec) CidataVolume(vmid int) string {
	return gs.CidataStorage + ":iso/" + cloudinit.FileName(vmid, gs.Seed())
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

// QemuHW is the QEMU hardware a VirtualMachine and a Template share
// (manifest.QemuHardware). It is embedded in the engine's VMSpec and
// TemplateSpec and in GuestSpec, so the field table reads it without a
// copy per kind.
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

// MountSpec is a container mount point (or the rootfs), keyed by slot.
type MountSpec struct {
	Slot         string // rootfs, mp0, ...
	Path         string // mp= inside the container ("" for rootfs)
	Storage      string // storage-backed volume
	Size         int64  // bytes
	Bind         string // host directory of a bind mount
	ReadOnly     bool
	Backup       bool
	Shared       bool
	MountOptions []string
	ACL          *bool
	Quota        bool
}

// CTNICSpec is a container network interface, keyed by slot.
type CTNICSpec struct {
	Slot     string // net0, ...
	Name     string // eth0, ...
	Bridge   string
	IP, Gw   string
	IP6, Gw6 string
	Tag      int
	Firewall bool
	HWAddr   string
	MTU      int
	Rate     string
}

// ContainerConfig is what the Container's field table (ctFields) reads;
// the engine's ContainerSpec embeds it.
type ContainerConfig struct {
	Hostname     string
	OSType       string
	Arch         string
	Cores        int
	CPULimit     string
	Memory       int
	Swap         *int
	RootFS       MountSpec
	Mounts       []MountSpec
	NICs         []CTNICSpec
	Unprivileged bool
	// Features is the desired features value ("keyctl=1,nesting=1"), nil
	// when not managed.
	Features     *string
	Nameserver   string
	SearchDomain string
	SSHKeys      []string
	Password     string
	PasswordSet  bool
	OnBoot       *bool
	Startup      string
	Description  string
	Timezone     string
}
