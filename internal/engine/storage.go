package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Storage definitions (/storage, pve-storage API2/Storage/Config.pm):
// a row of the collections table (collection.go). Proxmox keeps no
// comment on a storage, so ownership is a record in Records (proxmops'
// store) written when proxmops creates a storage or adopts one by
// annotation, naming the type and the fixed fields it had: a storage of
// that name made again by someone else is not proxmops'. Privileges:
// storageNeeds. Fixed fields (the plugins'
// options marked fixed) are refused by Proxmox on update: a change of
// one is a replacement the manifest must allow (proxmops.dev/replace).
// An owned storage that still holds any volume (guest disk, ISO,
// container template, backup) is never removed: Proxmox itself removes
// the definition and leaves the volumes unreachable (Config.pm delete).

const KindStorage = string(manifest.KindStorage)

// StorageSpec is a desired storage definition.
type StorageSpec struct {
	Meta
	Type    string
	Content []string
	Nodes   []string
	Disable bool
	Shared  bool
	Sparse  bool
	Port    int
	// Values holds the string options by Proxmox key (server, export, ...).
	Values map[string]string
	// Replace allows a change of fixed fields (proxmops.dev/replace).
	Replace bool

	// The secrets, read from their references, and the references'
	// descriptions for the plan ("env NAS_PASSWORD"): the values are
	// sent to Proxmox and never shown.
	password, encryptionKey string
	passwordRef, keyRef     string
}

// storageOption maps a string option's Proxmox key to its manifest field.
var storageOption = []struct{ key, field string }{
	{"path", "path"}, {"server", "server"}, {"export", "export"}, {"share", "share"}, {"datastore", "datastore"},
	{"vgname", "vgName"}, {"thinpool", "thinPool"}, {"pool", "pool"}, {"options", "options"}, {"format", "format"},
	{"subdir", "subdir"}, {"domain", "domain"}, {"smbversion", "smbVersion"}, {"username", "username"},
	{"namespace", "namespace"}, {"fingerprint", "fingerprint"}, {"blocksize", "blocksize"}, {"mountpoint", "mountpoint"},
}

// storageFixed are the Proxmox keys fixed at creation.
var storageFixed = []string{"path", "server", "export", "share", "datastore", "vgname", "thinpool", "pool"}

func storageFromManifest(st *manifest.Storage, secrets SecretReader) *StorageSpec {
	m := st.Spec
	out := &StorageSpec{Meta: metaOf(st), Type: m.Type, Content: m.Content, Nodes: m.Nodes, Disable: m.Disable,
		Shared: m.Shared, Sparse: m.Sparse, Port: m.Port, Replace: st.Meta().Replace(), Values: map[string]string{}}
	get := map[string]string{"path": m.Path, "server": m.Server, "export": m.Export, "share": m.Share, "datastore": m.Datastore,
		"vgname": m.VGName, "thinpool": m.ThinPool, "pool": m.Pool, "options": m.Options, "format": m.Format,
		"subdir": m.Subdir, "domain": m.Domain, "smbversion": m.SMBVersion, "username": m.Username,
		"namespace": m.Namespace, "fingerprint": m.Fingerprint, "blocksize": m.Blocksize, "mountpoint": m.Mountpoint}
	for k, v := range get {
		if v != "" {
			out.Values[k] = v
		}
	}
	read := func(ref *manifest.SecretRef, field string, into, desc *string) {
		if ref == nil || out.Invalid != "" {
			return
		}
		v, err := secrets(ref)
		if err != nil {
			out.Invalid = field + ": " + err.Error()
			return
		}
		*into, *desc = v, secretRefText(ref)
	}
	read(m.PasswordFrom, "passwordFrom", &out.password, &out.passwordRef)
	read(m.EncryptionKeyFrom, "encryptionKeyFrom", &out.encryptionKey, &out.keyRef)
	return out
}

// secretRefText names a secret's reference, never its value.
func secretRefText(ref *manifest.SecretRef) string {
	if ref.Env != "" {
		return "secret from env " + ref.Env
	}
	return "secret from file " + ref.File
}

// storageFields are the managed fields besides the fixed ones, in
// Proxmox's read-back form: content and nodes compared as sets, content
// only when declared (unset, the type's default stays), booleans as 1.
func storageFields(sp Spec) []collField {
	s := sp.(*StorageSpec)
	var out []collField
	if len(s.Content) > 0 {
		out = append(out, collField{key: "content", path: "spec.content", want: strings.Join(s.Content, ","), same: sameSet})
	}
	out = append(out, collField{key: "nodes", path: "spec.nodes", want: strings.Join(s.Nodes, ","), same: sameSet},
		collField{key: "disable", path: "spec.disable", want: boolWord(s.Disable), same: pvefields.SameBool})
	if s.Type == "dir" {
		out = append(out, collField{key: "shared", path: "spec.shared", want: boolWord(s.Shared), same: pvefields.SameBool})
	}
	if s.Type == "zfspool" {
		out = append(out, collField{key: "sparse", path: "spec.sparse", want: boolWord(s.Sparse), same: pvefields.SameBool})
	}
	if s.Type == "pbs" {
		port := ""
		if s.Port > 0 {
			port = strconv.Itoa(s.Port)
		}
		out = append(out, collField{key: "port", path: "spec.port", want: port})
	}
	takes := manifest.StorageTypeFields[s.Type]
	for _, o := range storageOption {
		if slices.Contains(storageFixed, o.key) || !slices.Contains(takes.Optional, o.field) {
			continue
		}
		out = append(out, collField{key: o.key, path: "spec." + o.field, want: s.Values[o.key]})
	}
	return out
}

func boolWord(b bool) string {
	if b {
		return "1"
	}
	return ""
}

// storageFixedChanges lists the fixed fields whose listed value is not
// the declared one (a mount point left to its default is not compared).
func storageFixedChanges(sp Spec, it collItem) []vocab.Change {
	s := sp.(*StorageSpec)
	var out []vocab.Change
	if it["type"] != s.Type {
		out = append(out, vocab.Change{Field: "type", Path: "spec.type", From: it["type"], To: s.Type})
	}
	for _, o := range storageOption {
		want := s.Values[o.key]
		if !slices.Contains(storageFixed, o.key) || want == "" && o.key == "path" {
			continue
		}
		if it[o.key] != want {
			out = append(out, vocab.Change{Field: o.key, Path: "spec." + o.field, From: it[o.key], To: want})
		}
	}
	return out
}

// storageSecretChanges name what a creation or adoption sends unread.
func storageSecretChanges(sp Spec) []vocab.Change {
	s := sp.(*StorageSpec)
	var out []vocab.Change
	if s.passwordRef != "" {
		out = append(out, vocab.Change{Field: "password", Path: "spec.passwordFrom", To: "(" + s.passwordRef + ")"})
	}
	if s.keyRef != "" {
		out = append(out, vocab.Change{Field: "encryption-key", Path: "spec.encryptionKeyFrom", To: "(" + s.keyRef + ")"})
	}
	return out
}

// SecretChange reports whether c is a secret an adoption or creation
// sends and Proxmox never returns (shown by its reference only).
func SecretChange(c vocab.Change) bool {
	return c.From == "" && strings.HasPrefix(c.To, "(secret from ")
}

// storageSecretParams adds the secrets to a request.
func storageSecretParams(s *StorageSpec, p *pve.Params) {
	if s.password != "" {
		p.Set("password", s.password)
	}
	if s.encryptionKey != "" {
		p.Set("encryption-key", s.encryptionKey)
	}
}

// storageOwnerRecord is what Records keeps of a storage proxmops owns:
// the type and fixed fields it had when made or adopted.
type storageOwnerRecord struct {
	Type  string            `json:"type"`
	Fixed map[string]string `json:"fixed,omitempty"`
}

func storageRecordKey(name string) string { return "storage-owned:" + name }

func storageOwned(ctx context.Context, rec Records, it collItem) (bool, error) {
	b, ok, err := rec.State(ctx, storageRecordKey(it["storage"]))
	if err != nil || !ok {
		return false, err
	}
	var r storageOwnerRecord
	if json.Unmarshal(b, &r) != nil || r.Type == "" || r.Type != it["type"] {
		return false, nil
	}
	for k, v := range r.Fixed {
		if it[k] != v {
			return false, nil
		}
	}
	return true, nil
}

func storageRecord(ctx context.Context, rec Records, sp Spec) error {
	s := sp.(*StorageSpec)
	r := storageOwnerRecord{Type: s.Type, Fixed: map[string]string{}}
	for _, k := range storageFixed {
		if v := s.Values[k]; v != "" {
			r.Fixed[k] = v
		}
	}
	b, _ := json.Marshal(r)
	return rec.PutState(ctx, storageRecordKey(s.Name), b)
}

func storageForget(ctx context.Context, rec Records, name string) error {
	return rec.PutState(ctx, storageRecordKey(name), []byte("{}"))
}

// storageDefaultContent is each type's content when none is declared
// (the plugins' plugindata default).
var storageDefaultContent = map[string][]string{"dir": {"images", "rootdir"}, "nfs": {"images"}, "cifs": {"images"},
	"pbs": {"backup"}, "lvmthin": {"images", "rootdir"}, "zfspool": {"images", "rootdir"}}

// markPendingStorages puts each declared storage that no node lists into
// the observation as this plan will make it: on its nodes, with its
// content, empty. What lives on it is then planned as on any storage
// (created, after the storage: it depends on it), not refused for a
// storage that does not exist yet.
func markPendingStorages(pc *planContext) {
	snap := pc.snap
	for _, s := range specsOf[*StorageSpec](pc.d, KindStorage) {
		if s.Sync == vocab.SyncDisabled || s.Invalid != "" || s.Disable {
			continue
		}
		listed := false
		for _, n := range snap.Nodes {
			listed = listed || snap.Storage(n, s.Name) != nil
		}
		if listed {
			continue
		}
		content := s.Content
		if len(content) == 0 {
			content = storageDefaultContent[s.Type]
		}
		shared := s.Type != "dir" && s.Type != "lvmthin" && s.Type != "zfspool" || s.Shared
		for _, n := range snap.Nodes {
			if len(s.Nodes) > 0 && !slices.Contains(s.Nodes, n) {
				continue
			}
			ref := &StorageRef{Node: n, Storage: s.Name, Content: content, Shared: shared, Type: s.Type, Status: "available", pending: true}
			if snap.storages[n] == nil {
				snap.storages[n] = map[string]*StorageRef{}
			}
			snap.storages[n][s.Name] = ref
			snap.volumes[storageKey(ref)] = []pve.Volume{}
		}
	}
}

// dependOnStorages makes what a declared spec puts on a declared storage
// (its Needs, from manifest.Dependencies) wait for that storage's action
// when it acts this pass: its creation, replacement or change.
func dependOnStorages(p *Plan, d *Desired) {
	acting := map[string]bool{}
	for _, a := range p.Actions {
		if a.Kind == KindStorage && a.Acts() {
			acting[a.Key()] = true
		}
	}
	if len(acting) == 0 {
		return
	}
	needs := map[string][]string{}
	for _, row := range kinds {
		for _, s := range d.Specs(row.kind) {
			needs[vocab.Key(row.kind, s.meta().Name)] = s.meta().needs(KindStorage)
		}
	}
	for _, a := range p.Actions {
		if !a.Acts() {
			continue
		}
		for _, k := range needs[a.Key()] {
			if acting[k] && !slices.Contains(a.DependsOn, k) {
				a.DependsOn = append(a.DependsOn, k)
			}
		}
	}
}

// storageInUse says why an owned storage must stay: it holds volumes, or
// proxmops cannot list what it holds ("" when it is empty). A shared
// storage is listed on one node, a local one on each node it is active on.
func storageInUse(ctx context.Context, pc *planContext, it collItem) string {
	name := it["storage"]
	var nodes []string
	for _, n := range pc.snap.Nodes {
		if pc.snap.Storage(n, name) != nil {
			nodes = append(nodes, n)
			if pc.snap.Storage(n, name).Shared {
				break
			}
		}
	}
	if len(nodes) == 0 {
		return fmt.Sprintf("storage %s is active on no node, so proxmops cannot see whether it still holds guest volumes, ISOs, templates or backups: it is kept", name)
	}
	counts := map[string]int{}
	total := 0
	for _, n := range nodes {
		vols, err := pc.e.client.StorageContent(ctx, n, name, "")
		if err != nil {
			return fmt.Sprintf("could not list what storage %s holds on %s (%v): it is kept", name, n, err)
		}
		for _, v := range vols {
			counts[v.Content]++
			total++
		}
	}
	if total == 0 {
		return ""
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[c], c))
	}
	return fmt.Sprintf("storage %s still holds %d volumes (%s): a storage definition holding guest volumes, ISOs, templates or backups is never removed, whatever prune says; move or delete them first",
		name, total, strings.Join(parts, ", "))
}

var storages = &collection{
	kind: KindStorage, noun: "storage", plural: "storage definitions", list: "storage", key: "storage",
	privPath: "/storage", read: "Datastore.Audit or Datastore.AllocateSpace", write: "Datastore.Allocate",
	fields: storageFields,
	create: func(sp Spec, _ string) collReq {
		s := sp.(*StorageSpec)
		p := pve.NewParams().Set("storage", s.Name).Set("type", s.Type)
		for _, k := range slices.Sorted(maps.Keys(s.Values)) {
			p.Set(k, s.Values[k])
		}
		if len(s.Content) > 0 {
			p.Set("content", strings.Join(s.Content, ","))
		}
		if len(s.Nodes) > 0 {
			p.Set("nodes", strings.Join(s.Nodes, ","))
		}
		for k, b := range map[string]bool{"disable": s.Disable, "shared": s.Shared && s.Type == "dir", "sparse": s.Sparse} {
			if b {
				p.Set(k, "1")
			}
		}
		if s.Port > 0 {
			p.Set("port", strconv.Itoa(s.Port))
		}
		storageSecretParams(s, p)
		return collReq{method: "POST", path: "storage", params: p}
	},
	patch: func(name string, sp Spec, changes []vocab.Change, digest string) collReq {
		// Config.pm update: only what is given changes; delete lists the
		// options to unset; the secrets go with an adoption.
		p := pve.NewParams()
		var del []string
		secrets := false
		for _, c := range changes {
			switch {
			case SecretChange(c):
				secrets = true
			case c.To == "":
				del = append(del, c.Field)
			default:
				p.Set(c.Field, c.To)
			}
		}
		if len(del) > 0 {
			p.Set("delete", strings.Join(del, ","))
		}
		if secrets {
			storageSecretParams(sp.(*StorageSpec), p)
		}
		if digest != "" {
			p.Set("digest", digest)
		}
		return collReq{method: "PUT", path: "storage/" + pve.PathEscape(name), params: p}
	},
	remove: func(name string) collReq {
		return collReq{method: "DELETE", path: "storage/" + pve.PathEscape(name)}
	},
	owner:   &collOwner{what: "no record in proxmops' store that it made or adopted it", owned: storageOwned, record: storageRecord, forget: storageForget},
	fixed:   storageFixedChanges,
	replace: func(sp Spec) bool { return sp.(*StorageSpec).Replace },
	guard:   storageInUse,
	secrets: storageSecretChanges,
	needs:   storageNeeds,
}

// storageNeeds: Config.pm create, update and delete check
// Datastore.Allocate on /storage (the row's write); its index lists a
// storage only with Datastore.Audit or Datastore.AllocateSpace on
// /storage/{id}, which listing its content (the removal guard) needs too.
func storageNeeds(a *Action, _ Spec) []privNeed {
	return []privNeed{needAny("see the storage in GET /storage", "/storage/"+a.Name, "Datastore.Audit", "Datastore.AllocateSpace")}
}
