package export

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pvefields"
)

// exportStorage writes one storage definition of /storage: its ID is its
// name, kept as Proxmox has it.
func exportStorage(it engine.CollectionItem, _ map[int]string) (Exported, error) {
	k := manifest.KindStorage
	if !manifest.ValidStorageName(it.Name) {
		return Exported{}, notAName(k, it)
	}
	if _, ok := manifest.StorageTypeFields[it.Values["type"]]; !ok {
		return Exported{}, fmt.Errorf("%s %s: type %s is not one a Storage manifest declares (dir, nfs, cifs, pbs, lvmthin, zfspool)", k, it.Name, it.Values["type"])
	}
	ex, o := adoptableItem(k, it.Name, it, "proxmops has no record of this storage: the first sync adopts it (records it in proxmops' store)")
	s, more := storageSpec(it.Name, it.Values)
	ex.Notes = append(ex.Notes, more...)
	ex.File = it.Name + ".yaml"
	ex.Resource = &manifest.Storage{Object: o, Spec: s}
	return ex, nil
}

// storageSpec is a listed storage definition as a manifest spec. Proxmox
// never lists a password or an encryption key: where the storage has one
// (a user name, an encryption key's fingerprint), the spec names an
// environment variable to hold it and the notes say so; no secret is
// ever written.
func storageSpec(name string, v map[string]string) (manifest.StorageSpec, []string) {
	s := manifest.StorageSpec{Type: v["type"], Server: v["server"], Export: v["export"], Options: v["options"],
		Format: v["format"], Share: v["share"], Subdir: v["subdir"], Domain: v["domain"], SMBVersion: v["smbversion"],
		Username: v["username"], Datastore: v["datastore"], Namespace: v["namespace"], Fingerprint: v["fingerprint"],
		VGName: v["vgname"], ThinPool: v["thinpool"], Pool: v["pool"], Blocksize: v["blocksize"], Mountpoint: v["mountpoint"],
		Disable: pvefields.ParseBool(v["disable"])}
	if c := v["content"]; c != "" {
		s.Content = strings.Split(c, ",")
	}
	if n := v["nodes"]; n != "" {
		s.Nodes = strings.Split(n, ",")
	}
	s.Path = v["path"]
	if (s.Type == "nfs" || s.Type == "cifs") && s.Path == "/mnt/pve/"+name {
		s.Path = "" // a mount point at its default is left out
	}
	switch s.Type {
	case "dir":
		s.Shared = pvefields.ParseBool(v["shared"])
	case "zfspool":
		s.Sparse = pvefields.ParseBool(v["sparse"])
	case "pbs":
		s.Port, _ = strconv.Atoi(v["port"])
	}
	var notes []string
	env := "PROXMOPS_STORAGE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	if (s.Type == "cifs" || s.Type == "pbs") && s.Username != "" {
		s.PasswordFrom = &manifest.SecretRef{Env: env + "_PASSWORD"}
		notes = append(notes, "Proxmox never returns the password: set "+env+"_PASSWORD for proxmops (it is sent when the storage is adopted)")
	}
	if s.Type == "pbs" && v["encryption-key"] != "" {
		s.EncryptionKeyFrom = &manifest.SecretRef{Env: env + "_ENCRYPTION_KEY"}
		notes = append(notes, "Proxmox never returns the encryption key: set "+env+"_ENCRYPTION_KEY to its JSON (it is sent when the storage is adopted)")
	}
	if !strings.Contains("dir nfs cifs", s.Type) {
		s.Format = ""
	}
	return s, notes
}
