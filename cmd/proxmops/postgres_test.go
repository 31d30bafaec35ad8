package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/apitest"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/pgtest"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	pgSimTokenID     = "root@pam!proxmops"
	pgSimTokenSecret = "pg-e2e-secret-value"
	pgAdminPassword  = "correct horse battery"
)

var setupTokenLine = regexp.MustCompile(`pmsetup_[A-Za-z0-9_-]+`)

// `proxmops serve` on PostgreSQL: the setup token is the database's (the
// same after a restart, and no file), and the account, its session, the
// settings saved from the UI (encrypted in the database) and the history of
// a reconciled VM all survive a restart.
func TestServeOnPostgreSQLKeepsAccountsSettingsAndHistoryAcrossRestarts(t *testing.T) {
	dbURL := pgtest.Database(t)
	dir := t.TempDir()
	sim := simtest.Start(t, pvesim.Options{Nodes: 1, TokenID: pgSimTokenID, TokenSecret: pgSimTokenSecret, StatusInterval: -1})
	repoDir := filepath.Join(dir, "repo")
	gittest.Init(t, repoDir).Commit("add vms/web.yaml", map[string]string{"vms/web.yaml": testvm.VM{Name: "web", Node: "pve1", VMID: 300, Cores: 2}.YAML()})
	keyFile := filepath.Join(dir, "keys", "proxmops.key")
	os.MkdirAll(filepath.Dir(keyFile), 0o700)
	t.Setenv("PROXMOPS_CONFIG", "")
	t.Setenv("PROXMOPS_SOURCE_CACHEDIR", filepath.Join(dir, "cache"))
	t.Setenv("PROXMOPS_SERVER_DATABASE", dbURL)
	t.Setenv("PROXMOPS_SERVER_KEYFILE", keyFile)
	t.Setenv("PROXMOPS_RECONCILE_INTERVAL", "1s")
	t.Chdir(dir) // a stray file in the working directory would show
	args := []string{"serve", "--addr", "127.0.0.1:0", "--log-format", "text"}
	start := func(t *testing.T) (base string, stdout *testwait.Buffer) {
		out, errOut := background(t, args...)
		base = "http://" + waitFor(t, errOut, listeningRE)[1]
		// A lone replica leads once it holds the lock (and, after an
		// unclean stop, once the old term's lease ran out).
		testwait.For(t, "the replica to lead", time.Minute, func() bool {
			var doc struct{ Role string }
			resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(base + "/readyz")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			return json.NewDecoder(resp.Body).Decode(&doc) == nil && doc.Role == "leader"
		})
		return base, out
	}

	var token string
	t.Run("first start prints the database's setup token", func(t *testing.T) {
		_, out := start(t)
		token = waitFor(t, out, setupTokenLine)[0]
		if strings.Contains(out.String(), ".setup-token") {
			t.Fatalf("a setup token file is named on PostgreSQL: %s", out)
		}
	})
	jar, _ := cookiejar.New(nil)
	var vmHistory []api.HistoryEntry
	t.Run("restart before setup prints the same token; setup, settings, reconcile", func(t *testing.T) {
		base, out := start(t)
		if again := waitFor(t, out, setupTokenLine)[0]; again != token {
			t.Fatalf("the restart made a new setup token: %s, was %s", again, token)
		}
		c := apitest.New(t, base, jar)
		c.Login(c.Expect(201, "POST", "/api/v1/setup", map[string]string{"token": token, "username": "admin", "password": pgAdminPassword}))
		c.Expect(200, "PUT", "/api/v1/settings", map[string]any{
			"cluster": map[string]any{"endpoint": sim.APIURL(), "tokenId": pgSimTokenID, "tokenSecret": pgSimTokenSecret},
			"source":  map[string]any{"repoURL": "file://" + filepath.ToSlash(repoDir), "revision": "main", "path": ""},
		})
		vmHistory = waitSynced(t, c, "web")
	})
	assertSealed(t, dbURL, pgSimTokenSecret)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "setup-token") || strings.HasSuffix(e.Name(), ".db") || strings.HasSuffix(e.Name(), ".lock") {
			t.Errorf("SQLite-side file %s on PostgreSQL", e.Name())
		}
	}
	t.Run("after a restart everything is still there", func(t *testing.T) {
		base, out := start(t)
		c := apitest.New(t, base, jar)
		// The session made before the restart still works.
		c.Login(c.Expect(200, "GET", "/api/v1/me", nil))
		var settings struct {
			Cluster struct {
				Endpoint    string `json:"endpoint"`
				TokenSecret string `json:"tokenSecret"`
			} `json:"cluster"`
		}
		if err := json.Unmarshal(c.Expect(200, "GET", "/api/v1/settings", nil), &settings); err != nil ||
			settings.Cluster.Endpoint != sim.APIURL() || settings.Cluster.TokenSecret != "set" {
			t.Fatalf("settings after restart: %+v %v", settings, err)
		}
		otherJar, _ := cookiejar.New(nil)
		fresh := apitest.New(t, base, otherJar)
		fresh.Login(fresh.Expect(200, "POST", "/api/v1/login", map[string]string{"username": "admin", "password": pgAdminPassword}))
		var detail api.ResourceDetail
		if err := json.Unmarshal(fresh.Expect(200, "GET", "/api/v1/resources/VirtualMachine/web", nil), &detail); err != nil {
			t.Fatal(err)
		}
		if len(detail.History) < len(vmHistory) || detail.History[len(detail.History)-1].ID != vmHistory[len(vmHistory)-1].ID {
			t.Fatalf("history after restart: %+v, before: %+v", detail.History, vmHistory)
		}
		if setupTokenLine.MatchString(out.String()) {
			t.Fatalf("a setup token after setup: %s", out)
		}
	})
}

// waitSynced waits until the daemon reports the VM Synced with history,
// and returns that history.
func waitSynced(t *testing.T, c *apitest.Client, name string) []api.HistoryEntry {
	t.Helper()
	var last []byte
	var d api.ResourceDetail
	if !testwait.Until(60*time.Second, func() bool {
		code, b := c.Do("GET", "/api/v1/resources/VirtualMachine/"+name, nil)
		last = b
		return code == 200 && json.Unmarshal(b, &d) == nil && d.Status == vocab.StatusSynced && len(d.History) > 0
	}) {
		t.Fatalf("%s never Synced with history: %s", name, last)
	}
	return d.History
}

// assertSealed checks the database holds the settings, none in clear.
func assertSealed(t *testing.T, dbURL, secret string) {
	t.Helper()
	ctx := context.Background()
	conn := pgtest.Connect(t, dbURL)
	rows, err := conn.Query(ctx, `SELECT name, value FROM encrypted`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	names := map[string]bool{}
	for rows.Next() {
		var name string
		var v []byte
		if err := rows.Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		names[name] = true
		if bytes.Contains(v, []byte(secret)) {
			t.Errorf("record %s holds the secret in clear", name)
		}
	}
	if !names["settings/cluster"] {
		t.Fatalf("no settings/cluster record: %v", names)
	}
}
