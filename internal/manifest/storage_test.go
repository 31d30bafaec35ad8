package manifest

import (
	"strings"
	"testing"
)

// A Storage takes its type's fields (pve-storage's plugin options): the
// required ones must be there, others are refused with what the type
// takes; content must be one the type holds; the storage ID starts with
// a letter; proxmops.dev/replace is for storages only.
func TestStorageValidation(t *testing.T) {
	st := func(meta, spec string) string { return flowDoc(KindStorage, meta, spec) }
	tests := []validationCase{
		{"nfs", st("name: nas", "type: nfs, server: 192.168.1.5, export: /export/iso, content: [iso, vztmpl], nodes: [pve1]"), ""},
		{"cifs with a password reference", st("name: smb", "type: cifs, server: nas, share: b, username: u, passwordFrom: {env: PW}"), ""},
		{"pbs", st("name: pbs", "type: pbs, server: pbs.lan, datastore: main, port: 8007, encryptionKeyFrom: {file: /etc/key.json}"), ""},
		{"lvmthin", st("name: thin", "type: lvmthin, vgName: pve, thinPool: data"), ""},
		{"zfspool", st("name: tank", "type: zfspool, pool: rpool/data, sparse: true"), ""},
		{"dir shared", st("name: cfs", "type: dir, path: /mnt/cfs, shared: true"), ""},
		{"nfs without its export", st("name: nas", "type: nfs, server: 192.168.1.5"), "missing required field `export` (a nfs storage needs it)"},
		{"dir with a server", st("name: d", "type: dir, path: /srv/d, server: x"), "a dir storage has no server (it takes path, shared, format, content, nodes, disable)"},
		{"nfs with a password", st("name: nas", "type: nfs, server: a, export: /e, passwordFrom: {env: PW}"), "a nfs storage has no passwordFrom"},
		{"pbs holding ISOs", st("name: pbs", "type: pbs, server: a, datastore: d, content: [iso]"), "a pbs storage cannot hold iso (it takes backup)"},
		{"unknown type", st("name: x", "type: rbd"), "type"},
		{"a bad fingerprint", st("name: pbs", "type: pbs, server: a, datastore: d, fingerprint: ab:cd"), "is not a SHA-256 fingerprint"},
		{"an ID starting with a digit", st("name: 1nas", "type: dir, path: /srv/x"), "a storage ID must start with a letter"},
		{"tags", st("name: nas, tags: [a]", "type: dir, path: /srv/x"), "Storage has no Proxmox tags"},
		{"a node", st("name: nas, node: pve1", "type: dir, path: /srv/x"), "Storage is cluster-wide"},
		{"replace on a storage", st("name: nas, annotations: {proxmops.dev/replace: \"true\"}", "type: dir, path: /srv/x"), ""},
		{"replace on a pool", "apiVersion: proxmops.dev/v1\nkind: Pool\nmetadata: {name: p, annotations: {proxmops.dev/replace: \"true\"}}\nspec: {}\n", "replacement applies to Storage (a change of a field fixed at creation), not Pool"},
		{"adopt on a storage", st("name: nas, annotations: {proxmops.dev/adopt: \"true\"}", "type: dir, path: /srv/x"), ""},
	}
	checkValidation(t, tests, nil)
}

// An ISO, a container template and a guest's disks on a declared Storage
// depend on it (the graph's edge and the apply order); a storage only on
// the cluster gives no reference.
func TestStorageDependencies(t *testing.T) {
	set := loadSet(t, map[string]string{
		"s.yaml":   "apiVersion: proxmops.dev/v1\nkind: Storage\nmetadata: {name: nas}\nspec: {type: nfs, server: a, export: /e, content: [iso, images]}\n",
		"iso.yaml": "apiVersion: proxmops.dev/v1\nkind: Iso\nmetadata: {name: d, node: pve1}\nspec: {source: \"https://x/d.iso\", storage: nas}\n",
		"vm.yaml":  vmHead + "  vmid: 100\n  disks:\n    - { storage: nas, size: 4G }\n    - { storage: local-lvm, size: 4G }\n",
		"job.yaml": "apiVersion: proxmops.dev/v1\nkind: BackupJob\nmetadata: {name: nightly}\nspec: {schedule: \"02:30\", storage: nas, all: true}\n",
	})
	for _, c := range []struct {
		kind       Kind
		name, want string
	}{
		{KindIso, "d", "Storage/nas storedOn spec.storage"},
		{KindVirtualMachine, "vm-a", "Storage/nas storedOn spec.disks[0].storage"},
		{KindBackupJob, "nightly", "Storage/nas storedOn spec.storage"},
	} {
		var got []string
		for _, e := range Dependencies(set.Get(c.kind, c.name)) {
			got = append(got, e.Key()+" "+string(e.Relation)+" "+e.Path)
		}
		if strings.Join(got, "; ") != c.want {
			t.Errorf("%s/%s depends on %q, want %q", c.kind, c.name, got, c.want)
		}
	}
}
