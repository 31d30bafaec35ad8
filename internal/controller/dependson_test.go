package controller

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/vocab"
)

// dependentVM is vmManifest waiting for the resources deps names
// (metadata.dependsOn).
func dependentVM(name string, vmid int, deps ...string) string {
	return strings.Replace(vmManifest(name, vmid, 1), "  tags: [lab]\n", "  tags: [lab]\n  dependsOn: ["+strings.Join(deps, ", ")+"]\n", 1)
}

// A web VM that depends on db (metadata.dependsOn) is not created while db,
// created and running, fails its TCP health check: the summary carries the
// wait as data and says it. Once db's port answers and db is Healthy, the
// next pass creates web.
func TestADependentGuestIsCreatedOnlyAfterItsDependencyIsHealthy(t *testing.T) {
	const ip = "127.0.75.10"
	ln, port := listenOn(t, ip)
	ln.Close() // db's service is down at first
	sim, repo := simWithRepo(t, 0, "db and web", map[string]string{
		"db.yaml": healthVM("db", 150, "  cloudInit: {ip: "+ip+"/8}\n"+
			"  healthCheck: {tcp: {port: "+strconv.Itoa(port)+"}, interval: 5s, failureThreshold: 2}\n"),
		"web.yaml": dependentVM("web", 151, "VirtualMachine/db"),
	})
	e := newEnv(t, sim, repo, "").start()
	const db, web = "VirtualMachine/db", "VirtualMachine/web"

	e.waitFor("db created, web waiting for it", func(l api.ResourceList) bool {
		d, w := find(l, db), find(l, web)
		return d != nil && d.Status == vocab.StatusSynced && d.Progress == nil && w != nil && w.Waiting != nil
	})
	e.refreshPasses(2)
	list, _ := e.c.Resources(t.Context())
	w := find(list, web)
	if w.Waiting == nil || w.Waiting.Resource != db || w.Waiting.Status != vocab.StatusSynced || w.Waiting.Health == vocab.HealthHealthy {
		t.Fatalf("web's wait = %+v, want db Synced and not Healthy", w.Waiting)
	}
	if !strings.Contains(w.Reason, "waiting for VirtualMachine/db to be healthy") || w.Status != vocab.StatusOutOfSync || w.Action != vocab.ActionCreate {
		t.Fatalf("web summary %+v", *w)
	}
	if _, ok := sim.Guest(151); ok {
		t.Fatal("web was created while db was not healthy")
	}
	wantGuest(t, sim, 150, "db was not created")

	// Over HTTP: the graph's edge and the plan's wait.
	base := e.serve(t, "")
	token, hash := auth.NewToken(auth.PrefixAPI)
	if _, err := e.st.CreateAPIToken(t.Context(), "viewer", api.RoleViewer, hash, 0); err != nil {
		t.Fatal(err)
	}
	var resources api.ResourceList
	getJSON(t, base+"/api/v1/resources", token, &resources)
	if got := find(resources, web).DependsOn; !reflect.DeepEqual(got, []api.Dependency{{Kind: "VirtualMachine", Name: "db", Relation: api.RelationDependsOn}}) {
		t.Fatalf("web's edges in GET /api/v1/resources: %+v", got)
	}
	var plan api.Plan
	getJSON(t, base+"/api/v1/plan", token, &plan)
	var planned *api.PlanAction
	for i, a := range plan.Actions {
		if a.Kind+"/"+a.Name == web {
			planned = &plan.Actions[i]
		}
	}
	if planned == nil || planned.Action != vocab.ActionCreate || planned.Waiting == nil || planned.Waiting.Resource != db || planned.Waiting.Status != vocab.StatusSynced {
		t.Fatalf("web in GET /api/v1/plan: %+v", planned)
	}

	acceptAndClose(listenAt(t, ip+":"+strconv.Itoa(port)))
	e.waitHealth(db, vocab.HealthHealthy, nil)
	e.waitHealth(web, vocab.HealthHealthy, func(s api.ResourceSummary) bool { return s.Status == vocab.StatusSynced && s.Waiting == nil })
	wantGuest(t, sim, 151, "web is Synced but not on the cluster")
}

// getJSON decodes the answer of GET url, authenticated by token.
func getJSON(t *testing.T, url, token string, into any) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatal(err)
	}
}

// Removing both manifests with prune on, the daemon deletes web before db:
// the revision that declared them orders the deletions. db is stopped, so
// its deletion alone would be over before web's (a stop, then a destroy).
func TestPruneDeletesADependentBeforeItsDependency(t *testing.T) {
	sim, repo := simWithRepo(t, 0, "db and web", map[string]string{
		"db.yaml":   strings.Replace(vmManifest("db", 152, 1), "state: running", "state: stopped", 1),
		"web.yaml":  dependentVM("web", 153, "VirtualMachine/db"),
		"keep.yaml": vmManifest("keep", 154, 1),
	})
	e := newEnv(t, sim, repo, "", func(o *Options) { o.Config.Reconcile.Prune = true }).start()
	e.waitStatus("VirtualMachine/web", vocab.StatusSynced)
	repo.Commit("without db and web", map[string]string{"db.yaml": "", "web.yaml": ""})
	if err := e.c.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.waitFor("both deleted", func(l api.ResourceList) bool {
		return find(l, "VirtualMachine/db") == nil && find(l, "VirtualMachine/web") == nil
	})
	web, db := e.lastEntry("VirtualMachine/web", api.EventDeleted), e.lastEntry("VirtualMachine/db", api.EventDeleted)
	if web == nil || db == nil || db.ID < web.ID {
		t.Fatalf("deletions: web %+v, db %+v: want web's first", web, db)
	}
}
