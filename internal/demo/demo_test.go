package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
)

// TestDemoConvergesAndFollowsACommit runs the whole demo in process: the
// examples reach the simulated cluster, and a commit in the demo's
// repository changes it.
func TestDemoConvergesAndFollowsACommit(t *testing.T) {
	passwordParams = auth.Params{Memory: 1024, Time: 1, Threads: 1}
	preset := map[string]bool{} // the person running the tests set these
	for _, name := range exampleSecrets {
		_, preset[name] = os.LookupEnv(name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan Info, 1)
	var out, logs syncBuffer // the daemon writes while the test reads
	done := make(chan error, 1)
	dir := t.TempDir()
	go func() {
		done <- Run(ctx, Options{Addr: "127.0.0.1:0", Dir: dir, TaskSpeed: 0.01, Interval: time.Hour,
			Out: &out, Log: &logs, Started: func(i Info) { started <- i }})
	}()
	var info Info
	select {
	case info = <-started:
	case err := <-done:
		t.Fatalf("demo stopped: %v\n%s", err, logs.String())
	case <-time.After(60 * time.Second):
		t.Fatal("demo did not start")
	}
	for _, want := range []string{info.URL, "username:  admin", info.Password, info.RepoDir, "git commit"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, out.String())
		}
	}

	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	body, _ := json.Marshal(map[string]string{"username": info.Username, "password": info.Password})
	resp, err := hc.Post(info.URL+"/api/v1/login", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %s", resp.Status)
	}
	getApp := func() api.ResourceDetail {
		var d api.ResourceDetail
		resp, err := hc.Get(info.URL + "/api/v1/resources/VirtualMachine/app-01")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&d)
		return d
	}
	cores := func(d api.ResourceDetail) string {
		obs, _ := d.Observed.(map[string]any)
		cfg, _ := obs["config"].(map[string]any)
		return fmt.Sprint(cfg["cores"])
	}
	waitApp := func(what string, ok func(api.ResourceDetail) bool) {
		t.Helper()
		var d api.ResourceDetail
		if !testwait.Until(60*time.Second, func() bool { d = getApp(); return ok(d) }) {
			t.Fatalf("timed out waiting for %s: %+v\n%s", what, d.ResourceSummary, logs.String())
		}
	}
	waitApp("app-01 synced", func(d api.ResourceDetail) bool { return d.Status == vocab.StatusSynced && cores(d) == "2" })

	// With pvestatd's 10 s status lag on, the whole example repository
	// converges: nothing is left failed, in conflict or out of sync but what
	// waits for a manual sync (the
	// template web01 clones was made by hand just before the first pass,
	// so /cluster/resources does not name it yet).
	deadline := time.Now().Add(60 * time.Second)
	for {
		var list api.ResourceList
		resp, err := hc.Get(info.URL + "/api/v1/resources")
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		var bad []string
		for _, r := range list.Resources {
			switch {
			case r.Status == vocab.StatusOutOfSync && r.SyncPolicy == vocab.SyncManual: // applied only by hand
			case r.Status == vocab.StatusFailed, r.Status == vocab.StatusConflict, r.Status == vocab.StatusOutOfSync, r.Status == vocab.StatusProgressing:
				bad = append(bad, fmt.Sprintf("%s/%s %s: %s", r.Kind, r.Name, r.Status, r.Reason))
			}
		}
		if len(list.Resources) > 0 && len(bad) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the examples did not converge:\n%s", strings.Join(bad, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The broker example was provisioned over SSH, in its own tree: its
	// packages, its file from the repository, its history.
	var broker api.ResourceDetail
	if resp, err := hc.Get(info.URL + "/api/v1/resources/Container/broker"); err != nil {
		t.Fatal(err)
	} else {
		json.NewDecoder(resp.Body).Decode(&broker)
		resp.Body.Close()
	}
	provisioned := false
	for _, h := range broker.History {
		provisioned = provisioned || strings.Contains(h.Message, "provisioned in")
	}
	if broker.Status != vocab.StatusSynced || !provisioned {
		t.Errorf("broker %s (%s), history %+v", broker.Status, broker.Reason, broker.History)
	}
	tree := filepath.Join(dir, "guests", "143")
	if b, err := os.ReadFile(filepath.Join(tree, "var/lib/pvesim/installed-packages")); err != nil || string(b) != "mosquitto\nmosquitto-clients\n" {
		t.Errorf("broker packages %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(tree, "etc/mosquitto/conf.d/proxmops.conf")); err != nil || !strings.Contains(string(b), "listener 1883") {
		t.Errorf("broker configuration %q %v", b, err)
	}

	// A commit in the demo repository, as a person would make it.
	p := filepath.Join(info.RepoDir, "vms", "app-01.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	gittest.Open(t, info.RepoDir).Commit("app-01: 4 cores", map[string]string{
		"vms/app-01.yaml": string(bytes.Replace(data, []byte("cores: 2"), []byte("cores: 4"), 1)),
	})
	// The interval is an hour: the refresh (what a webhook does) brings it in.
	req, _ := http.NewRequest(http.MethodGet, info.URL+"/api/v1/me", nil)
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var me api.Me
	json.NewDecoder(resp.Body).Decode(&me)
	resp.Body.Close()
	req, _ = http.NewRequest(http.MethodPost, info.URL+"/api/v1/refresh", nil)
	req.Header.Set("X-CSRF-Token", me.CSRFToken)
	req.Header.Set("Origin", info.URL)
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("refresh: %s", resp.Status)
	}
	waitApp("app-01 with 4 cores", func(d api.ResourceDetail) bool { return d.Status == vocab.StatusSynced && cores(d) == "4" })

	// The settings' "test connection" passes against the simulated cluster:
	// its token holds every privilege proxmops needs.
	req, _ = http.NewRequest(http.MethodPost, info.URL+"/api/v1/settings/test", nil)
	req.Header.Set("X-CSRF-Token", me.CSRFToken)
	req.Header.Set("Origin", info.URL)
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tr api.TestResult
	json.NewDecoder(resp.Body).Decode(&tr)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !tr.OK || len(tr.Checks) == 0 {
		t.Fatalf("settings test: %s %+v", resp.Status, tr)
	}
	for _, c := range tr.Checks {
		if !c.OK {
			t.Errorf("settings test check %s: %s", c.Name, c.Message)
		}
	}

	// GET /api/v1/check, for scripts, is the same report: the same lines,
	// each with its level.
	resp, err = hc.Get(info.URL + "/api/v1/check")
	if err != nil {
		t.Fatal(err)
	}
	var cr api.TestResult
	json.NewDecoder(resp.Body).Decode(&cr)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !cr.OK || len(cr.Checks) != len(tr.Checks) {
		t.Fatalf("GET /api/v1/check: %s %+v\nsettings test: %+v", resp.Status, cr, tr)
	}
	for i, c := range cr.Checks {
		if c.Name != tr.Checks[i].Name || c.Level != tr.Checks[i].Level || c.Level == "" {
			t.Errorf("check line %d: %+v, the settings test's %+v", i, c, tr.Checks[i])
		}
	}

	// What the demo provides: the examples' password variables, set but
	// never printed, and the template web01 clones, made "by hand".
	for _, name := range exampleSecrets {
		v, ok := os.LookupEnv(name)
		if !ok || len(v) < 12 {
			t.Errorf("%s not provided", name)
		} else if strings.Contains(out.String()+logs.String(), v) {
			t.Errorf("%s printed", name)
		}
	}
	resp, err = hc.Get(info.URL + "/api/v1/resources/VirtualMachine/web01")
	if err != nil {
		t.Fatal(err)
	}
	var web api.ResourceDetail
	json.NewDecoder(resp.Body).Decode(&web)
	resp.Body.Close()
	if strings.Contains(web.Reason, "neither declared nor on the cluster") {
		t.Errorf("web01: %s", web.Reason)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("demo stopped with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("demo did not stop")
	}
	for _, name := range exampleSecrets {
		if _, ok := os.LookupEnv(name); ok && !preset[name] {
			t.Errorf("%s still set after the demo stopped", name)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
