package export_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/export"
	"github.com/proxmops/proxmops/internal/pve"
)

// Storage definitions are exported as Storage manifests annotated for
// adoption, in Proxmox's values; a CIFS password Proxmox keeps is never
// written, a passwordFrom placeholder names the variable to set instead;
// a storage ID no manifest can keep is refused; the exported tree plans
// nothing but the adoptions.
func TestExportStorageWritesPlaceholdersNeverSecrets(t *testing.T) {
	const secret = "hunter2-never-exported"
	c := newCluster(t)
	for _, kv := range [][]string{
		{"storage", "nas-iso", "type", "nfs", "server", "192.168.1.5", "export", "/export/iso", "content", "iso,vztmpl", "nodes", "pve1"},
		{"storage", "smb", "type", "cifs", "server", "nas.lan", "share", "backups", "username", "pve", "password", secret, "content", "backup"},
		{"storage", "odd_id", "type", "dir", "path", "/srv/odd"},
	} {
		p := pve.NewParams()
		for i := 0; i+1 < len(kv); i += 2 {
			p.Set(kv[i], kv[i+1])
		}
		if err := c.client.Post(context.Background(), "storage", p, nil); err != nil {
			t.Fatal(err)
		}
	}
	res := export1(t, c, export.Options{Kinds: []string{"storage"}})
	var all strings.Builder
	for _, f := range res.Files {
		all.Write(f.Data)
		all.WriteString(strings.Join(f.Notes, "\n"))
	}
	if strings.Contains(all.String(), secret) {
		t.Fatal("the export holds the CIFS password")
	}
	nas, smb := file(t, res, "storage/nas-iso.yaml"), file(t, res, "storage/smb.yaml")
	for _, want := range []string{"kind: Storage", "name: nas-iso", "proxmops.dev/adopt: \"true\"", "type: nfs", "server: 192.168.1.5", "export: /export/iso", "- iso", "- vztmpl", "- pve1"} {
		if !strings.Contains(nas, want) {
			t.Errorf("nas-iso lacks %q:\n%s", want, nas)
		}
	}
	if strings.Contains(nas, "path:") {
		t.Errorf("the default mount point is exported:\n%s", nas)
	}
	if !strings.Contains(smb, "env: PROXMOPS_STORAGE_SMB_PASSWORD") {
		t.Errorf("smb has no password placeholder:\n%s", smb)
	}
	if !strings.Contains(strings.Join(res.Refused, " "), "odd_id") {
		t.Errorf("refused: %v", res.Refused)
	}
	t.Setenv("PROXMOPS_STORAGE_SMB_PASSWORD", secret)
	c.checkClean(res)
}
