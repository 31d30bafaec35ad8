package engine

import (
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
)

// The engine's readings of Proxmox values, for internal/export: it writes
// manifests from the same readings the plan compares with, so an exported
// manifest plans in sync.

// CdromSlot is the slot of a VM's declared ISO (and the userData seed).
const CdromSlot = cdromSlot

// Truthy reads a Proxmox boolean ("1", "on", "yes", "true").
func Truthy(v string) bool { return truthy(v) }

// Spaced is a space-separated list in its compared form.
func Spaced(v string) string { return spaced(v) }

// TrimDescription is a description as the plan compares it.
func TrimDescription(v string) string { return trimDesc(v) }

// PropertyPart reads the key dk of a property string whose first value has
// that default key (memory's current, cpu's cputype, agent's enabled).
func PropertyPart(v, dk string) string { return propertyPart(dk)(v) }

// Disk is a disk slot value read back.
type Disk struct {
	File  string // local-lvm:vm-120-disk-0, local-lvm:vm-120-cloudinit, none
	Size  int64
	Media string
	Props pve.PropertyString
}

// ParseDisk reads a disk slot value.
func ParseDisk(v string) Disk {
	d := parseDisk(v)
	return Disk{File: d.File, Size: d.Size, Media: d.Media, Props: d.props}
}

// IsCloudInit says whether the disk is Proxmox's cloud-init drive.
func (d Disk) IsCloudInit() bool { return parsedDisk{File: d.File}.isCloudInit() }

// IsCdrom says whether the disk is a CD-ROM drive.
func (d Disk) IsCdrom() bool { return parsedDisk{Media: d.Media}.isCdrom() }

// IsDiskKey reports whether a config key is a disk slot.
func IsDiskKey(k string) bool { return isDiskKey(k) }

// BootDiskSlot finds the boot disk of a configuration.
func BootDiskSlot(cfg map[string]string) string { return bootDiskSlot(cfg) }

// StorageOf is the storage part of a volume id.
func StorageOf(volid string) string { return storageOf(volid) }

// VolumeFormat is the format Proxmox reads from a volume name.
func VolumeFormat(volid string) string { return volumeFormat(volid) }

// NIC is a VM's net[n] value read back.
type NIC struct {
	Model, MAC string
	Props      pve.PropertyString
}

// ParseNIC reads a VM's net[n] value.
func ParseNIC(v string) NIC {
	n := parseNIC(v)
	return NIC{Model: n.Model, MAC: n.MAC, Props: n.props}
}

// NICModel says whether m is a NIC model Proxmox knows.
func NICModel(m string) bool { return nicModels[m] }

// NormalFeatures is a container's features value in its compared form.
func NormalFeatures(v string) string { return normalFeatures(v) }

// NormalList is a ';'-, ','- or space-separated list in its compared form.
func NormalList(v string) string { return normalList(v) }

// NormalRanges is a subnet's DHCP ranges in their compared form.
func NormalRanges(v string) string { return normalRanges(v) }

// ParseOwned reads a comment or an alias: whether it carries OwnerMark, and
// the text without it.
func ParseOwned(field string) (bool, string) { return parseOwned(field) }

// VnetAlias is a vnet's alias, running or pending.
func VnetAlias(v pve.SDNEntry) string { return vnetAlias(v) }

// VnetZone is a vnet's zone, running or pending.
func VnetZone(v pve.SDNEntry) string { return vnetZone(v) }

// SubnetCIDR is a subnet entry's network in CIDR form.
func SubnetCIDR(e pve.SDNEntry) string { return subnetCIDR(e) }

// ZoneDrift is the first zone option the plan of m would change in config,
// "" when none.
func ZoneDrift(m *manifest.SdnZone, config map[string]string) string {
	if ch, _, _ := optionChanges("", zoneFromManifest(m, nil).Options, config, nil); len(ch) > 0 {
		return ch[0].Field
	}
	return ""
}

// GuestNoun names what a guest is (VM, template, container), for reasons.
func GuestNoun(g *Guest) string { return guestNoun(g) }
