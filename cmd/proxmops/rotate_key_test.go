package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/pgtest"
	"github.com/proxmops/proxmops/internal/store"
)

func TestRotateKeyCommand(t *testing.T) {
	t.Setenv(envEncryptionKey, "")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "proxmops.db")
	oldID := storeWithTokenSecret(t, path)
	oldKey, _ := os.ReadFile(path + ".key")

	var out bytes.Buffer
	rootCmd.SetOut(&out)
	defer rootCmd.SetOut(nil)
	if code := run([]string{"rotate-key", "--database", path}); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	newKey, _ := os.ReadFile(path + ".key")
	if bytes.Equal(oldKey, newKey) || !strings.Contains(out.String(), "was "+oldID) {
		t.Fatalf("key not rotated: %s", out.String())
	}
	st, err := store.Open(ctx, store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o, err := st.Overlay(ctx)
	if err != nil || *o.Cluster.TokenSecret != storedTokenSecret {
		t.Fatalf("after rotate-key: %+v %v", o, err)
	}
	if code := run([]string{"rotate-key", "--database", filepath.Join(t.TempDir(), "missing.db")}); code != 1 {
		t.Fatalf("missing database: exit %d", code)
	}
}

func TestRotateKeyRefusesWhileADaemonUsesTheDatabase(t *testing.T) {
	t.Setenv(envEncryptionKey, "")
	t.Setenv("PROXMOPS_CONFIG", "")
	t.Setenv("PROXMOPS_SOURCE_CACHEDIR", t.TempDir())
	path := filepath.Join(t.TempDir(), "proxmops.db")
	_, errOut := background(t, "serve", "--addr", "127.0.0.1:0", "--database", path, "--log-format", "text")
	m := waitFor(t, errOut, listeningRE)
	before, _ := os.ReadFile(path + ".key")
	code, _, stderr := runCLI(t, "rotate-key", "--database", path)
	if code != 1 || !strings.Contains(stderr, "proxmops serve listening on "+m[1]) || !strings.Contains(stderr, "pid ") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if after, _ := os.ReadFile(path + ".key"); !bytes.Equal(before, after) {
		t.Fatal("the key changed while the daemon ran")
	}
}

func TestRotateKeyRefusesWhileAReplicaUsesThePostgreSQLDatabase(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envEncryptionKey, "")
	t.Setenv("PROXMOPS_CONFIG", "")
	t.Setenv("PROXMOPS_SOURCE_CACHEDIR", filepath.Join(dir, "cache"))
	t.Setenv("PROXMOPS_SERVER_DATABASE", pgtest.Database(t))
	keyFile := filepath.Join(dir, "proxmops.key")
	t.Setenv("PROXMOPS_SERVER_KEYFILE", keyFile)
	t.Run("while serve runs", func(t *testing.T) {
		_, errOut := background(t, "serve", "--addr", "127.0.0.1:0", "--log-format", "text")
		waitFor(t, errOut, listeningRE)
		before, _ := os.ReadFile(keyFile)
		code, _, stderr := runCLI(t, "rotate-key")
		if code != 1 || !strings.Contains(stderr, "stop every replica first") {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		if after, _ := os.ReadFile(keyFile); !bytes.Equal(before, after) {
			t.Fatal("the key changed while the daemon ran")
		}
	})
	before, _ := os.ReadFile(keyFile)
	code, stdout, stderr := runCLI(t, "rotate-key")
	if code != 0 || !strings.Contains(stdout, "copy "+keyFile+" to every replica") {
		t.Fatalf("once serve stopped: exit %d %q %q", code, stdout, stderr)
	}
	if after, _ := os.ReadFile(keyFile); bytes.Equal(before, after) {
		t.Fatal("the key did not change")
	}
}

// sudo proxmops rotate-key must leave the service able to start: the new
// key file (and every file beside the database) keeps the owner and mode
// the service's user gave it, and the command says so.
func TestRotateKeyKeepsTheKeyFilesOwnerAndMode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the files another owner")
	}
	t.Setenv(envEncryptionKey, "")
	t.Setenv("PROXMOPS_CONFIG", "")
	dir := t.TempDir()
	path := filepath.Join(dir, "proxmops.db")
	storeWithTokenSecret(t, path)
	const uid, gid = 4242, 4343 // the service's user, not root
	if err := os.Chmod(path+".key", 0o400); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, path, path + ".key"} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := runCLI(t, "rotate-key", "--database", path)
	if code != 0 || !strings.Contains(stdout, "the key file "+path+".key keeps owner 4242:4343 and mode 0400") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		s := fi.Sys().(*syscall.Stat_t)
		if s.Uid != uid || s.Gid != gid {
			t.Errorf("%s is owned by %d:%d after the rotation, want %d:%d", e.Name(), s.Uid, s.Gid, uid, gid)
		}
	}
	if fi, _ := os.Stat(path + ".key"); fi.Mode().Perm() != 0o400 {
		t.Errorf("key file mode %04o, want 0400", fi.Mode().Perm())
	}
}

// Without --config or --database, rotate-key acts on the database the
// service's configuration names, not on a proxmops.db of the working
// directory.
func TestRotateKeyActsOnTheServicesDatabaseByDefault(t *testing.T) {
	t.Setenv(envEncryptionKey, "")
	t.Setenv("PROXMOPS_CONFIG", "")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "proxmops.db")
	st, err := store.Open(ctx, store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	oldID := st.KeyID()
	st.Close()
	service := filepath.Join(t.TempDir(), "proxmops.yaml")
	if err := os.WriteFile(service, []byte("server:\n  databasePath: "+path+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	saved := config.ServiceConfigFile
	config.ServiceConfigFile = service
	t.Cleanup(func() { config.ServiceConfigFile = saved })
	t.Chdir(t.TempDir())
	code, stdout, stderr := runCLI(t, "rotate-key")
	if code != 0 || !strings.Contains(stdout, "every secret in "+path+" is now encrypted") || !strings.Contains(stdout, "(was "+oldID+")") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
}

// storedTokenSecret is the token secret storeWithTokenSecret saves.
const storedTokenSecret = "pve-token-secret"

// storeWithTokenSecret makes a store at path holding storedTokenSecret and
// returns the id of the key that encrypts it.
func storeWithTokenSecret(t *testing.T, path string) string {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	secret := storedTokenSecret
	if err := st.SaveOverlay(context.Background(), config.Overlay{Cluster: &config.ClusterOverlay{TokenSecret: &secret}}); err != nil {
		t.Fatal(err)
	}
	return st.KeyID()
}
