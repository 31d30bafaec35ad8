package pveschema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The schema is found in shared/pve-api above the starting directory, or
// where $PVESIM_SCHEMA_DIR says; a miss names what was looked for.
func TestDirFindsTheSchemaAboveOrWhereTheEnvironmentSays(t *testing.T) {
	root := t.TempDir()
	shared := filepath.Join(root, "shared", "pve-api")
	deep := filepath.Join(root, "wt", "branch", "pvesim")
	for _, d := range []string{shared, deep} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(shared, "api.json"), []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvDir, "")
	if d, err := Dir(deep, "api.json"); err != nil || d != shared {
		t.Fatalf("walking up: %q %v", d, err)
	}
	if _, err := Dir(deep, "other.json"); err == nil || !strings.Contains(err.Error(), "shared/pve-api/other.json") {
		t.Fatalf("a missing file: %v", err)
	}
	t.Setenv(EnvDir, filepath.Join(root, "elsewhere"))
	if _, err := Dir(deep, "api.json"); err == nil || !strings.Contains(err.Error(), EnvDir) {
		t.Fatalf("a wrong %s: %v", EnvDir, err)
	}
}
