package engine

import (
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/manifest"
)

// OwnerMark marks host network interfaces (comments) and SDN vnets (alias)
// proxmops owns: Proxmox gives them no tags.
const OwnerMark = "managed-by-proxmops"

// CTemplateSpec is a desired ContainerTemplate: an LXC OS template on a
// storage, from the appliance catalogue or from a URL.
type CTemplateSpec struct {
	Meta
	Storage string
	// Appliance is a catalogue file name (debian-12-standard_12.7-1_amd64.tar.zst)
	// or a package name (debian-12-standard: the newest version).
	Appliance     string
	URL           string
	FileName      string // for URL downloads
	ChecksumAlgo  string
	ChecksumValue string
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

// ContainerSpec is a desired LXC container.
type ContainerSpec struct {
	Meta
	VMID         int
	Template     string // a ContainerTemplate's name, a volume id or an appliance name
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
	State        string
	ApplyMode    string
	// Provision is spec.provision (nil when absent).
	Provision       *ProvisionSpec
	ShutdownTimeout time.Duration
	Snapshots       *SnapshotPolicy // nil: no snapshots before changes
}

// NetworkSpec is a desired host network interface on one node.
type NetworkSpec struct {
	Meta
	Iface         string
	Type          string // bridge, bond, vlan
	Ports         []string
	VLANAware     bool
	VLANIDs       string
	CIDR, Gateway string
	CIDR6         string
	Gateway6      string
	MTU           int
	Autostart     bool
	Comments      string
	BondMode      string
	HashPolicy    string
	BondPrimary   string
	VLANID        int
	VLANRawDevice string
}

// SdnZoneSpec is a desired SDN zone; Options are Proxmox's keys.
type SdnZoneSpec struct {
	Meta
	Type    string
	Options map[string]string
}

// SubnetSpec is a vnet's subnet; Options are Proxmox's keys.
type SubnetSpec struct {
	CIDR    string
	Options map[string]string
}

// SdnVnetSpec is a desired SDN vnet with its subnets.
type SdnVnetSpec struct {
	Meta
	Zone    string
	Alias   string
	Options map[string]string // tag, vlanaware, isolate-ports
	Subnets []SubnetSpec
}

func ctemplateFromManifest(t *manifest.ContainerTemplate, _ SecretReader) *CTemplateSpec {
	s := &CTemplateSpec{Meta: metaOf(t), Storage: t.Spec.Storage, Appliance: t.Spec.Appliance,
		URL: t.Spec.Source, FileName: t.Spec.Filename}
	if s.Node == "" {
		s.Node = t.Spec.Node
	}
	if s.URL != "" && s.FileName == "" {
		s.FileName = t.FileName()
	}
	if t.Spec.Checksum != nil {
		s.ChecksumAlgo, s.ChecksumValue = strings.ToLower(t.Spec.Checksum.Algo), strings.ToLower(t.Spec.Checksum.Value)
	}
	return s
}

func networkFromManifest(n *manifest.Network, _ SecretReader) *NetworkSpec {
	sp := n.Spec
	return &NetworkSpec{Meta: metaOf(n), Iface: n.InterfaceName(), Type: sp.Type, Ports: sp.Ports,
		VLANAware: sp.VLANAware, VLANIDs: sp.VLANIDs, CIDR: sp.CIDR, Gateway: sp.Gateway, CIDR6: sp.CIDR6,
		Gateway6: sp.Gateway6, MTU: sp.MTU, Autostart: sp.Autostart == nil || *sp.Autostart,
		Comments: strings.TrimSpace(sp.Comments), BondMode: sp.BondMode, HashPolicy: sp.HashPolicy,
		BondPrimary: sp.BondPrimary, VLANID: sp.VLANID, VLANRawDevice: sp.VLANRawDevice}
}

func containerFromManifest(c *manifest.Container, secrets SecretReader) *ContainerSpec {
	sp := c.Spec
	s := &ContainerSpec{Meta: metaOf(c), VMID: sp.VMID, Template: sp.Template, Hostname: sp.Hostname,
		OSType: sp.OSType, Arch: sp.Arch, Cores: sp.Cores, Memory: sp.Memory, Swap: sp.Swap,
		Nameserver: strings.Join(strings.Fields(sp.Nameserver), " "), SearchDomain: strings.Join(strings.Fields(sp.SearchDomain), " "),
		SSHKeys: sp.SSHKeys, OnBoot: sp.OnBoot, Description: sp.Description, Timezone: sp.Timezone,
		State: string(sp.State), Unprivileged: sp.Unprivileged == nil || *sp.Unprivileged}
	if s.Hostname == "" {
		s.Hostname = s.Name
	}
	if s.State == "" {
		s.State = string(manifest.StateRunning)
	}
	if sp.ApplyMode == manifest.ApplyReboot {
		s.ApplyMode = "reboot"
	}
	s.Snapshots = snapshotPolicy(sp.Snapshots)
	if sp.CPULimit > 0 {
		s.CPULimit = strconv.FormatFloat(sp.CPULimit, 'f', -1, 64)
	}
	if sp.Startup != nil {
		s.Startup = sp.Startup.String()
	}
	if sp.RootFS != nil {
		r := sp.RootFS
		s.RootFS = MountSpec{Slot: "rootfs", Storage: r.Storage, Size: r.Size.Bytes, MountOptions: r.MountOptions, ACL: r.ACL, Quota: r.Quota}
	}
	for _, m := range sp.Mountpoints {
		s.Mounts = append(s.Mounts, MountSpec{Slot: m.Slot, Path: m.Path, Storage: m.Storage, Size: m.Size.Bytes,
			Bind: m.Bind, ReadOnly: m.ReadOnly, Backup: m.Backup, Shared: m.Shared, MountOptions: m.MountOptions,
			ACL: m.ACL, Quota: m.Quota})
	}
	for _, n := range sp.Net {
		nic := CTNICSpec{Slot: n.Slot, Name: n.Name, Bridge: n.Bridge, IP: n.IP, Gw: n.Gw, IP6: n.IP6, Gw6: n.Gw6,
			Tag: n.Tag, Firewall: n.Firewall, HWAddr: strings.ToUpper(n.HWAddr), MTU: n.MTU}
		if nic.Name == "" {
			nic.Name = "eth" + strings.TrimPrefix(n.Slot, "net")
		}
		if n.Rate > 0 {
			nic.Rate = strconv.FormatFloat(n.Rate, 'f', -1, 64)
		}
		s.NICs = append(s.NICs, nic)
	}
	if sp.Features != nil {
		f := sp.Features.String()
		s.Features = &f
	}
	if prov, err := provisionFromManifest(c, sp.Provision); err != nil {
		s.Invalid = err.Error()
	} else {
		s.Provision = prov
	}
	if sp.PasswordFrom != nil {
		pw, err := secrets(sp.PasswordFrom)
		if err != nil {
			s.Invalid = "passwordFrom: " + err.Error()
		} else {
			s.Password, s.PasswordSet = pw, true
		}
	}
	return s
}

func zoneFromManifest(z *manifest.SdnZone, _ SecretReader) *SdnZoneSpec {
	sp := z.Spec
	o := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			o[k] = v
		}
	}
	setInt := func(k string, v int) {
		if v != 0 {
			o[k] = strconv.Itoa(v)
		}
	}
	set("bridge", sp.Bridge)
	setInt("tag", sp.Tag)
	set("vlan-protocol", sp.VLANProtocol)
	set("peers", strings.Join(sp.Peers, ","))
	set("controller", sp.Controller)
	setInt("vrf-vxlan", sp.VRFVXLAN)
	set("exitnodes", strings.Join(sp.ExitNodes, ","))
	if sp.AdvertiseSubnets {
		o["advertise-subnets"] = "1"
	}
	setInt("mtu", sp.MTU)
	set("nodes", strings.Join(sp.Nodes, ","))
	set("ipam", sp.IPAM)
	set("dns", sp.DNS)
	set("reversedns", sp.ReverseDNS)
	set("dnszone", sp.DNSZone)
	set("dhcp", sp.DHCP)
	m := metaOf(z)
	m.Node = ""
	return &SdnZoneSpec{Meta: m, Type: sp.Type, Options: o}
}

func vnetFromManifest(v *manifest.SdnVnet, _ SecretReader) *SdnVnetSpec {
	sp := v.Spec
	o := map[string]string{}
	if sp.Tag != 0 {
		o["tag"] = strconv.Itoa(sp.Tag)
	}
	if sp.VLANAware {
		o["vlanaware"] = "1"
	}
	if sp.IsolatePorts {
		o["isolate-ports"] = "1"
	}
	m := metaOf(v)
	m.Node = ""
	s := &SdnVnetSpec{Meta: m, Zone: sp.Zone, Alias: strings.TrimSpace(sp.Alias), Options: o}
	for _, sub := range sp.Subnets {
		so := map[string]string{}
		if sub.Gateway != "" {
			so["gateway"] = sub.Gateway
		}
		if sub.SNAT {
			so["snat"] = "1"
		}
		if sub.DHCPDNSServer != "" {
			so["dhcp-dns-server"] = sub.DHCPDNSServer
		}
		if sub.DNSZonePrefix != "" {
			so["dnszoneprefix"] = sub.DNSZonePrefix
		}
		var ranges []string
		for _, r := range sub.DHCPRange {
			ranges = append(ranges, "start-address="+r.Start+",end-address="+r.End)
		}
		if len(ranges) > 0 {
			so["dhcp-range"] = strings.Join(ranges, "\n")
		}
		s.Subnets = append(s.Subnets, SubnetSpec{CIDR: sub.Subnet, Options: so})
	}
	return s
}

// markOwned adds the ownership mark to a free-text field (an interface's
// comments, a vnet's alias): "NFS storage network (managed-by-proxmops)".
func markOwned(text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return OwnerMark
	}
	return text + " (" + OwnerMark + ")"
}

// parseOwned reads markOwned back: whether the mark is there and the text
// without it.
func parseOwned(field string) (bool, string) {
	field = strings.TrimSpace(field)
	for _, m := range []string{" (" + OwnerMark + ")", "(" + OwnerMark + ")", OwnerMark} {
		if i := strings.Index(field, m); i >= 0 {
			return true, strings.TrimSpace(field[:i] + field[i+len(m):])
		}
	}
	return false, field
}
