package pvesim

import (
	"reflect"
	"testing"
)

func TestStorageDefinitionsAreCreatedReadChangedAndDeletedAsProxmoxDoes(t *testing.T) {
	srv, c := newSim(t, Options{})
	got := c.mustOK("POST", "/storage", vals("storage", "nas", "type", "nfs", "server", "192.0.2.5", "export", "/export/iso",
		"content", "iso,vztmpl", "nodes", "pve1,pve2")).obj(t)
	if !reflect.DeepEqual(got, map[string]any{"storage": "nas", "type": "nfs"}) {
		t.Fatalf("POST /storage = %v", got)
	}
	nas := c.mustOK("GET", "/storage/nas", nil).obj(t)
	digest, _ := nas["digest"].(string)
	delete(nas, "digest")
	want := map[string]any{"storage": "nas", "type": "nfs", "server": "192.0.2.5", "export": "/export/iso",
		"path": "/mnt/pve/nas", "content": "iso,vztmpl", "nodes": "pve1,pve2", "shared": float64(1)}
	if !reflect.DeepEqual(nas, want) || len(digest) != 40 {
		t.Fatalf("GET /storage/nas = %v (digest %q), want %v", nas, digest, want)
	}
	// The new storage is a storage like the others: on its nodes only.
	onNode := func(node string) bool {
		for _, e := range c.mustOK("GET", "/nodes/"+node+"/storage", nil).list(t) {
			if e["storage"] == "nas" {
				return true
			}
		}
		return false
	}
	if !onNode("pve1") || onNode("pve3") {
		t.Errorf("nas on pve1: %v, on pve3: %v; want only on its nodes", onNode("pve1"), onNode("pve3"))
	}
	found := false
	for _, e := range c.mustOK("GET", "/cluster/resources", vals("type", "storage")).list(t) {
		found = found || e["id"] == "storage/pve2/nas" && e["plugintype"] == "nfs" && e["shared"] == float64(1)
	}
	if !found {
		t.Error("/cluster/resources has no storage/pve2/nas")
	}

	// Passwords go to the private files, never into a read.
	c.mustOK("POST", "/storage", vals("storage", "smb", "type", "cifs", "server", "nas.example", "share", "media",
		"username", "u", "password", "pw1"))
	pbs := c.mustOK("POST", "/storage", vals("storage", "pbs", "type", "pbs", "server", "192.0.2.9", "datastore", "main",
		"password", "pw2", "encryption-key", "autogen")).obj(t)
	if cfg, _ := pbs["config"].(map[string]any); cfg == nil || cfg["encryption-key"] == nil {
		t.Errorf("POST pbs with an autogen key answers no key: %v", pbs)
	}
	for id, key := range map[string]string{"smb": "pw1", "pbs": "pw2"} {
		read := c.mustOK("GET", "/storage/"+id, nil).obj(t)
		if _, ok := read["password"]; ok {
			t.Errorf("GET /storage/%s shows the password: %v", id, read)
		}
		if pw, _ := srv.StorageSecret(id, "password"); pw != key {
			t.Errorf("%s's private password = %q, want %q", id, pw, key)
		}
	}
	if read := c.mustOK("GET", "/storage/pbs", nil).obj(t); read["content"] != "backup" || read["encryption-key"] == nil {
		t.Errorf("GET /storage/pbs = %v, want the default content and the key's fingerprint", read)
	}

	// Updates: typed read-back, deletes, the digest (of the whole file).
	if d := c.mustOK("GET", "/storage/local", nil).obj(t)["digest"]; d == digest {
		t.Error("the digest did not change with the file")
	}
	digest = c.mustOK("GET", "/storage/nas", nil).obj(t)["digest"].(string)
	c.mustOK("PUT", "/storage/nas", vals("disable", "1", "delete", "nodes", "digest", digest))
	nas = c.mustOK("GET", "/storage/nas", nil).obj(t)
	if nas["disable"] != float64(1) || nas["nodes"] != nil {
		t.Errorf("after PUT disable=1 delete=nodes: %v", nas)
	}
	if r := c.do("PUT", "/storage/nas", vals("disable", "0", "digest", digest)); r.Status != 500 ||
		r.Reason != "update storage failed: detected modified configuration - file changed by other user? Try again." {
		t.Errorf("PUT with a stale digest: %d %q", r.Status, r.Reason)
	}
	c.mustOK("PUT", "/storage/smb", vals("delete", "password"))
	if _, ok := srv.StorageSecret("smb", "password"); ok {
		t.Error("delete=password left the password file")
	}

	// Storage definitions and their secrets are part of the saved state.
	srv2 := reloaded(t, srv)
	if got := newClient(t, srv2).mustOK("GET", "/storage/nas", nil).obj(t); got["disable"] != float64(1) {
		t.Errorf("nas after LoadState: %v", got)
	}
	if pw, _ := srv2.StorageSecret("pbs", "password"); pw != "pw2" {
		t.Errorf("pbs password after LoadState = %q", pw)
	}

	// Delete: pools forget the storage; the volumes on it do not stop it.
	c.mustOK("POST", "/pools", vals("poolid", "p"))
	c.mustOK("PUT", "/pools", vals("poolid", "p", "storage", "nas"))
	c.mustOK("DELETE", "/storage/nas", nil)
	if r := c.do("GET", "/storage/nas", nil); r.Status != 500 || r.Reason != "storage 'nas' does not exist" {
		t.Errorf("GET after DELETE: %d %q", r.Status, r.Reason)
	}
	c.mustOK("DELETE", "/pools", vals("poolid", "p"))
	c.mustOK("DELETE", "/storage/local", nil)
	if got := c.mustOK("GET", "/storage/local", nil).obj(t); got["path"] != "/var/lib/vz" || got["prune-backups"] != "keep-all=1" {
		t.Errorf("local after DELETE = %v, want the default local storage back", got)
	}
}

func TestStorageDefinitionRequestsAreRefusedAsProxmoxRefusesThem(t *testing.T) {
	_, c := newSim(t, Options{})
	c.mustOK("POST", "/storage", vals("storage", "nas", "type", "nfs", "server", "192.0.2.5", "export", "/export"))
	c.mustOK("POST", "/storage", vals("storage", "lv", "type", "lvm", "vgname", "vg", "base", "nas:0.0.0.0:iqn.x-lun-0"))
	tests := []requestCase{
		{"required option", "POST", "/storage", vals("storage", "dd", "type", "dir"), 500, "missing value for required option 'path'", nil},
		{"option of another type", "POST", "/storage", vals("storage", "dd", "type", "dir", "path", "/srv", "export", "/x"), 500,
			"unexpected property 'export'", nil},
		{"password where the type has none", "POST", "/storage", vals("storage", "dd", "type", "dir", "path", "/srv", "password", "x"), 500,
			"unexpected property 'password'", nil},
		{"illegal directory path", "POST", "/storage", vals("storage", "dd", "type", "dir", "path", "/a b"), 500,
			"illegal path for directory storage: /a b", nil},
		{"content the type cannot hold", "POST", "/storage", vals("storage", "tt", "type", "lvmthin", "vgname", "vg", "thinpool", "tp", "content", "iso"), 500,
			"storage does not support content type 'none'", nil},
		{"none with other content", "POST", "/storage", vals("storage", "dd", "type", "dir", "path", "/srv", "content", "none,iso"), 500,
			"unable to combine 'none' with other content types", nil},
		{"unknown content", "POST", "/storage", vals("storage", "dd", "type", "dir", "path", "/srv", "content", "disks"), 400,
			"Parameter verification failed.", map[string]string{"content": "invalid format - invalid content type 'disks'\n"}},
		{"bad server", "POST", "/storage", vals("storage", "nn", "type", "nfs", "server", "a b", "export", "/x"), 400,
			"Parameter verification failed.", map[string]string{"server": "invalid format - value does not look like a valid server name or IP address\n"}},
		{"keep-all with other options", "POST", "/storage", vals("storage", "dd", "type", "dir", "path", "/srv", "prune-backups", "keep-all=1,keep-last=2"), 400,
			"Parameter verification failed.", map[string]string{"prune-backups": "invalid format - keep-all cannot be set together with other options.\n"}},
		{"existing id", "POST", "/storage", vals("storage", "local", "type", "dir", "path", "/srv"), 500,
			"create storage failed: storage ID 'local' already defined", nil},
		{"master key without encryption key", "POST", "/storage", vals("storage", "bb", "type", "pbs", "server", "h", "datastore", "d", "master-pubkey", "x"), 500,
			"create storage failed: 'master-pubkey' can only be used together with 'encryption-key'", nil},
		{"encryption key that is not JSON", "POST", "/storage", vals("storage", "bb", "type", "pbs", "server", "h", "datastore", "d", "encryption-key", "k"), 500,
			"create storage failed: Value does not seems like a valid, JSON formatted encryption key!", nil},
		{"fixed option", "PUT", "/storage/nas", vals("server", "192.0.2.6"), 500, "update storage failed: can't change value of fixed parameter 'server'", nil},
		{"deleting a required option", "PUT", "/storage/nas", vals("delete", "export"), 500, "update storage failed: unable to delete required option 'export'", nil},
		{"deleting a fixed optional option", "PUT", "/storage/lv", vals("delete", "base"), 500, "update storage failed: unable to delete fixed option 'base'", nil},
		{"deleting the base of another storage", "DELETE", "/storage/nas", nil, 500,
			"delete storage failed: can't remove storage - storage is used as base of another storage", nil},
		{"deleting an unknown option", "PUT", "/storage/nas", vals("delete", "bogus"), 500, "update storage failed: no such option 'bogus'", nil},
		{"setting and deleting", "PUT", "/storage/nas", vals("disable", "1", "delete", "disable"), 500,
			"update storage failed: cannot set and delete property 'disable' at the same time!", nil},
		{"updating an unknown storage", "PUT", "/storage/nope", vals("disable", "1"), 500, "update storage failed: storage 'nope' does not exist", nil},
		{"deleting an unknown storage", "DELETE", "/storage/nope", nil, 500, "delete storage failed: storage 'nope' does not exist", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.do(tt.method, tt.path, tt.params)
			if r.Status != tt.status || r.Reason != tt.reason || tt.errors != nil && !reflect.DeepEqual(r.Errors, tt.errors) {
				t.Fatalf("%d %q %v, want %d %q %v", r.Status, r.Reason, r.Errors, tt.status, tt.reason, tt.errors)
			}
		})
	}
}

func TestStorageDefinitionsNeedDatastoreAllocateOnStorage(t *testing.T) {
	_, c := newSim(t, Options{TokenPrivileges: allBut("Datastore.Allocate")})
	for _, tt := range []struct{ method, path string }{{"POST", "/storage"}, {"PUT", "/storage/local"}, {"DELETE", "/storage/local"}} {
		params := vals("storage", "dd", "type", "dir", "path", "/srv")
		if tt.method != "POST" {
			params = vals("disable", "1")
		}
		if r := c.do(tt.method, tt.path, params); r.Status != 403 || r.Reason != "Permission check failed (/storage, Datastore.Allocate)" {
			t.Errorf("%s %s: %d %q", tt.method, tt.path, r.Status, r.Reason)
		}
	}
}

func TestDeletingAStorageWithVolumesLeavesThemForTheNextDefinition(t *testing.T) {
	_, c := newSim(t, Options{})
	c.mustOK("POST", "/storage", vals("storage", "data", "type", "dir", "path", "/srv/data/", "content", "images"))
	if got := c.mustOK("GET", "/storage/data", nil).obj(t)["path"]; got != "/srv/data" {
		t.Errorf("path read back as %v, want it canonical", got)
	}
	c.mustOK("POST", "/nodes/pve1/storage/data/content", vals("filename", "vm-100-disk-0.raw", "size", "1G", "vmid", "100"))
	// Config.pm delete does not look at the content.
	c.mustOK("DELETE", "/storage/data", nil)
	if r := c.do("GET", "/nodes/pve1/storage/data/content", nil); r.Status != 500 {
		t.Fatalf("content of a deleted storage: %d %q", r.Status, r.Reason)
	}
	c.mustOK("POST", "/storage", vals("storage", "data", "type", "dir", "path", "/srv/data", "content", "images"))
	list := c.mustOK("GET", "/nodes/pve1/storage/data/content", nil).list(t)
	if len(list) != 1 || list[0]["volid"] != "data:100/vm-100-disk-0.raw" {
		t.Errorf("content after defining data again: %v", list)
	}
}
