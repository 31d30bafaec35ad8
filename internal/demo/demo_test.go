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
	preset := map[string]bool{} // the person running the tests set these
	for _, name := range exampleSecrets {
		_, preset[name] = os.LookupEnv(name)
	}
	dir := t.TempDir()
	run := startDemo(t, Options{Dir: dir})
	info, out, logs := run.info, &run.out, &run.logs
	for _, want := range []string{info.URL, "username:  admin", info.Password, info.RepoDir, "git commit"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, out.String())
		}
	}

	hc := run.login(t)
	getApp := func() api.ResourceDetail {
		var d api.ResourceDetail
		run.call(t, hc, "GET", "/api/v1/resources/VirtualMachine/app-01", "", &d)
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

	assertExamplesConverge(t, run, hc)
	assertBrokerProvisioned(t, run, hc, filepath.Join(dir, "guests", "143"))

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
	var me api.Me
	run.call(t, hc, "GET", "/api/v1/me", "", &me)
	if resp := run.call(t, hc, "POST", "/api/v1/refresh", me.CSRFToken, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("refresh: %s", resp.Status)
	}
	waitApp("app-01 with 4 cores", func(d api.ResourceDetail) bool { return d.Status == vocab.StatusSynced && cores(d) == "4" })

	assertCheckPasses(t, run, hc, me.CSRFToken)

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
	var web api.ResourceDetail
	run.call(t, hc, "GET", "/api/v1/resources/VirtualMachine/web01", "", &web)
	if strings.Contains(web.Reason, "neither declared nor on the cluster") {
		t.Errorf("web01: %s", web.Reason)
	}

	if err := run.stop(t); err != nil {
		t.Fatalf("demo stopped with %v", err)
	}
	for _, name := range exampleSecrets {
		if _, ok := os.LookupEnv(name); ok && !preset[name] {
			t.Errorf("%s still set after the demo stopped", name)
		}
	}
}

// assertExamplesConverge waits for the whole example repository to
// converge, with pvestatd's 10 s status lag on: nothing is left failed, in
// conflict or out of sync but what waits for a manual sync (the template
// web01 clones was made by hand just before the first pass, so
// /cluster/resources does not name it yet).
func assertExamplesConverge(t *testing.T, run *demoRun, hc *http.Client) {
	t.Helper()
	var bad []string
	converged := testwait.Until(60*time.Second, func() bool {
		var list api.ResourceList
		run.call(t, hc, "GET", "/api/v1/resources", "", &list)
		bad = nil
		for _, r := range list.Resources {
			switch {
			case r.Status == vocab.StatusOutOfSync && r.SyncPolicy == vocab.SyncManual: // applied only by hand
			case r.Status == vocab.StatusFailed, r.Status == vocab.StatusConflict, r.Status == vocab.StatusOutOfSync, r.Status == vocab.StatusProgressing:
				bad = append(bad, fmt.Sprintf("%s/%s %s: %s", r.Kind, r.Name, r.Status, r.Reason))
			}
		}
		return len(list.Resources) > 0 && len(bad) == 0
	})
	if !converged {
		t.Fatalf("the examples did not converge:\n%s", strings.Join(bad, "\n"))
	}
}

// assertBrokerProvisioned checks that the broker example was provisioned
// over SSH, in its own tree: its packages, its file from the repository,
// its history.
func assertBrokerProvisioned(t *testing.T, run *demoRun, hc *http.Client, tree string) {
	t.Helper()
	var broker api.ResourceDetail
	run.call(t, hc, "GET", "/api/v1/resources/Container/broker", "", &broker)
	provisioned := false
	for _, h := range broker.History {
		provisioned = provisioned || strings.Contains(h.Message, "provisioned in")
	}
	if broker.Status != vocab.StatusSynced || !provisioned {
		t.Errorf("broker %s (%s), history %+v", broker.Status, broker.Reason, broker.History)
	}
	if b, err := os.ReadFile(filepath.Join(tree, "var/lib/pvesim/installed-packages")); err != nil || string(b) != "mosquitto\nmosquitto-clients\n" {
		t.Errorf("broker packages %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(tree, "etc/mosquitto/conf.d/proxmops.conf")); err != nil || !strings.Contains(string(b), "listener 1883") {
		t.Errorf("broker configuration %q %v", b, err)
	}
}

// assertCheckPasses checks that the settings' "test connection" passes
// against the simulated cluster (its token holds every privilege proxmops
// needs), and that GET /api/v1/check, for scripts, is the same report: the
// same lines, each with its level.
func assertCheckPasses(t *testing.T, run *demoRun, hc *http.Client, csrf string) {
	t.Helper()
	var tr api.TestResult
	if resp := run.call(t, hc, "POST", "/api/v1/settings/test", csrf, &tr); resp.StatusCode != http.StatusOK || !tr.OK || len(tr.Checks) == 0 {
		t.Fatalf("settings test: %s %+v", resp.Status, tr)
	}
	for _, c := range tr.Checks {
		if !c.OK {
			t.Errorf("settings test check %s: %s", c.Name, c.Message)
		}
	}
	var cr api.TestResult
	if resp := run.call(t, hc, "GET", "/api/v1/check", "", &cr); resp.StatusCode != http.StatusOK || !cr.OK || len(cr.Checks) != len(tr.Checks) {
		t.Fatalf("GET /api/v1/check: %s %+v\nsettings test: %+v", resp.Status, cr, tr)
	}
	for i, c := range cr.Checks {
		if c.Name != tr.Checks[i].Name || c.Level != tr.Checks[i].Level || c.Level == "" {
			t.Errorf("check line %d: %+v, the settings test's %+v", i, c, tr.Checks[i])
		}
	}
}

// demoRun is the demo running in process for one test.
type demoRun struct {
	info      Info
	out, logs testwait.Buffer // the daemon writes while the test reads
	cancel    context.CancelFunc
	finished  chan struct{}
	err       error // what Run returned, once finished is closed
}

// startDemo runs the demo with o on a loopback port, its tasks fast and its
// passes asked for, and returns once it has started. It is stopped at the
// latest when the test ends: the demo restores the environment when it
// ends, and the next test's demo must keep its secrets.
func startDemo(t *testing.T, o Options) *demoRun {
	t.Helper()
	passwordParams = auth.Params{Memory: 1024, Time: 1, Threads: 1}
	ctx, cancel := context.WithCancel(context.Background())
	d := &demoRun{cancel: cancel, finished: make(chan struct{})}
	started := make(chan Info, 1)
	o.Addr, o.TaskSpeed, o.Interval = "127.0.0.1:0", 0.01, time.Hour
	o.Out, o.Log, o.Started = &d.out, &d.logs, func(i Info) { started <- i }
	go func() {
		d.err = Run(ctx, o)
		close(d.finished)
	}()
	t.Cleanup(func() { cancel(); <-d.finished })
	select {
	case d.info = <-started:
	case <-d.finished:
		t.Fatalf("demo stopped: %v\n%s", d.err, d.logs.String())
	case <-time.After(60 * time.Second):
		t.Fatal("demo did not start")
	}
	return d
}

// stop ends the demo and returns what Run returned.
func (d *demoRun) stop(t *testing.T) error {
	t.Helper()
	d.cancel()
	select {
	case <-d.finished:
		return d.err
	case <-time.After(30 * time.Second):
		t.Fatal("demo did not stop")
		return nil
	}
}

// login is an HTTP client with the demo admin's session.
func (d *demoRun) login(t *testing.T) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	body, _ := json.Marshal(map[string]string{"username": d.info.Username, "password": d.info.Password})
	resp, err := hc.Post(d.info.URL+"/api/v1/login", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %s", resp.Status)
	}
	return hc
}

// call sends method path with hc, a write with csrf and the demo's Origin,
// and decodes the answer into into unless it is nil.
func (d *demoRun) call(t *testing.T, hc *http.Client, method, path, csrf string, into any) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, d.info.URL+path, nil)
	if csrf != "" {
		req.Header.Set("X-CSRF-Token", csrf)
		req.Header.Set("Origin", d.info.URL)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if into != nil {
		json.NewDecoder(resp.Body).Decode(into)
	}
	return resp
}
