package engine_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
)

// adoptCloneWith is adoptClone with a description of n bytes.
func adoptCloneWith(n int) string {
	return strings.Replace(adoptClone, "  cores: 2\n", "  cores: 2\n  description: \""+strings.Repeat("d", n)+"\"\n", 1)
}

// A description that fills Proxmox's 8192 bytes leaves no room for the
// adoption record: validation refuses it before any request, and the
// longest description it accepts still converges with the record on the
// guest, never a write Proxmox refuses (pvesim checks maxLength as
// QemuServer.pm $confdesc does).
func TestADescriptionLeavesRoomForTheRecordLines(t *testing.T) {
	e := newEnv(t)
	handMadeClone(t, e)
	e.write("vms/app-02.yaml", adoptCloneWith(manifest.MaxDescription-20))
	_, err := manifest.LoadDir(e.dir)
	if err == nil || !strings.Contains(err.Error(), "spec.description") || !strings.Contains(err.Error(), "record lines") {
		t.Fatalf("a description without room for the records: %v", err)
	}
	limit := manifest.MaxDescription - 4 - manifest.AdoptionRecordMax(1) - manifest.ProvisionRecordMax
	e.write("vms/app-02.yaml", adoptCloneWith(limit+1))
	if _, err := manifest.LoadDir(e.dir); err == nil {
		t.Fatalf("%d bytes accepted, the limit is %d", limit+1, limit)
	}
	e.write("vms/app-02.yaml", adoptCloneWith(limit))
	eng := e.engine(engine.Options{})
	e.converge(eng)
	d := e.guest(130).Config["description"]
	if !strings.Contains(d, engine.AdoptedLinePrefix) || !strings.HasPrefix(d, strings.Repeat("d", limit)) {
		t.Fatalf("description after the adoption: %.80q...", d)
	}
	e.assertInSync(eng)
}

// A clone starts with its own records only: Proxmox copies the template's
// description (qemu-server API2/Qemu.pm clone_vm, as pvesim does), and
// the template's proxmops-provisioned: and proxmops-adopted: lines are not
// true of the clone. The clone keeps the template's own text, or takes
// the manifest's, without a request more than a clone makes anyway.
func TestACloneDoesNotInheritTheTemplatesRecords(t *testing.T) {
	records := "proxmops-provisioned: sha256:" + strings.Repeat("a", 64) + " commands=0123abcd\n\n" + engine.AdoptedLinePrefix + " scsi0=2G"
	for _, tc := range []struct {
		name, template, manifest, want string
	}{
		{"the template's text is kept", "Debian base\n\n" + records, "", "Debian base"},
		{"records only", records, "", ""},
		{"the manifest's text", "Debian base\n\n" + records, "App server", "App server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			externalTemplate(t, e)
			asRoot(t, e, "PUT", "/nodes/pve1/qemu/9000/config", url.Values{"description": {tc.template}})
			m := seedClone
			if tc.manifest != "" {
				m = strings.Replace(m, "  cores: 2\n", "  cores: 2\n  description: "+tc.manifest+"\n", 1)
			}
			e.write("vms/app-02.yaml", m)
			eng := e.engine(engine.Options{})
			e.converge(eng)
			if got := e.guest(130).Config["description"]; got != tc.want {
				t.Fatalf("the clone's description %q, want %q", got, tc.want)
			}
			e.assertInSync(eng)
		})
	}
}
