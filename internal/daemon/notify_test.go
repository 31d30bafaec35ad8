package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/store"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/pvesim"
)

// TestDaemonAnnouncesAFailureToTheConfiguredReceiver runs the daemon from a
// config file listing a JSON webhook whose path holds a secret by file
// reference: a VM whose create Proxmox fails reaches the receiver once, with
// its link under server.publicURL, and GET /api/v1/notifications shows the
// delivery without the secret.
func TestDaemonAnnouncesAFailureToTheConfiguredReceiver(t *testing.T) {
	sim := startChaosSim(t, pvesim.Options{Seed: 1})
	sim.SetFaults(pvesim.Faults{TaskFailRate: 1})

	var mu sync.Mutex
	var got []api.NotificationBody
	var paths []string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body api.NotificationBody
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got, paths = append(got, body), append(paths, r.URL.Path)
		mu.Unlock()
	}))
	defer receiver.Close()

	dir := t.TempDir()
	r := &chaosRun{t: t, sim: sim, dir: dir}
	r.initRepoWith("web", map[string]string{"vms/web.yaml": chaosManifest(0, "1")})
	if err := os.WriteFile(filepath.Join(dir, "hook-secret"), []byte("hook-s3cret-path\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "proxmops.yaml")
	if err := os.WriteFile(cfgFile, []byte(fmt.Sprintf(`cluster:
  endpoint: %s
  tokenId: "%s"
  tokenSecret: ${PROXMOPS_TEST_PVE_SECRET}
source:
  repoURL: file://%s
  revision: main
  cacheDir: git-cache
server:
  databasePath: proxmops.db
  publicURL: https://proxmops.lan
notifications:
  - name: ops
    url: %s/hooks/${file:%s}
    on: [failed]
`, sim.APIURL(), chaosTokenID, filepath.ToSlash(filepath.Join(dir, "repo")), receiver.URL, filepath.Join(dir, "hook-secret"))), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PROXMOPS_TEST_PVE_SECRET", chaosTokenSecret)
	cfg, _, err := config.Load(config.LoadOptions{File: cfgFile, Env: []string{"PROXMOPS_TEST_PVE_SECRET=" + chaosTokenSecret}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), store.Options{Path: cfg.Server.DatabasePath})
	if err != nil {
		t.Fatal(err)
	}
	tok, hash := auth.NewToken(auth.PrefixAPI)
	if _, err := st.CreateAPIToken(context.Background(), "test", api.RoleAdmin, hash, 0); err != nil {
		t.Fatal(err)
	}
	st.Close()
	d, err := startDaemonWith(t, cfg)
	if err != nil {
		t.Fatal(err)
	}

	testwait.For(t, "a notification to reach the receiver", 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0
	})
	mu.Lock()
	body, path := got[0], paths[0]
	mu.Unlock()
	if path != "/hooks/hook-s3cret-path" {
		t.Errorf("path = %q: the file's secret in place of its reference", path)
	}
	if len(body.Events) != 1 || body.Receiver != "ops" {
		t.Fatalf("body = %+v", body)
	}
	e := body.Events[0]
	if e.Event != api.NotifyFailed || e.Kind != "VirtualMachine" || e.Name != "chaos-0" || e.Cluster != "default" ||
		!strings.Contains(e.Message, "create failed") || e.Link != "https://proxmops.lan/?r=VirtualMachine%2Fchaos-0" {
		t.Errorf("event = %+v", e)
	}

	code, doc, err := apiGet("http://"+d.addr, tok, "/api/v1/notifications")
	if err != nil {
		t.Fatal(err)
	}
	var list api.NotificationList
	if err := json.Unmarshal(doc, &list); err != nil || code != http.StatusOK {
		t.Fatalf("GET /api/v1/notifications: %d %v", code, err)
	}
	if len(list.Notifications) != 1 {
		t.Fatalf("list = %+v", list)
	}
	if s := list.Notifications[0]; s.Name != "ops" || s.Delivered < 1 || s.LastDelivery == nil || strings.Contains(s.URL, "s3cret") {
		t.Errorf("status = %+v", s)
	}
}
