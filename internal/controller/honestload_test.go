package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/logring"
	"github.com/proxmops/proxmops/internal/vocab"
)

// served is the daemon's API over real HTTP on loopback, signed in as an
// administrator.
type served struct {
	base string
	hc   *http.Client
	ctx  context.Context
}

// serve starts the HTTP server over e's controller (logs: the ring the
// controller logs into, or nil) and signs in.
func serve(t *testing.T, e *env, logs *logring.Ring) *served {
	t.Helper()
	c := serveAPIWithLogs(t, e, logs)
	// The test's context ends before the server stops, so an open event
	// stream never holds the server's shutdown.
	return &served{base: c.Base, hc: c.HC, ctx: t.Context()}
}

// get answers the status and body of a GET.
func (s *served) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	resp, err := s.hc.Get(s.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// events opens GET /api/v1/events.
func (s *served) events(t *testing.T) <-chan [2]string {
	t.Helper()
	req, _ := http.NewRequestWithContext(s.ctx, http.MethodGet, s.base+"/api/v1/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := s.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	out := make(chan [2]string, 256)
	go readSSE(resp.Body, out)
	return out
}

// eventsFromSnapshot opens GET /api/v1/events and reads up to the
// snapshot of the whole state the stream starts with.
func (s *served) eventsFromSnapshot(t *testing.T) (<-chan [2]string, [2]string) {
	t.Helper()
	events := s.events(t)
	return events, nextEvent(t, events, func(typ, _ string) bool { return typ == api.SSESnapshot })
}

const (
	coersManifest = "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: a}\nspec: {coers: 2}\n"
	memryManifest = "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: b}\nspec: {memry: 2}\n"
)

// When the very first load fails, the answers that need a loaded revision
// say why (each manifest error), not a bare "not ready", and the status
// list carries the load error instead of repeating it as a source problem.
func TestFirstLoadFailureSaysWhy(t *testing.T) {
	sim := startSim(t, 0)
	repo := gittest.New(t)
	broken := repo.Commit("broken from the start", map[string]string{"vms/a.yaml": coersManifest, "vms/b.yaml": memryManifest})
	e := newEnv(t, sim, repo, "").start()
	l := e.waitFor("the load error", func(l api.ResourceList) bool { return l.LoadError != nil })
	if l.LoadError.Revision != broken.String() || len(l.LoadError.Errors) < 2 {
		t.Fatalf("load error %+v, want the errors of both files at %s", l.LoadError, broken)
	}
	if strings.Contains(l.SourceError, "coers") {
		t.Fatalf("the source error repeats the load error: %q", l.SourceError)
	}

	_, err := e.c.Plan(context.Background(), "")
	if !errors.Is(err, api.ErrNotReady) {
		t.Fatalf("plan without a loaded revision: %v, want not ready", err)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 1+len(l.LoadError.Errors) || !strings.Contains(lines[0], short(broken.String())) {
		t.Fatalf("plan error does not list the load errors one per line:\n%s", err)
	}
	for i, e := range l.LoadError.Errors {
		if lines[1+i] != e {
			t.Errorf("plan error line %d is %q, want %q", 1+i, lines[1+i], e)
		}
	}
	if strings.HasSuffix(err.Error(), "not ready") {
		t.Fatalf("plan error ends in a bare 'not ready': %q", err)
	}

	s := serve(t, e, nil)
	for _, path := range []string{"/api/v1/plan", "/api/v1/resources/VirtualMachine/a/manifest"} {
		code, body := s.get(t, path)
		var doc api.Error
		if code != http.StatusServiceUnavailable || json.Unmarshal(body, &doc) != nil ||
			!strings.Contains(doc.Error, "unknown field") || !strings.Contains(doc.Error, "failed to load") {
			t.Errorf("GET %s: %d %s, want 503 naming the load errors", path, code, body)
		}
	}
}

// Pass events on GET /api/v1/events carry the head's load error while it
// fails and null once a head loads again, as the status list does.
func TestPassEventsCarryTheLoadError(t *testing.T) {
	e := syncedVM(t, 0, "a", 431, 1)
	repo := e.repo
	events, _ := serve(t, e, nil).eventsFromSnapshot(t)

	broken := repo.Commit("broken", map[string]string{"vms/a.yaml": coersManifest})
	e.c.Refresh(context.Background())
	var failed api.PassEvent
	nextEvent(t, events, func(typ, data string) bool {
		return typ == api.SSEPass && json.Unmarshal([]byte(data), &failed) == nil && failed.LoadError != nil
	})
	if failed.LoadError.Revision != broken.String() || len(failed.LoadError.Errors) == 0 ||
		!strings.HasPrefix(failed.LoadError.Errors[0], "vms/a.yaml:") {
		t.Fatalf("pass event load error %+v, want vms/a.yaml's at %s", failed.LoadError, broken)
	}
	if strings.Contains(failed.SourceError, "coers") {
		t.Fatalf("the pass event's source error repeats the load error: %q", failed.SourceError)
	}

	repo.Commit("fixed", map[string]string{"vms/a.yaml": vmManifest("a", 431, 1)})
	e.c.Refresh(context.Background())
	nextEvent(t, events, func(typ, data string) bool {
		var raw map[string]json.RawMessage
		return typ == api.SSEPass && json.Unmarshal([]byte(data), &raw) == nil && string(raw["loadError"]) == "null"
	})
}

// Log lines of actions name their resource and the full commit they
// applied, so the UI can link both.
func TestActionLogLinesNameResourceAndCommit(t *testing.T) {
	sim := startSim(t, 0)
	repo := gittest.New(t)
	head := repo.Commit("vm", map[string]string{"vms/a.yaml": vmManifest("a", 432, 1)})
	ring := logring.New(1000)
	e := newEnv(t, sim, repo, "", func(o *Options) {
		o.Logger = slog.New(ring.Handler(slog.DiscardHandler, slog.LevelInfo))
	}).start()
	e.waitStatus("VirtualMachine/a", vocab.StatusSynced)
	s := serve(t, e, ring)

	code, body := s.get(t, "/api/v1/logs?limit=1000")
	var doc api.LogLines
	if code != http.StatusOK || json.Unmarshal(body, &doc) != nil {
		t.Fatalf("GET /api/v1/logs: %d %s", code, body)
	}
	var done, loaded *api.LogLine
	for i, l := range doc.Lines {
		switch l.Msg {
		case "action done":
			done = &doc.Lines[i]
		case "desired state loaded":
			loaded = &doc.Lines[i]
		}
	}
	if done == nil || done.Attrs["resource"] != "VirtualMachine/a" || done.Attrs["commit"] != head.String() {
		t.Fatalf("action done line %+v, want resource VirtualMachine/a and commit %s", done, head)
	}
	if loaded == nil || loaded.Attrs["commit"] != head.String() {
		t.Fatalf("desired state loaded line %+v, want the full commit %s", loaded, head)
	}
}

// A branch head that fails to load is named on GET /api/v1/revisions with
// its errors (the last good commit is the current one), and a preview of it
// lists the errors one per line, without a trailing "invalid request".
func TestBrokenHeadIsNamedInRevisionsAndPreview(t *testing.T) {
	e := syncedVM(t, 0, "a", 432, 1)
	repo := e.repo
	good := e.first
	s := serve(t, e, nil)

	broken := repo.Commit("broken", map[string]string{"vms/a.yaml": coersManifest, "vms/b.yaml": memryManifest})
	e.c.Refresh(context.Background())
	l := e.waitFor("the load error", func(l api.ResourceList) bool { return l.LoadError != nil })
	if len(l.LoadError.Errors) < 2 {
		t.Fatalf("load error %+v, want one error per file", l.LoadError)
	}

	code, body := s.get(t, "/api/v1/revisions")
	var revs api.RevisionList
	if code != http.StatusOK || json.Unmarshal(body, &revs) != nil || len(revs.Revisions) != 2 {
		t.Fatalf("GET /api/v1/revisions: %d %s", code, body)
	}
	head, last := revs.Revisions[0], revs.Revisions[1]
	if head.Hash != broken.String() || head.Current || strings.Join(head.LoadErrors, "\n") != strings.Join(l.LoadError.Errors, "\n") {
		t.Errorf("head = %+v, want not current, with the load errors %q", head, l.LoadError.Errors)
	}
	if last.Hash != good.String() || !last.Current || last.LoadErrors != nil {
		t.Errorf("last good = %+v, want current, without load errors", last)
	}

	code, body = s.get(t, "/api/v1/plan?revision="+broken.String())
	var doc api.Error
	if code != http.StatusBadRequest || json.Unmarshal(body, &doc) != nil {
		t.Fatalf("preview of the broken head: %d %s, want 400", code, body)
	}
	want := append([]string{"the manifests at " + short(broken.String()) + " failed to load:"}, l.LoadError.Errors...)
	if got := strings.Split(doc.Error, "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("preview error lines:\n%s\nwant:\n%s", doc.Error, strings.Join(want, "\n"))
	}
}

// An empty load prunes nothing, and every answer that plans says why with
// the guard's own words, never "prune is off" nor a delete the loop will
// not make: the plan preview (prune on in the configuration), and a sync
// that asks for prune, dry run or not (prune off in the configuration).
func TestEmptyLoadGuardIsNamedInEveryPlan(t *testing.T) {
	const guard = "nothing is pruned from an empty load"
	for _, configured := range []bool{true, false} {
		t.Run(map[bool]string{true: "prune on", false: "prune asked for one sync"}[configured], func(t *testing.T) {
			sim := startSim(t, 0)
			repo := gittest.New(t)
			vmid := 440
			if !configured {
				vmid = 441
			}
			repo.Commit("vm", map[string]string{"vms/a.yaml": vmManifest("a", vmid, 1)})
			e := newEnv(t, sim, repo, "", func(o *Options) { o.Config.Reconcile.Prune = configured }).start()
			e.waitStatus("VirtualMachine/a", vocab.StatusSynced)
			c := serveAPI(t, e)
			repo.Commit("everything gone", map[string]string{"vms/a.yaml": ""})
			e.c.Refresh(context.Background())
			e.waitFor("the empty load", func(l api.ResourceList) bool { return strings.Contains(l.SourceError, "no manifests") })

			check := func(what string, doc api.Plan) {
				t.Helper()
				if len(doc.Actions) != 1 || doc.Actions[0].Action != vocab.ActionNone || !strings.Contains(doc.Actions[0].Reason, guard) ||
					doc.Summary.Delete != 0 {
					t.Errorf("%s: %+v, want no delete and the guard named", what, doc)
				}
			}
			if configured {
				var doc api.Plan
				if st := c.do("GET", "/api/v1/plan", nil, &doc); st != http.StatusOK {
					t.Fatalf("GET /api/v1/plan: %d", st)
				}
				check("plan preview", doc)
				return
			}
			var dry struct {
				Plan api.Plan `json:"plan"`
			}
			if st := c.do("POST", "/api/v1/sync", api.SyncOptions{Prune: true, DryRun: true}, &dry); st != http.StatusOK {
				t.Fatalf("dry run: %d", st)
			}
			check("dry run with prune", dry.Plan)
			if st := c.do("POST", "/api/v1/sync", api.SyncOptions{Prune: true}, nil); st != http.StatusAccepted {
				t.Fatalf("sync with prune: %d", st)
			}
			e.waitFor("the sync's pass names the guard", func(l api.ResourceList) bool {
				r := find(l, "VirtualMachine/a")
				return r != nil && strings.Contains(r.Reason, guard)
			})
			wantGuest(t, sim, vmid, "a sync with prune deleted the VM from an empty load")
		})
	}
}

// The status list's counts, the plan's statuses and the metric
// proxmops_resources count every resource in the same one status, over
// real HTTP: a synced VM, an orphan left by prune off (out of sync, never
// in sync) and an Iso on a storage that does not exist (Failed).
func TestEverySummaryCountsStatusesTheSameWay(t *testing.T) {
	sim, repo := simWithRepo(t, 0, "two vms", map[string]string{"vms/a.yaml": vmManifest("a", 442, 1), "vms/b.yaml": vmManifest("b", 443, 1)})
	e := newEnv(t, sim, repo, "").start()
	e.waitStatus("VirtualMachine/b", vocab.StatusSynced)
	c := serveAPI(t, e)
	iso := "apiVersion: proxmops.dev/v1\nkind: Iso\nmetadata: {name: debian}\nspec:\n  source: http://127.0.0.1:1/debian.iso\n  node: pve1\n  storage: nosuch\n"
	repo.Commit("b goes, an iso comes", map[string]string{"vms/b.yaml": "", "isos/debian.yaml": iso})
	e.c.Refresh(context.Background())
	want := map[vocab.Status]int{vocab.StatusSynced: 1, vocab.StatusOutOfSync: 1, vocab.StatusFailed: 1}
	e.waitFor("one synced, one orphan, one failed", func(l api.ResourceList) bool {
		for _, st := range vocab.Statuses {
			if l.Counts[st] != want[st] {
				return false
			}
		}
		return true
	})

	var list api.ResourceList
	if st := c.do("GET", "/api/v1/resources", nil, &list); st != http.StatusOK {
		t.Fatalf("GET /api/v1/resources: %d", st)
	}
	var plan api.Plan
	if st := c.do("GET", "/api/v1/plan", nil, &plan); st != http.StatusOK {
		t.Fatalf("GET /api/v1/plan: %d", st)
	}
	resp, err := c.HC.Get(c.Base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	metric := map[vocab.Status]int{}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "proxmops_resources{") {
			continue
		}
		for _, st := range vocab.Statuses {
			if strings.Contains(line, `status="`+st.String()+`"`) {
				var n int
				if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &n); err != nil {
					t.Fatalf("metric line %q: %v", line, err)
				}
				metric[st] += n
			}
		}
	}
	for _, st := range vocab.Statuses {
		if list.Counts[st] != want[st] || plan.Summary.Statuses[st] != want[st] || metric[st] != want[st] {
			t.Errorf("%s: resource list %d, plan %d, metric %d, want %d", st, list.Counts[st], plan.Summary.Statuses[st], metric[st], want[st])
		}
	}
	for _, a := range plan.Actions {
		if a.Kind == "Iso" && (a.Status != vocab.StatusFailed || !strings.Contains(a.Reason, "nosuch")) {
			t.Errorf("the Iso's plan entry %+v, want Failed with the storage named", a)
		}
	}
}
