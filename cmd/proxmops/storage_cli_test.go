package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `proxmops apply` records the storage it creates in the daemon's
// database, so that the next `plan` (another process, as far as the
// engine knows) sees it as proxmops' and in sync, not as a Conflict.
func TestCLIStorageOwnershipOutlivesTheRun(t *testing.T) {
	sim, repo := cliEnv(t)
	nas := "apiVersion: proxmops.dev/v1\nkind: Storage\nmetadata:\n  name: nas-iso\nspec:\n  type: nfs\n  server: 192.168.1.5\n  export: /export/iso\n  content: [iso]\n"
	if err := os.WriteFile(filepath.Join(repo, "nas-iso.yaml"), []byte(nas), 0o644); err != nil {
		t.Fatal(err)
	}
	common := cliArgs(sim, repo)
	if code, out, errOut := runCLI(t, append([]string{"apply", "--output", "text"}, common...)...); code != 0 {
		t.Fatalf("apply exit %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut := runCLI(t, append([]string{"plan", "--output", "text", "--detailed-exitcode"}, common...)...)
	if code != 0 || strings.Contains(out, "Storage/nas-iso: conflict") {
		t.Fatalf("plan after apply exit %d:\n%s%s", code, out, errOut)
	}

	// A plan run where the daemon's database is not (a CI job) cannot
	// tell a storage proxmops made from one a person made: it says so,
	// never calls it a Conflict, and makes no empty database.
	elsewhere := filepath.Join(t.TempDir(), "proxmops.db")
	t.Setenv("PROXMOPS_SERVER_DATABASEPATH", elsewhere)
	_, out, errOut = runCLI(t, append([]string{"plan", "--output", "text"}, common...)...)
	if !strings.Contains(out, "Storage/nas-iso: unknown") || !strings.Contains(out, "there is none at "+elsewhere) || !strings.Contains(out, "0 conflict(s)") {
		t.Fatalf("plan without the daemon's database should say the storage's owner is unknown:\n%s%s", out, errOut)
	}
	if _, err := os.Stat(elsewhere); !os.IsNotExist(err) {
		t.Fatalf("plan made a database at %s (%v)", elsewhere, err)
	}
}
