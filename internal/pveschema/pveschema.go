// Package pveschema finds the official Proxmox VE API schema (the API
// viewer's apidata JSON) that the conformance tests compare against. The
// schema is reference data outside the repository: shared/pve-api beside
// the checkout (or the directory of worktrees), or $PVESIM_SCHEMA_DIR.
package pveschema

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// EnvDir names the directory holding the schema files, when set.
const EnvDir = "PVESIM_SCHEMA_DIR"

// Dir is the directory holding file: $PVESIM_SCHEMA_DIR, else the first
// shared/pve-api holding it in from or a directory above.
func Dir(from, file string) (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		if _, err := os.Stat(filepath.Join(d, file)); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvDir, d, err)
		}
		return d, nil
	}
	for dir := from; ; dir = filepath.Dir(dir) {
		cand := filepath.Join(dir, "shared", "pve-api")
		if _, err := os.Stat(filepath.Join(cand, file)); err == nil {
			return cand, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no shared/pve-api/%s in any directory above %s (set %s to point at it)", file, from, EnvDir)
		}
	}
}

// Read reads file from the schema directory found from the test's
// working directory; without it the test is skipped, or failed under
// CI=true, where a conformance check that does not run must not pass.
func Read(t testing.TB, file string) []byte {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := Dir(wd, file)
	var b []byte
	if err == nil {
		b, err = os.ReadFile(filepath.Join(dir, file))
	}
	if err != nil {
		Unavailable(t, err)
	}
	return b
}

// Unavailable ends a test whose schema cannot be read: skipped on a
// developer's machine, failed when CI=true.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("the official Proxmox VE API schema is required under CI=true: %v", err)
	}
	t.Skipf("official Proxmox VE API schema not found, conformance check skipped: %v", err)
}
