package engine

import (
	"fmt"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/pve"
)

const (
	kib = int64(1) << 10
	mib = kib << 10
	gib = mib << 10
	tib = gib << 10
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
		mult = kib
	case strings.HasSuffix(upper, "M"):
		mult = mib
	case strings.HasSuffix(upper, "G"):
		mult = gib
	case strings.HasSuffix(upper, "T"):
		mult = tib
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
	case b%tib == 0:
		return fmt.Sprintf("%dT", b/tib)
	case b%gib == 0:
		return fmt.Sprintf("%dG", b/gib)
	case b%mib == 0:
		return fmt.Sprintf("%dM", b/mib)
	case b%kib == 0:
		return fmt.Sprintf("%dK", b/kib)
	}
	return strconv.FormatInt(b, 10)
}

// nicModels are the NIC models Proxmox writes as "model=MAC".
var nicModels = map[string]bool{"virtio": true, "e1000": true, "e1000e": true, "rtl8139": true, "vmxnet3": true,
	"e1000-82540em": true, "e1000-82544gc": true, "e1000-82545em": true, "i82551": true, "i82557b": true,
	"i82559er": true, "ne2k_isa": true, "ne2k_pci": true, "pcnet": true}

// parsedNIC is a net[n] value read back.
type parsedNIC struct {
	Model string
	MAC   string
	props pve.PropertyString
}

func parseNIC(v string) parsedNIC {
	ps := pve.ParsePropertyString(v, "model")
	n := parsedNIC{props: ps}
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

func (n parsedNIC) get(k string) string { return n.props.Values[k] }

// isDiskKey reports whether a config key is a disk slot.
func isDiskKey(k string) bool {
	for _, p := range []string{"scsi", "virtio", "sata", "ide", "efidisk", "tpmstate"} {
		if rest, ok := strings.CutPrefix(k, p); ok && rest != "" {
			if _, err := strconv.Atoi(rest); err == nil {
				return true
			}
		}
	}
	return false
}

// parsedDisk is a disk slot value read back.
type parsedDisk struct {
	File  string // local-lvm:vm-120-disk-0, local-lvm:vm-120-cloudinit, none
	Size  int64
	Media string
	props pve.PropertyString
}

func parseDisk(v string) parsedDisk {
	ps := pve.ParsePropertyString(v, "file")
	d := parsedDisk{File: ps.Values["file"], Media: ps.Values["media"], props: ps}
	if s, ok := ps.Values["size"]; ok {
		d.Size, _ = ParseSize(s)
	}
	return d
}

func (d parsedDisk) isCloudInit() bool { return strings.Contains(d.File, "cloudinit") }
func (d parsedDisk) isCdrom() bool     { return d.Media == "cdrom" }

// storageOf returns the storage part of a volume id.
func storageOf(volid string) string {
	s, _, _ := strings.Cut(volid, ":")
	return s
}

func boolStr(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// truthy reads a Proxmox boolean ("1", "on", "yes", "true").
func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "on", "yes", "true":
		return true
	}
	return false
}

// normalTags de-duplicates and sorts tags (case-insensitively first, as
// get_unique_tags' default does), keeping each tag's case: whether Proxmox
// lower-cases them is the cluster's tag-style (sameTags).
func normalTags(tags []string) []string {
	out := appendTags(nil, tags...)
	sort.SliceStable(out, func(i, j int) bool {
		if li, lj := strings.ToLower(out[i]), strings.ToLower(out[j]); li != lj {
			return li < lj
		}
		return out[i] < out[j]
	})
	return out
}

// appendTags adds tags to a list that lacks them, in order, keeping the
// list's own tags, their case and their order as they are.
func appendTags(list []string, tags ...string) []string {
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

// foldTags is normalTags as a cluster without tag-style case-sensitive=1
// stores them: lower-cased (GuestHelpers.pm get_unique_tags).
func foldTags(tags []string) []string {
	low := make([]string, len(tags))
	for i, t := range tags {
		low[i] = strings.ToLower(t)
	}
	return normalTags(low)
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// normalIPConfig parses "ip=dhcp,gw=..." into a canonical string for
// comparison.
func normalIPConfig(v string) string {
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

// imageFormat is the format of an image: the declared one, else the one
// its name implies (.raw raw, .vmdk vmdk, anything else qcow2: .img is
// what Ubuntu and others name qcow2 cloud images).
func imageFormat(declared, name string) string {
	if declared != "" {
		return declared
	}
	if f, ok := imageFormatOfExt[strings.ToLower(path.Ext(name))]; ok {
		return f
	}
	return "qcow2"
}

// importFileName picks the name a cloud image is stored under for import:
// the override or the URL's last path element, its image extension
// replaced by the format's, so that Proxmox checks the file as that format.
func importFileName(rawURL, override, format string) (string, error) {
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
	format = imageFormat(format, name)
	name = sanitizeFileName(name)
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

// isoFileName picks the file name of an ISO volume: .iso and .img are what
// Proxmox accepts for iso content.
func isoFileName(rawURL, override, fallback string) (string, error) {
	name := override
	if name == "" {
		u, err := url.Parse(rawURL)
		if err != nil {
			return "", fmt.Errorf("invalid ISO URL %q: %w", rawURL, err)
		}
		name = path.Base(u.Path)
	}
	name = sanitizeFileName(name)
	ext := strings.ToLower(path.Ext(name))
	if ext == ".iso" || ext == ".img" {
		return name, nil
	}
	if name == "" || name == "." || name == "/" {
		name = fallback
	}
	return name + ".iso", nil
}

// sanitizeFileName keeps the characters Proxmox keeps in volume names.
func sanitizeFileName(s string) string {
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
