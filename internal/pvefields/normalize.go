package pvefields

import (
	"fmt"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/pve"
)

// Slots for the drives proxmops adds itself.
const (
	CloudInitSlot = "ide2" // Proxmox's cloud-init drive
	CdromSlot     = "ide0" // an ISO or the userData CIDATA seed
)

// Units of ParseSize and FormatSize.
const (
	KiB = int64(1) << 10
	MiB = KiB << 10
	GiB = MiB << 10
	TiB = GiB << 10
)

// ParseSize reads a size as Proxmox and manifests write it: "20G", "512M",
// "1T", "20GiB", "10240K", or a plain number of bytes.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty size")
	}
	upper := strings.ToUpper(s)
	upper = strings.TrimSuffix(strings.TrimSuffix(upper, "IB"), "B")
	mult := int64(1)
	switch {
	case strings.HasSuffix(upper, "K"):
		mult = KiB
	case strings.HasSuffix(upper, "M"):
		mult = MiB
	case strings.HasSuffix(upper, "G"):
		mult = GiB
	case strings.HasSuffix(upper, "T"):
		mult = TiB
	}
	if mult != 1 {
		upper = upper[:len(upper)-1]
	}
	f, err := strconv.ParseFloat(upper, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return int64(f * float64(mult)), nil
}

// FormatSize renders bytes in the largest unit that divides them, as
// Proxmox writes sizes ("20G", "512M").
func FormatSize(b int64) string {
	switch {
	case b == 0:
		return "0"
	case b%TiB == 0:
		return fmt.Sprintf("%dT", b/TiB)
	case b%GiB == 0:
		return fmt.Sprintf("%dG", b/GiB)
	case b%MiB == 0:
		return fmt.Sprintf("%dM", b/MiB)
	case b%KiB == 0:
		return fmt.Sprintf("%dK", b/KiB)
	}
	return strconv.FormatInt(b, 10)
}

// nicModels are the NIC models Proxmox writes as "model=MAC".
var nicModels = map[string]bool{"virtio": true, "e1000": true, "e1000e": true, "rtl8139": true, "vmxnet3": true,
	"e1000-82540em": true, "e1000-82544gc": true, "e1000-82545em": true, "i82551": true, "i82557b": true,
	"i82559er": true, "ne2k_isa": true, "ne2k_pci": true, "pcnet": true}

// IsNICModel says whether m is a NIC model Proxmox knows.
func IsNICModel(m string) bool { return nicModels[m] }

// NIC is a net[n] value read back.
type NIC struct {
	Model string
	MAC   string
	Props pve.PropertyString
}

// ParseNIC reads a VM's net[n] value: "virtio=MAC,bridge=vmbr0" or
// "model=virtio,macaddr=MAC,...".
func ParseNIC(v string) NIC {
	ps := pve.ParsePropertyString(v, "model")
	n := NIC{Props: ps}
	for _, k := range ps.Keys {
		if nicModels[k] {
			n.Model, n.MAC = k, ps.Values[k]
			break
		}
	}
	if n.Model == "" {
		n.Model = ps.Values["model"]
		n.MAC = ps.Values["macaddr"]
	}
	return n
}

// Get is the value of key k of the NIC ("" when absent).
func (n NIC) Get(k string) string { return n.Props.Values[k] }

// IsDiskKey reports whether a config key is a disk slot.
func IsDiskKey(k string) bool {
	for _, p := range []string{"scsi", "virtio", "sata", "ide", "efidisk", "tpmstate"} {
		if rest, ok := strings.CutPrefix(k, p); ok && rest != "" {
			if _, err := strconv.Atoi(rest); err == nil {
				return true
			}
		}
	}
	return false
}

// Disk is a disk slot value read back.
type Disk struct {
	File  string // local-lvm:vm-120-disk-0, local-lvm:vm-120-cloudinit, none
	Size  int64
	Media string
	Props pve.PropertyString
}

// ParseDisk reads a disk slot value: its volume, size and media.
func ParseDisk(v string) Disk {
	ps := pve.ParsePropertyString(v, "file")
	d := Disk{File: ps.Values["file"], Media: ps.Values["media"], Props: ps}
	if s, ok := ps.Values["size"]; ok {
		d.Size, _ = ParseSize(s)
	}
	return d
}

// IsCloudInit says whether the disk is Proxmox's cloud-init drive.
func (d Disk) IsCloudInit() bool { return strings.Contains(d.File, "cloudinit") }

// IsCdrom says whether the disk is a CD-ROM drive.
func (d Disk) IsCdrom() bool { return d.Media == "cdrom" }

// StorageOf returns the storage part of a volume id.
func StorageOf(volid string) string {
	s, _, _ := strings.Cut(volid, ":")
	return s
}

// FormatBool writes a boolean as Proxmox reads it back: "1" or "0".
func FormatBool(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// ParseBool reads a Proxmox boolean ("1", "on", "yes", "true").
func ParseBool(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "on", "yes", "true":
		return true
	}
	return false
}

// NormalTags de-duplicates and sorts tags (case-insensitively first, as
// get_unique_tags' default does), keeping each tag's case: whether Proxmox
// lower-cases them is the cluster's tag-style (SameTags).
func NormalTags(tags []string) []string {
	out := AppendTags(nil, tags...)
	sort.SliceStable(out, func(i, j int) bool {
		if li, lj := strings.ToLower(out[i]), strings.ToLower(out[j]); li != lj {
			return li < lj
		}
		return out[i] < out[j]
	})
	return out
}

// AppendTags adds tags to a list that lacks them, in order, keeping the
// list's own tags, their case and their order as they are.
func AppendTags(list []string, tags ...string) []string {
	out := make([]string, 0, len(list)+len(tags))
	seen := map[string]bool{}
	for _, t := range append(append([]string(nil), list...), tags...) {
		t = strings.TrimSpace(t)
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// FoldTags is NormalTags as a cluster without tag-style case-sensitive=1
// stores them: lower-cased (GuestHelpers.pm get_unique_tags).
func FoldTags(tags []string) []string {
	low := make([]string, len(tags))
	for i, t := range tags {
		low[i] = strings.ToLower(t)
	}
	return NormalTags(low)
}

// NormalIPConfig parses "ip=dhcp,gw=..." into a canonical string for
// comparison.
func NormalIPConfig(v string) string {
	ps := pve.ParsePropertyString(v, "ip")
	keys := append([]string(nil), ps.Keys...)
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+strings.ToLower(ps.Values[k]))
	}
	return strings.Join(parts, ",")
}

// Image formats and compressed suffixes of import content: pve-storage's
// download_url accepts .qcow2, .raw, .vmdk (and .ova) names for import
// content (Storage.pm UPLOAD_IMPORT_EXT_RE_1) and checks the file with
// qemu-img info in the format the name implies; it decompresses ISOs only.
var (
	imageFormatOfExt = map[string]string{".qcow2": "qcow2", ".qcow": "qcow2", ".qcow2c": "qcow2", ".img": "qcow2", ".raw": "raw", ".vmdk": "vmdk"}
	compressedExts   = []string{".xz", ".gz", ".bz2", ".zst", ".zstd", ".lz4", ".lzma", ".lzo", ".zip", ".7z", ".tgz", ".z"}
)

// compressedImageExt returns the compression suffix of an image file name
// (".xz" for "noble.img.xz"), or "".
func compressedImageExt(name string) string {
	ext := strings.ToLower(path.Ext(name))
	for _, c := range compressedExts {
		if ext == c {
			return ext
		}
	}
	return ""
}

// ImageFormat is the format of an image: the declared one, else the one
// its name implies (.raw raw, .vmdk vmdk, anything else qcow2: .img is
// what Ubuntu and others name qcow2 cloud images).
func ImageFormat(declared, name string) string {
	if declared != "" {
		return declared
	}
	if f, ok := imageFormatOfExt[strings.ToLower(path.Ext(name))]; ok {
		return f
	}
	return "qcow2"
}

// ImportFileName picks the name a cloud image is stored under for import:
// the override or the URL's last path element, its image extension
// replaced by the format's, so that Proxmox checks the file as that format.
func ImportFileName(rawURL, override, format string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("invalid image URL %q: %w", rawURL, err)
	}
	if ext := compressedImageExt(u.Path); ext != "" {
		return "", fmt.Errorf("the image %s is compressed (%s): Proxmox stores import images as downloaded and cannot import a compressed one; use the uncompressed .qcow2, .raw or .vmdk image", path.Base(u.Path), ext)
	}
	name := override
	if name == "" {
		name = path.Base(u.Path)
	}
	format = ImageFormat(format, name)
	name = SanitizeFileName(name)
	if name == "" || name == "." || name == "/" || name == "_" {
		return "", fmt.Errorf("cannot derive a file name from %q", rawURL)
	}
	ext := path.Ext(name)
	if strings.ToLower(ext) == ".ova" {
		return name, nil
	}
	if _, ok := imageFormatOfExt[strings.ToLower(ext)]; ok {
		name = strings.TrimSuffix(name, ext)
	}
	return name + "." + format, nil
}

// ISOFileName picks the file name of an ISO volume: .iso and .img are what
// Proxmox accepts for iso content.
func ISOFileName(rawURL, override, fallback string) (string, error) {
	name := override
	if name == "" {
		u, err := url.Parse(rawURL)
		if err != nil {
			return "", fmt.Errorf("invalid ISO URL %q: %w", rawURL, err)
		}
		name = path.Base(u.Path)
	}
	name = SanitizeFileName(name)
	ext := strings.ToLower(path.Ext(name))
	if ext == ".iso" || ext == ".img" {
		return name, nil
	}
	if name == "" || name == "." || name == "/" {
		name = fallback
	}
	return name + ".iso", nil
}

// SanitizeFileName keeps the characters Proxmox keeps in volume names.
func SanitizeFileName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	return b.String()
}

// VolumeFormat is the format parse_volname reads from a volume name.
func VolumeFormat(volid string) string {
	_, name, _ := strings.Cut(volid, ":")
	base := name[strings.LastIndex(name, "/")+1:]
	if i := strings.LastIndex(base, "."); i >= 0 {
		switch ext := base[i+1:]; ext {
		case "raw", "qcow2", "vmdk", "subvol":
			return ext
		}
	}
	if strings.HasPrefix(base, "subvol-") {
		return "subvol"
	}
	return "raw"
}
