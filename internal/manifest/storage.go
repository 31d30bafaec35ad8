package manifest

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// KindStorage is a cluster storage definition (/storage).
const KindStorage Kind = "Storage"

// storageName is pve-storage's pve-storage-id
// ([a-z][a-z0-9\-\_\.]*[a-z0-9]) within a manifest name: it starts with
// a letter.
var storageName = &NameRule{Pattern: "^[a-z]", check: func(n string) error {
	if !(n[0] >= 'a' && n[0] <= 'z') {
		return errors.New("a storage ID must start with a letter")
	}
	return nil
}}

// reFingerprint is pve-storage PBSPlugin's fingerprint pattern.
var reFingerprint = regexp.MustCompile(`^([A-Fa-f0-9]{2}:){31}[A-Fa-f0-9]{2}$`)

// Storage is a cluster storage definition (/storage, storage.cfg).
type Storage struct {
	Object
	Spec StorageSpec
}

// StorageSpec is the desired storage definition; metadata.name is the
// storage ID. The fields each type takes are pve-storage's plugin options
// (src/PVE/Storage/*Plugin.pm options); type and the fields marked fixed
// cannot change after creation (Proxmox refuses them on update), so a
// change of one is a replacement that needs the annotation
// proxmops.dev/replace.
type StorageSpec struct {
	Type    string   `json:"type" pm:"required,enum=dir|nfs|cifs|pbs|lvmthin|zfspool" doc:"Storage type. Fixed at creation."`
	Content []string `json:"content,omitempty" pm:"enum=images|rootdir|vztmpl|iso|backup|snippets|import" doc:"Content types the storage holds (default: the type's default, e.g. images for nfs). pbs: backup; lvmthin, zfspool: images, rootdir."`
	Nodes   []string `json:"nodes,omitempty" pm:"format=node" doc:"Restrict the storage to these nodes (default all)."`
	Disable bool     `json:"disable,omitempty" doc:"Disable the storage."`
	Shared  bool     `json:"shared,omitempty" doc:"dir: the directory is the same on every node (e.g. a cluster file system). nfs, cifs and pbs are always shared."`

	Path    string `json:"path,omitempty" pm:"format=abs-path" doc:"dir (required): the directory; nfs, cifs: the mount point (default /mnt/pve/<name>). Fixed at creation."`
	Server  string `json:"server,omitempty" pm:"format=not-empty" doc:"nfs, cifs, pbs (required): server name or IP address. Fixed at creation."`
	Export  string `json:"export,omitempty" pm:"format=abs-path" doc:"nfs (required): the NFS export path. Fixed at creation."`
	Options string `json:"options,omitempty" pm:"format=not-empty" doc:"nfs, cifs: mount options, e.g. vers=4.2."`
	Format  string `json:"format,omitempty" pm:"enum=raw|qcow2|vmdk" doc:"dir, nfs, cifs: default image format."`

	Share      string `json:"share,omitempty" pm:"format=not-empty" doc:"cifs (required): the CIFS share. Fixed at creation."`
	Subdir     string `json:"subdir,omitempty" pm:"format=abs-path" doc:"cifs: subdirectory of the share to mount."`
	Domain     string `json:"domain,omitempty" pm:"format=not-empty" doc:"cifs: user domain."`
	SMBVersion string `json:"smbVersion,omitempty" pm:"enum=default|2.0|2.1|3|3.0|3.11" doc:"cifs: SMB protocol version."`
	Username   string `json:"username,omitempty" pm:"format=not-empty" doc:"cifs, pbs: user name (pbs: user@realm or a token, user@realm!token)."`

	PasswordFrom *SecretRef `json:"passwordFrom,omitempty" doc:"cifs, pbs: the password (pbs: or API token secret), read from an environment variable or a file; sent when the storage is created or adopted, never shown nor stored by proxmops (Proxmox never returns it, so a password changed by hand is not seen)."`

	Datastore   string `json:"datastore,omitempty" pm:"format=not-empty" doc:"pbs (required): the Proxmox Backup Server datastore. Fixed at creation."`
	Namespace   string `json:"namespace,omitempty" pm:"format=not-empty" doc:"pbs: namespace in the datastore."`
	Port        int    `json:"port,omitempty" pm:"min=1,max=65535" doc:"pbs: port (default 8007)."`
	Fingerprint string `json:"fingerprint,omitempty" pm:"format=not-empty" doc:"pbs: the server certificate's SHA-256 fingerprint (32 hex pairs joined by colons)."`

	EncryptionKeyFrom *SecretRef `json:"encryptionKeyFrom,omitempty" doc:"pbs: the client-side encryption key (its JSON), read from an environment variable or a file; sent at creation or adoption only, never shown nor stored by proxmops."`

	VGName   string `json:"vgName,omitempty" pm:"format=not-empty" doc:"lvmthin (required): the LVM volume group. Fixed at creation."`
	ThinPool string `json:"thinPool,omitempty" pm:"format=not-empty" doc:"lvmthin (required): the LVM thin pool. Fixed at creation."`

	Pool       string `json:"pool,omitempty" pm:"format=not-empty" doc:"zfspool (required): the ZFS pool or dataset, e.g. rpool/data. Fixed at creation."`
	Blocksize  string `json:"blocksize,omitempty" pm:"format=not-empty" doc:"zfspool: block size of new volumes, e.g. 16k."`
	Sparse     bool   `json:"sparse,omitempty" doc:"zfspool: thin-provision new volumes."`
	Mountpoint string `json:"mountpoint,omitempty" pm:"format=abs-path" doc:"zfspool: the pool's mount point, when not /<pool>."`
}

// Kind returns KindStorage.
func (*Storage) Kind() Kind { return KindStorage }

// Summary is the storage's type and content: "nfs · iso, vztmpl".
func (s *Storage) Summary() string {
	parts := []string{s.Spec.Type}
	if len(s.Spec.Content) > 0 {
		parts = append(parts, strings.Join(s.Spec.Content, ", "))
	}
	if s.Spec.Disable {
		parts = append(parts, "disabled")
	}
	return strings.Join(parts, " · ")
}

// MarshalJSON gives back the manifest shape.
func (s *Storage) MarshalJSON() ([]byte, error) {
	return marshalManifest(s.Kind(), &s.Object, &s.Spec)
}

// AnnotationReplace ("true") lets a Storage whose fixed fields (type,
// path, server, export, share, datastore, vgName, thinPool, pool) changed
// be replaced: its definition is removed and made again with the new
// values. Without it the change is refused.
const AnnotationReplace = "proxmops.dev/replace"

// Replace reports whether the resource allows a replacement.
func (m *Metadata) Replace() bool { return m.Annotations[AnnotationReplace] == "true" }

// StorageTypeFields lists, per storage type, the spec fields (JSON
// names) the type takes and, first, those it requires; fixed ones are
// StorageFixedFields'. content, nodes and disable go with every type.
var StorageTypeFields = map[string]struct{ Required, Optional []string }{
	"dir":     {Required: []string{"path"}, Optional: []string{"shared", "format"}},
	"nfs":     {Required: []string{"server", "export"}, Optional: []string{"path", "options", "format"}},
	"cifs":    {Required: []string{"server", "share"}, Optional: []string{"path", "options", "format", "subdir", "domain", "smbVersion", "username", "passwordFrom"}},
	"pbs":     {Required: []string{"server", "datastore"}, Optional: []string{"namespace", "port", "fingerprint", "username", "passwordFrom", "encryptionKeyFrom"}},
	"lvmthin": {Required: []string{"vgName", "thinPool"}},
	"zfspool": {Required: []string{"pool"}, Optional: []string{"blocksize", "sparse", "mountpoint"}},
}

// StorageFixedFields are the spec fields Proxmox fixes at creation (the
// plugins' options marked fixed), besides type.
var StorageFixedFields = []string{"path", "server", "export", "share", "datastore", "vgName", "thinPool", "pool"}

// storageTypeContent is each type's plugindata content list.
var storageTypeContent = map[string][]string{
	"dir": {"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"}, "nfs": {"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"},
	"cifs": {"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"}, "pbs": {"backup"},
	"lvmthin": {"images", "rootdir"}, "zfspool": {"images", "rootdir"},
}

// StorageFieldSet reports which spec fields (JSON names) s sets, among
// those that depend on the type.
func (s *StorageSpec) StorageFieldSet() map[string]bool {
	return map[string]bool{
		"path": s.Path != "", "server": s.Server != "", "export": s.Export != "", "options": s.Options != "",
		"format": s.Format != "", "share": s.Share != "", "subdir": s.Subdir != "", "domain": s.Domain != "",
		"smbVersion": s.SMBVersion != "", "username": s.Username != "", "passwordFrom": s.PasswordFrom != nil,
		"datastore": s.Datastore != "", "namespace": s.Namespace != "", "port": s.Port != 0,
		"fingerprint": s.Fingerprint != "", "encryptionKeyFrom": s.EncryptionKeyFrom != nil,
		"vgName": s.VGName != "", "thinPool": s.ThinPool != "", "pool": s.Pool != "", "blocksize": s.Blocksize != "",
		"sparse": s.Sparse, "mountpoint": s.Mountpoint != "", "shared": s.Shared,
	}
}

// checkStorage is pve-storage's per-type checks: the required options,
// no option the type does not take (SectionConfig check_config: "unexpected
// property"), content types the plugin supports.
func (st *Storage) check(c *checker) {
	s := &st.Spec
	tf, ok := StorageTypeFields[s.Type]
	if !ok {
		return // the enum check names it
	}
	set := s.StorageFieldSet()
	for _, f := range tf.Required {
		if !set[f] {
			c.errorf("spec."+f, "missing required field `%s` (a %s storage needs it)", f, s.Type)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(set)) {
		if set[f] && !slices.Contains(tf.Required, f) && !slices.Contains(tf.Optional, f) {
			c.errorf("spec."+f, "a %s storage has no %s (it takes %s)", s.Type, f, takes(tf.Required, tf.Optional))
		}
	}
	seen := map[string]bool{}
	for i, ct := range s.Content {
		p := indexPath("spec.content", i)
		if seen[ct] {
			c.errorf(p, "duplicate content type %q", ct)
		}
		seen[ct] = true
		if ok := storageTypeContent[s.Type]; !slices.Contains(ok, ct) && ct != "" {
			c.errorf(p, "a %s storage cannot hold %s (it takes %s)", s.Type, ct, strings.Join(ok, ", "))
		}
	}
	if s.Fingerprint != "" && !reFingerprint.MatchString(s.Fingerprint) {
		c.errorf("spec.fingerprint", "%q is not a SHA-256 fingerprint (32 hex pairs joined by colons)", s.Fingerprint)
	}
}

func takes(req, opt []string) string {
	all := append(slices.Clone(req), opt...)
	return strings.Join(append(all, "content", "nodes", "disable"), ", ")
}

// addStorageRefs records the storages r's spec puts something on (an
// ISO's or a template's storage, a backup job's, a guest's disks, its
// imported image, a container's root and mount points): a declared Storage is created
// first, and the graph links it to what lives on it; one only on the
// cluster is an external reference, as before.
func addStorageRefs(r Resource) {
	add := func(name, path string) {
		if name != "" {
			addRef(r, Ref{Kind: KindStorage, Name: name, Path: path})
		}
	}
	disks := func(ds []Disk, img *Image) {
		if img != nil {
			add(img.Storage, "spec.image.storage")
		}
		for i, d := range ds {
			add(d.Storage, indexPath("spec.disks", i)+".storage")
		}
	}
	switch v := r.(type) {
	case *Iso:
		add(v.Spec.Storage, "spec.storage")
	case *ContainerTemplate:
		add(v.Spec.Storage, "spec.storage")
	case *BackupJob:
		add(v.Spec.Storage, "spec.storage")
	case *VirtualMachine:
		disks(v.Spec.Disks, v.Spec.Image)
	case *Template:
		disks(v.Spec.Disks, v.Spec.Image)
	case *Container:
		if v.Spec.RootFS != nil {
			add(v.Spec.RootFS.Storage, "spec.rootfs.storage")
		}
		for i, m := range v.Spec.Mountpoints {
			add(m.Storage, indexPath("spec.mountpoints", i)+".storage")
		}
	}
}

// ValidStorageName reports whether a storage ID can be a Storage's
// metadata.name (a DNS label starting with a letter; Proxmox's IDs may
// also hold '_' and '.').
func ValidStorageName(name string) bool {
	return name != "" && name[0] >= 'a' && name[0] <= 'z' && checkFormat("dns-label", name) == nil
}
