package main

import (
	"context"
	"encoding/json"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/apitest"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/store"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
)

// With a daemon serving the cluster, the CLI is no second writer: run from
// a repository checkout it refuses to make a database there, refuses to act
// on the daemon's database behind its back (naming --server), and with
// --server and an API token it adopts and syncs through the daemon, whose
// one history shows the token and the CLI's user.
func TestCLIThroughARunningDaemonLeavesOneHistory(t *testing.T) {
	sim, repo := cliEnv(t)
	addApp01(t, sim)
	// The default database, proxmops.db in the working directory.
	t.Setenv("PROXMOPS_SERVER_DATABASEPATH", "")
	os.Unsetenv("PROXMOPS_SERVER_DATABASEPATH")
	stateDir := t.TempDir()
	db := filepath.Join(stateDir, "proxmops.db")
	checkout := t.TempDir()
	if err := os.Mkdir(filepath.Join(checkout, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(checkout)
	conn := []string{"--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint()}
	base, c, tok, stderr := serveAndSetUp(t, append([]string{"serve", "--addr", "127.0.0.1:0", "--database", db, "--log-format", "text"}, conn...)...)
	waitStatus(t, c, "app-01", vocab.StatusConflict)

	t.Run("without --server, no database in the checkout", func(t *testing.T) {
		code, out, errOut := runCLI(t, append([]string{"adopt", "VirtualMachine/app-01"}, conn...)...)
		if code != 1 || !strings.Contains(errOut, "inside the Git work tree "+checkout) {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
	})
	t.Run("without --server, not behind the daemon's back", func(t *testing.T) {
		t.Setenv("PROXMOPS_SERVER_DATABASEPATH", db)
		for _, args := range [][]string{{"adopt", "VirtualMachine/app-01"}, {"apply"}, {"rollback", "VirtualMachine/app-01"}} {
			code, out, errOut := runCLI(t, append(args, conn...)...)
			if code != 1 || !strings.Contains(errOut, "a daemon serves this cluster") || !strings.Contains(errOut, "--server "+base) {
				t.Fatalf("%s: exit %d\n%s%s", args[0], code, out, errOut)
			}
		}
		if g, _ := sim.Guest(120); strings.Contains(g.Config["tags"], engine.OwnerTag) {
			t.Fatalf("adopted behind the daemon's back: %v", g.Config)
		}
	})
	t.Setenv("PROXMOPS_CLI_TOKEN", tok.Token)
	code, out, errOut := runCLI(t, "adopt", "VirtualMachine/app-01", "--server", base)
	if code != 0 || !strings.Contains(out, "app-01") {
		t.Fatalf("adopt through the daemon: %d\n%s%s", code, out, errOut)
	}
	if g, _ := sim.Guest(120); !strings.Contains(g.Config["tags"], engine.OwnerTag) {
		t.Fatalf("not adopted: %v", g.Config)
	}
	code, out, errOut = runCLI(t, "sync", "--server", base)
	if code != 0 || !strings.Contains(out, "Status after the daemon's pass") {
		t.Fatalf("sync through the daemon: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "sync", "VirtualMachine/app-01", "--server", base, "--timeout", "1m")
	if code != 0 || !strings.Contains(out, "VirtualMachine/app-01: Synced") {
		t.Fatalf("sync of one resource through the daemon: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "apply", "--server", base)
	if code != 0 || !strings.Contains(out, "Status after the daemon's pass") {
		t.Fatalf("apply through the daemon: %d\n%s%s", code, out, errOut)
	}
	var d api.ResourceDetail
	if err := json.Unmarshal(c.Expect(200, "GET", "/api/v1/resources/VirtualMachine/app-01", nil), &d); err != nil {
		t.Fatal(err)
	}
	want := api.Actor{Kind: api.ActorCLI, Name: cliUser(), Token: "laptop"}
	found := false
	for _, h := range d.History {
		found = found || h.Event == api.EventAdopted && h.Actor != nil && *h.Actor == want
	}
	if !found {
		t.Fatalf("the daemon's history has no adoption by %+v: %+v", want, d.History)
	}
	if !strings.Contains(stderr.String(), "by=\""+want.String()+"\"") {
		t.Errorf("the daemon's log does not name %q:\n%s", want, stderr)
	}
	assertNoState(t, checkout)
}

// assertNoState fails when dir holds any file of proxmops' state.
func assertNoState(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && strings.Contains(e.Name(), "proxmops.db") {
			t.Errorf("state file %s in the Git work tree", p)
		}
		return nil
	})
}

func waitStatus(t *testing.T, c *apitest.Client, name string, want vocab.Status) {
	t.Helper()
	var last []byte
	if !testwait.Until(60*time.Second, func() bool {
		code, b := c.Do("GET", "/api/v1/resources/VirtualMachine/"+name, nil)
		last = b
		var d api.ResourceDetail
		return code == 200 && json.Unmarshal(b, &d) == nil && d.Status == want
	}) {
		t.Fatalf("%s never %s: %s", name, want, last)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Run from a repository checkout without a daemon, the commands that
// change the cluster refuse to keep state there, with the reason, before
// changing anything: no database and no key file is ever made in the work
// tree (one `git add .` would commit the key).
func TestCLIKeepsNoStateInAGitWorkTree(t *testing.T) {
	sim, repo := cliEnv(t)
	t.Setenv("PROXMOPS_SERVER_DATABASEPATH", "")
	os.Unsetenv("PROXMOPS_SERVER_DATABASEPATH")
	addApp01(t, sim)
	checkout := t.TempDir()
	if err := os.WriteFile(filepath.Join(checkout, ".git"), []byte("gitdir: /elsewhere\n"), 0o644); err != nil { // a linked work tree
		t.Fatal(err)
	}
	sub := filepath.Join(checkout, "proxmox")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	conn := []string{"--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint()}
	for _, args := range [][]string{{"adopt", "VirtualMachine/app-01"}, {"apply"}, {"rollback", "VirtualMachine/app-01"}} {
		code, out, errOut := runCLI(t, append(args, conn...)...)
		if code != 1 || !strings.Contains(errOut, "inside the Git work tree "+checkout) || !strings.Contains(errOut, "server.databasePath") {
			t.Errorf("%s: exit %d\n%s%s", args[0], code, out, errOut)
		}
	}
	if g, _ := sim.Guest(120); strings.Contains(g.Config["tags"], engine.OwnerTag) {
		t.Fatalf("the guest changed: %v", g.Config)
	}
	assertNoState(t, checkout)
	// plan changes nothing and keeps no state: it still works here.
	if code, out, errOut := runCLI(t, append([]string{"plan"}, conn...)...); code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	assertNoState(t, checkout)
}

// Without --config or PROXMOPS_CONFIG, the CLI reads the service's
// configuration file when it exists, and so acts on the service's
// database: an adoption lands in the one history the daemon shows.
func TestCLIUsesTheServiceConfigurationByDefault(t *testing.T) {
	sim, repo := cliEnv(t)
	t.Setenv("PROXMOPS_SERVER_DATABASEPATH", "")
	os.Unsetenv("PROXMOPS_SERVER_DATABASEPATH")
	addApp01(t, sim)
	etc, state := t.TempDir(), t.TempDir()
	db := filepath.Join(state, "proxmops.db")
	serviceFile := filepath.Join(etc, "proxmops.yaml")
	if err := os.WriteFile(serviceFile, []byte("server:\n  databasePath: "+db+"\ncluster:\n  endpoint: "+sim.APIURL()+
		"\n  tokenId: root@pam!cli\n  fingerprint: \""+sim.Fingerprint()+"\"\nsource:\n  repoURL: "+repo+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	saved := config.ServiceConfigFile
	config.ServiceConfigFile = serviceFile
	t.Cleanup(func() { config.ServiceConfigFile = saved })
	t.Chdir(t.TempDir())
	code, out, errOut := runCLI(t, "adopt", "VirtualMachine/app-01")
	if code != 0 {
		t.Fatalf("adopt: exit %d\n%s%s", code, out, errOut)
	}
	st, err := store.Open(context.Background(), store.Options{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := st.History(context.Background(), "VirtualMachine", "app-01", 0)
	if err != nil || len(h) != 1 || h[0].Event != api.EventAdopted {
		t.Fatalf("the service's history: %+v %v", h, err)
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Fatalf("state left in the working directory: %v", entries)
	}
}

// serveAndSetUp starts the daemon with args, sets up its first user (admin)
// and returns its URL, a client logged in as that user, an admin API token
// named laptop, and the daemon's log.
func serveAndSetUp(t *testing.T, args ...string) (string, *apitest.Client, api.NewToken, *testwait.Buffer) {
	t.Helper()
	stdout, stderr := background(t, args...)
	base := "http://" + waitFor(t, stderr, listeningRE)[1]
	c := apitest.New(t, base, must(cookiejar.New(nil)))
	c.Login(c.Expect(201, "POST", "/api/v1/setup", map[string]string{"token": waitFor(t, stdout, setupTokenLine)[0], "username": "admin", "password": "correct horse battery"}))
	var tok api.NewToken
	if err := json.Unmarshal(c.Expect(201, "POST", "/api/v1/tokens", map[string]string{"name": "laptop", "role": "admin"}), &tok); err != nil {
		t.Fatal(err)
	}
	return base, c, tok, stderr
}
