package store

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestWriterLockRefusesASecondHolderAndNamesTheFirst(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	first, err := LockWriter(db, "serve", "127.0.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockWriter(db, "rotate-key", "")
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("second lock: %v", err)
	}
	for _, want := range []string{"pid " + strconv.Itoa(os.Getpid()), "127.0.0.1:8080", "proxmops serve", db} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := LockWriter(db, "rotate-key", "")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	defer again.Release()
	b, _ := os.ReadFile(LockPath(db))
	if !strings.Contains(string(b), `"command":"rotate-key"`) {
		t.Fatalf("lock file: %s", b)
	}
}
