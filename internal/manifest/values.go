package manifest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// Size is a disk or volume size: written as 20G, 512M, 1T, 1.5T or 10240K
// (binary units, as Proxmox uses them), or as a bare integer meaning GiB.
type Size struct {
	Bytes int64  // the size in bytes
	Text  string // as written in the manifest (a bare integer n becomes "nG")
}

var sizeRe = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)([KMGT])$`)

const sizePattern = `^[0-9]+(\.[0-9]+)?[KMGT]$`

var sizeUnits = map[string]int64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}

// maxSize bounds sizes to what fits comfortably in int64 (1 EiB).
const maxSize = 1 << 60

// ParseSize parses a size string such as "20G".
func ParseSize(s string) (Size, error) {
	num, unit, ok := splitSize(s)
	if !ok {
		return Size{}, fmt.Errorf("%q is not a size; write a number with a unit K, M, G or T (e.g. 20G)", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return Size{}, fmt.Errorf("%q is not a size", s)
	}
	b := f * float64(sizeUnits[unit])
	if b > maxSize {
		return Size{}, fmt.Errorf("%q is too large", s)
	}
	if b < 1<<20 {
		return Size{}, fmt.Errorf("%q is smaller than 1M", s)
	}
	return Size{Bytes: int64(b), Text: s}, nil
}

// splitSize splits a size as sizeRe reads it (digits, optionally a dot and
// digits, then a unit K, M, G or T) without running the expression, which
// was a noticeable part of loading a tree.
func splitSize(s string) (num, unit string, ok bool) {
	if len(s) < 2 || !strings.Contains("KMGT", s[len(s)-1:]) {
		return "", "", false
	}
	num, unit = s[:len(s)-1], s[len(s)-1:]
	digits := func(t string) bool {
		for i := 0; i < len(t); i++ {
			if t[i] < '0' || t[i] > '9' {
				return false
			}
		}
		return t != ""
	}
	whole, frac, dot := strings.Cut(num, ".")
	if !digits(whole) || dot && !digits(frac) {
		return "", "", false
	}
	return num, unit, true
}

// GiB returns the size in GiB (fractional).
func (s Size) GiB() float64 { return float64(s.Bytes) / (1 << 30) }

// MiB returns the size in MiB, rounded up.
func (s Size) MiB() int64 { return (s.Bytes + 1<<20 - 1) >> 20 }

// IsZero reports whether no size was given.
func (s Size) IsZero() bool { return s.Bytes == 0 && s.Text == "" }

// String returns the size as written.
func (s Size) String() string { return s.Text }

// MarshalJSON writes the size as written in the manifest.
func (s Size) MarshalJSON() ([]byte, error) { return json.Marshal(s.Text) }

func (s *Size) decodeNode(d *decoder, n *yNode) {
	switch {
	case n.kind == scalarNode && n.typ == tInt:
		if n.ival < 1 || n.ival > 1<<20 {
			d.errorf(n, d.here(), "%s GiB is out of range (1 to 1048576)", n.text)
			return
		}
		*s = Size{Bytes: n.ival << 30, Text: strconv.FormatInt(n.ival, 10) + "G"}
	case n.kind == scalarNode && n.typ == tString:
		v, err := ParseSize(n.text)
		if err != nil {
			d.errorf(n, d.here(), "%v", err)
			return
		}
		*s = v
	default:
		d.errorf(n, d.here(), "expected a size such as 20G, got %s", n.describe())
	}
}

// FromTemplate is a clone source: written as a template name (a full clone)
// or as {name, linked}.
type FromTemplate struct {
	Name   string `json:"name" pm:"required,format=dns-name" doc:"Template name: a declared Template or one already on the cluster."`
	Linked bool   `json:"linked,omitempty" doc:"Linked (copy-on-write) clone instead of a full clone."`
}

func (f *FromTemplate) decodeNode(d *decoder, n *yNode) {
	if n.kind == scalarNode && n.typ == tString {
		fi := fieldInfo{format: "dns-name"}
		if d.checkString(n, n.text, &fi) {
			*f = FromTemplate{Name: n.text}
		}
		return
	}
	if n.kind != mapNode {
		d.errorf(n, d.here(), "expected a template name or {name, linked}, got %s", n.describe())
		return
	}
	type plain FromTemplate
	var v plain
	d.decodeStruct(n, refValue(&v))
	*f = FromTemplate(v)
}

// ImageSourceType classifies image.source.
type ImageSourceType string

// Image source types.
const (
	ImageURL    ImageSourceType = "url"    // downloaded with download-url
	ImageVolume ImageSourceType = "volume" // an existing volume, e.g. local:import/x.qcow2
)

// Image is a cloud image imported as a guest's first disk.
type Image struct {
	Source   string    `json:"source" pm:"required,format=not-empty" doc:"http(s) URL of a .qcow2, .raw, .vmdk or .img image, or a volume such as local:import/debian-12.qcow2."`
	Storage  string    `json:"storage,omitempty" pm:"format=storage-id" doc:"URL only: storage with content type import to download to (default local)."`
	Filename string    `json:"filename,omitempty" pm:"format=filename" doc:"URL only: file name on that storage (default: from the URL, its extension replaced by the format's)."`
	Format   string    `json:"format,omitempty" pm:"enum=qcow2|raw|vmdk" doc:"URL only: the image's format, which names the stored file so that Proxmox checks and imports it as such (default from the URL's name: .raw raw, .vmdk vmdk, anything else qcow2, .img included). Compressed images (.xz, .gz, ...) are refused."`
	Checksum *Checksum `json:"checksum,omitempty" doc:"URL only: verified after the download."`

	// Type is set by the loader from Source.
	Type ImageSourceType `json:"-"`
}

// IsURL reports whether the image is downloaded from a URL.
func (i *Image) IsURL() bool { return i.Type == ImageURL }

// FileName is image.filename or the URL's last path element ("" for volumes).
func (i *Image) FileName() string {
	if i.Type != ImageURL {
		return ""
	}
	if i.Filename != "" {
		return i.Filename
	}
	return urlBase(i.Source)
}

// Checksum verifies a download.
type Checksum struct {
	Algo  string `json:"algo" pm:"required,enum=md5|sha1|sha224|sha256|sha384|sha512" doc:"Algorithm."`
	Value string `json:"value" pm:"required,format=hex" doc:"Hex digest."`
}

var checksumLen = map[string]int{"md5": 32, "sha1": 40, "sha224": 56, "sha256": 64, "sha384": 96, "sha512": 128}

// Disk is a QEMU disk in a slot.
type Disk struct {
	Slot     string `json:"slot,omitempty" pm:"format=disk-slot" doc:"scsi0-30, virtio0-15 or sata0-5; the loader assigns the lowest free scsiN when omitted."`
	Storage  string `json:"storage" pm:"required,format=storage-id" doc:"Storage the disk lives on."`
	Size     Size   `json:"size,omitzero" doc:"Size, e.g. 20G. Grows an imported or cloned disk; required for other disks. Disks never shrink."`
	Format   string `json:"format,omitempty" pm:"enum=raw|qcow2|vmdk" doc:"Image format on file-based storages."`
	Cache    string `json:"cache,omitempty" pm:"enum=none|writethrough|writeback|unsafe|directsync" doc:"Cache mode."`
	Discard  bool   `json:"discard,omitempty" doc:"Pass discard/TRIM to the storage."`
	SSD      bool   `json:"ssd,omitempty" doc:"Present the disk as an SSD."`
	IOThread bool   `json:"iothread,omitempty" doc:"Dedicated I/O thread (needs scsihw virtio-scsi-single for SCSI)."`
	Backup   *bool  `json:"backup,omitempty" doc:"Include in backups (default true)."`
}

// NIC is a QEMU network device in a slot.
type NIC struct {
	Slot     string  `json:"slot,omitempty" pm:"format=net-slot" doc:"net0-net31; the loader assigns the lowest free netN when omitted."`
	Bridge   string  `json:"bridge" pm:"required,format=bridge" doc:"Bridge or SDN vnet, e.g. vmbr0."`
	Model    string  `json:"model,omitempty" pm:"enum=virtio|e1000|e1000-82540em|e1000-82544gc|e1000-82545em|e1000e|i82551|i82557b|i82559er|ne2k_isa|ne2k_pci|pcnet|rtl8139|vmxnet3" doc:"Card model (default virtio)."`
	Tag      int     `json:"tag,omitempty" pm:"min=1,max=4094" doc:"VLAN tag."`
	Firewall bool    `json:"firewall,omitempty" doc:"Protect with the Proxmox firewall."`
	MACAddr  string  `json:"macaddr,omitempty" pm:"format=mac" doc:"MAC address (generated by Proxmox when omitted, then kept)."`
	MTU      int     `json:"mtu,omitempty" pm:"min=1,max=65520" doc:"MTU (virtio only); 1 uses the bridge's MTU."`
	Rate     float64 `json:"rate,omitempty" pm:"min=0" doc:"Rate limit in MB/s."`
	Queues   int     `json:"queues,omitempty" pm:"min=0,max=64" doc:"Packet queues."`
	LinkDown bool    `json:"linkDown,omitempty" doc:"Disconnect the link."`
}

// DefaultNICModel is the model of a NIC that does not name one.
const DefaultNICModel = "virtio"

// SecretRef reads a secret from outside the repository: exactly one of Env
// (an environment variable of the proxmops process) and File (a path on the
// proxmops host).
type SecretRef struct {
	Env  string `json:"env,omitempty" pm:"format=env-name" doc:"Environment variable holding the secret."`
	File string `json:"file,omitempty" pm:"format=abs-path" doc:"Absolute path of a file holding the secret (trailing newline removed)."`
}

// CloudInit holds Proxmox's native cloud-init settings.
type CloudInit struct {
	User         string     `json:"user,omitempty" pm:"format=not-empty" doc:"User to create or configure (ciuser)."`
	PasswordFrom *SecretRef `json:"passwordFrom,omitempty" doc:"The user's password, by reference; never inline."`
	SSHKeys      []string   `json:"sshKeys,omitempty" pm:"format=ssh-key" doc:"Public SSH keys."`
	IP           string     `json:"ip,omitempty" pm:"format=not-empty" doc:"Shorthand for net0: dhcp, an address such as 10.0.0.5/24, or ip=10.0.0.5/24,gw=10.0.0.1. Excludes an ipConfigs entry for net0."`
	IPConfigs    []IPConfig `json:"ipConfigs,omitempty" doc:"IP settings per NIC (ipconfigN); entries without slot follow net0, net1... in order."`
	Nameserver   string     `json:"nameserver,omitempty" doc:"DNS servers, space separated."`
	SearchDomain string     `json:"searchDomain,omitempty" doc:"DNS search domains, space separated."`
	Upgrade      *bool      `json:"upgrade,omitempty" doc:"Upgrade packages on first boot (Proxmox default true)."`
}

func (*CloudInit) fieldHint(name string) string {
	switch name {
	case "password", "cipassword":
		return "inline passwords are not accepted; use passwordFrom: {env: NAME} or {file: PATH}"
	case "ipconfig", "ipConfig", "ipconfigs":
		return fmt.Sprintf("unknown field `%s`, did you mean `ipConfigs`?", name)
	}
	return ""
}

// IPConfig is the cloud-init IP configuration of one NIC.
type IPConfig struct {
	Slot string `json:"slot,omitempty" pm:"format=net-slot" doc:"The NIC (net0...)."`
	IP   string `json:"ip,omitempty" pm:"format=ip4-config" doc:"dhcp or an IPv4 address with prefix length."`
	Gw   string `json:"gw,omitempty" pm:"format=ipv4" doc:"IPv4 gateway."`
	IP6  string `json:"ip6,omitempty" pm:"format=ip6-config" doc:"dhcp, auto or an IPv6 address with prefix length."`
	Gw6  string `json:"gw6,omitempty" pm:"format=ipv6" doc:"IPv6 gateway."`
}

// String renders the Proxmox ipconfigN value, e.g. "ip=10.0.0.5/24,gw=10.0.0.1".
func (c IPConfig) String() string {
	var parts []string
	for _, kv := range [][2]string{{"gw", c.Gw}, {"gw6", c.Gw6}, {"ip", c.IP}, {"ip6", c.IP6}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	return strings.Join(parts, ",")
}

// ParseIPShorthand parses cloudInit.ip: "dhcp", "10.0.0.5/24" or the Proxmox
// form "ip=10.0.0.5/24,gw=10.0.0.1" (keys ip, gw, ip6, gw6).
func ParseIPShorthand(s string) (IPConfig, error) {
	var c IPConfig
	if !strings.Contains(s, "=") {
		c.IP = s
	} else {
		for part := range strings.SplitSeq(s, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok {
				return c, fmt.Errorf("%q: %q is not key=value", s, part)
			}
			var dst *string
			switch k {
			case "ip":
				dst = &c.IP
			case "gw":
				dst = &c.Gw
			case "ip6":
				dst = &c.IP6
			case "gw6":
				dst = &c.Gw6
			default:
				return c, fmt.Errorf("%q: unknown key %q%s", s, k, didYouMean(k, []string{"ip", "gw", "ip6", "gw6"}))
			}
			if *dst != "" {
				return c, fmt.Errorf("%q: %s given twice", s, k)
			}
			*dst = v
		}
	}
	for _, chk := range []struct{ format, v string }{{"ip4-config", c.IP}, {"ipv4", c.Gw}, {"ip6-config", c.IP6}, {"ipv6", c.Gw6}} {
		if chk.v != "" {
			if err := checkFormat(chk.format, chk.v); err != nil {
				return c, err
			}
		}
	}
	if c.IP == "" && c.IP6 == "" {
		return c, fmt.Errorf("%q sets no address (ip or ip6)", s)
	}
	return c, nil
}

// IPConfigs returns the effective IP configuration per NIC slot: the ip
// shorthand as net0 plus every ipConfigs entry (slots assigned by the loader).
func (c *CloudInit) EffectiveIPConfigs() map[string]IPConfig {
	out := map[string]IPConfig{}
	if c == nil {
		return out
	}
	if c.IP != "" {
		if ic, err := ParseIPShorthand(c.IP); err == nil {
			ic.Slot = "net0"
			out["net0"] = ic
		}
	}
	for _, ic := range c.IPConfigs {
		out[ic.Slot] = ic
	}
	return out
}

// Startup is the start order and delays (Proxmox's startup option).
type Startup struct {
	Order int `json:"order,omitempty" pm:"min=0" doc:"Start order; shutdown runs in reverse."`
	Up    int `json:"up,omitempty" pm:"min=0" doc:"Seconds to wait after starting before the next guest starts."`
	Down  int `json:"down,omitempty" pm:"min=0" doc:"Seconds to wait for shutdown."`
}

// String renders the Proxmox value, e.g. "order=1,up=30".
func (s Startup) String() string {
	parts := []string{"order=" + strconv.Itoa(s.Order)}
	if s.Up > 0 {
		parts = append(parts, "up="+strconv.Itoa(s.Up))
	}
	if s.Down > 0 {
		parts = append(parts, "down="+strconv.Itoa(s.Down))
	}
	return strings.Join(parts, ",")
}

// RootFS is a container's root volume.
type RootFS struct {
	Storage      string   `json:"storage" pm:"required,format=storage-id" doc:"Storage with content type rootdir."`
	Size         Size     `json:"size" pm:"required" doc:"Size, e.g. 8G. Grows only."`
	MountOptions []string `json:"mountOptions,omitempty" pm:"enum=discard|lazytime|noatime|nodev|noexec|nosuid" doc:"Mount options."`
	ACL          *bool    `json:"acl,omitempty" doc:"Force ACL support on or off."`
	Quota        bool     `json:"quota,omitempty" doc:"Enable user quotas."`
}

// Mountpoint is a container mount point: storage-backed (storage and size)
// or a bind mount of a host directory (bind).
type Mountpoint struct {
	Slot         string   `json:"slot,omitempty" pm:"format=mp-slot" doc:"mp0-mp255; the loader assigns the lowest free mpN when omitted."`
	Path         string   `json:"path" pm:"required,format=abs-path" doc:"Mount path inside the container."`
	Storage      string   `json:"storage,omitempty" pm:"format=storage-id" doc:"Storage of a new volume; needs size; excludes bind."`
	Size         Size     `json:"size,omitzero" doc:"Size of the storage-backed volume, e.g. 32G."`
	Bind         string   `json:"bind,omitempty" pm:"format=abs-path" doc:"Host directory to bind-mount; excludes storage."`
	ReadOnly     bool     `json:"ro,omitempty" doc:"Read-only."`
	Backup       bool     `json:"backup,omitempty" doc:"Include the volume in backups."`
	Shared       bool     `json:"shared,omitempty" doc:"Bind mount available on every node (for migration)."`
	MountOptions []string `json:"mountOptions,omitempty" pm:"enum=discard|lazytime|noatime|nodev|noexec|nosuid" doc:"Mount options."`
	ACL          *bool    `json:"acl,omitempty" doc:"Force ACL support on or off."`
	Quota        bool     `json:"quota,omitempty" doc:"Enable user quotas."`
}

// ContainerNIC is an LXC network interface in a slot.
type ContainerNIC struct {
	Slot     string  `json:"slot,omitempty" pm:"format=net-slot" doc:"net0-net31; the loader assigns the lowest free netN when omitted."`
	Name     string  `json:"name,omitempty" pm:"format=iface" doc:"Interface name inside the container (default ethN for netN)."`
	Bridge   string  `json:"bridge" pm:"required,format=bridge" doc:"Bridge or SDN vnet."`
	IP       string  `json:"ip,omitempty" pm:"format=ip4-config" doc:"dhcp, manual or an IPv4 address with prefix length."`
	Gw       string  `json:"gw,omitempty" pm:"format=ipv4" doc:"IPv4 gateway."`
	IP6      string  `json:"ip6,omitempty" pm:"format=ip6-config" doc:"dhcp, auto, manual or an IPv6 address with prefix length."`
	Gw6      string  `json:"gw6,omitempty" pm:"format=ipv6" doc:"IPv6 gateway."`
	Tag      int     `json:"tag,omitempty" pm:"min=1,max=4094" doc:"VLAN tag."`
	Firewall bool    `json:"firewall,omitempty" doc:"Protect with the Proxmox firewall."`
	HWAddr   string  `json:"hwaddr,omitempty" pm:"format=mac" doc:"MAC address (generated when omitted, then kept)."`
	MTU      int     `json:"mtu,omitempty" pm:"min=64,max=65535" doc:"MTU."`
	Rate     float64 `json:"rate,omitempty" pm:"min=0" doc:"Rate limit in MB/s."`
}

// Features are LXC features.
type Features struct {
	Nesting bool     `json:"nesting,omitempty" doc:"Allow nesting (needed by systemd and Docker)."`
	Keyctl  bool     `json:"keyctl,omitempty" doc:"Allow keyctl() (unprivileged only; for Docker)."`
	Fuse    bool     `json:"fuse,omitempty" doc:"Allow FUSE mounts."`
	Mknod   bool     `json:"mknod,omitempty" doc:"Allow mknod() of some devices (experimental)."`
	Mount   []string `json:"mount,omitempty" pm:"format=mount-type" doc:"File system types the container may mount, e.g. nfs, cifs."`
}

// String renders the Proxmox features value, e.g. "keyctl=1,nesting=1".
func (f Features) String() string {
	var parts []string
	for _, kv := range []struct {
		k string
		v bool
	}{{"fuse", f.Fuse}, {"keyctl", f.Keyctl}, {"mknod", f.Mknod}} {
		if kv.v {
			parts = append(parts, kv.k+"=1")
		}
	}
	if len(f.Mount) > 0 {
		parts = append(parts, "mount="+strings.Join(f.Mount, ";"))
	}
	if f.Nesting {
		parts = append(parts, "nesting=1")
	}
	return strings.Join(parts, ",")
}

// Provision is configuration applied inside a guest over SSH: packages
// installed, files written, directories copied, then commands run, in that
// order. It runs after creation and start, and again whenever the hash of its
// inputs (the steps and the content of every file and copied tree) changes.
type Provision struct {
	Address  string          `json:"address,omitempty" pm:"format=host" doc:"Host name or IP address proxmops reaches the guest's SSH server at (default: the first static IP of the guest's NICs, without its prefix length)."`
	Port     int             `json:"port,omitempty" pm:"min=1,max=65535" doc:"SSH port (default 22)."`
	User     string          `json:"user,omitempty" pm:"format=user" doc:"SSH user (default root); proxmops' key is injected for root (containers) or the cloud-init user (VMs)."`
	Packages []string        `json:"packages,omitempty" pm:"format=package" doc:"Packages to install with the distribution's package manager (apt, apk or dnf, detected from /etc/os-release)."`
	Files    []ProvisionFile `json:"files,omitempty" doc:"Files to write, each from content or from a file of the repository."`
	Copy     []ProvisionCopy `json:"copy,omitempty" doc:"Directories of the repository copied into the guest (e.g. a cookbook or playbook folder)."`
	Commands []string        `json:"commands,omitempty" pm:"format=not-empty" doc:"Shell commands run in order with /bin/sh -c as the SSH user; a failing command stops the run and fails the provisioning with its exit status and output."`
}

// ProvisionFile is one file written by provisioning.
type ProvisionFile struct {
	Path    string `json:"path" pm:"required,format=abs-path" doc:"Absolute path inside the guest; missing parent directories are created."`
	Content string `json:"content,omitempty" doc:"File content; excludes source."`
	Source  string `json:"source,omitempty" pm:"format=rel-path" doc:"A file of the repository, relative to the manifest's directory (it may not leave the repository); excludes content."`
	Mode    string `json:"mode,omitempty" pm:"format=file-mode" doc:"Octal permissions, e.g. \"0644\" (quoted; default 0644)."`
	Owner   string `json:"owner,omitempty" pm:"format=owner" doc:"user or user:group (default: the SSH user)."`

	// Data is the file's content: Content, or the source file read by the
	// loader (LoadDir, LoadFS).
	Data []byte `json:"-"`
}

// ProvisionCopy copies a directory of the repository into the guest.
type ProvisionCopy struct {
	Source string `json:"source" pm:"required,format=rel-path" doc:"A directory of the repository, relative to the manifest's directory (it may not leave the repository)."`
	Path   string `json:"path" pm:"required,format=abs-path" doc:"Directory inside the guest that receives the source's content (created when missing; files not in the source are left alone)."`
	Owner  string `json:"owner,omitempty" pm:"format=owner" doc:"user or user:group of the copied files and directories (default: the SSH user)."`

	// Tree is the source directory's files, read by the loader: paths are
	// slash-separated and relative to Source, in lexical order.
	Tree []TreeFile `json:"-"`
}

// TreeFile is one regular file of a copied directory.
type TreeFile struct {
	Path string // relative to the copied directory, slash-separated
	Mode uint32 // 0755 when executable in the repository, else 0644
	Data []byte
}

// Loaded reports whether every source of the provisioning was read (the
// loader of a repository fills them; ParseFile alone cannot).
func (p *Provision) Loaded() bool {
	for _, f := range p.Files {
		if f.Source != "" && f.Data == nil {
			return false
		}
	}
	for _, c := range p.Copy {
		if c.Tree == nil {
			return false
		}
	}
	return true
}

func urlBase(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	b := path.Base(u.Path)
	if b == "/" || b == "." {
		return ""
	}
	return b
}

func refValue(p any) reflect.Value { return reflect.ValueOf(p).Elem() }
