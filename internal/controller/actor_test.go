package controller

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/vocab"
)

// serve runs the daemon's HTTP server on loopback in front of e's
// controller, with secret as the webhook secret, and returns its base URL.
func (e *env) serve(t *testing.T, secret string) string {
	t.Helper()
	cfg := e.c.opts.Config.Clone()
	cfg.Server.WebhookSecret = secret
	return serveHTTP(t, e.serverOptions(cfg))
}

// lastEntry is the newest history entry of key with event ev.
func (e *env) lastEntry(key string, ev api.HistoryEvent) *api.HistoryEntry {
	h := e.history(key)
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Event == ev {
			return &h[i]
		}
	}
	return nil
}

// TestHistoryNamesWhoStartedEachAction drives a controller through its
// HTTP server: the pass creates a guest on its own, an API token syncs a
// guest whose policy is manual, and a signed webhook's pull applies a
// change; each history entry names that actor, and so does the API.
func TestHistoryNamesWhoStartedEachAction(t *testing.T) {
	sim, repo := simWithRepo(t, 0.2, "two vms", map[string]string{
		"vms/a.yaml": vmManifest("a", 450, 1),
		"vms/b.yaml": vmManifest("b", 451, 1, "proxmops.dev/sync=manual"),
	})
	e := newEnv(t, sim, repo, "").start()
	base := e.serve(t, "hook-secret")

	// The pass, on its own.
	e.waitStatus("VirtualMachine/a", vocab.StatusSynced)
	if c := e.lastEntry("VirtualMachine/a", api.EventCreated); c == nil || c.Actor == nil || *c.Actor != api.PassActor {
		t.Fatalf("a's creation: %+v, want the pass as its actor", c)
	}

	// An API token syncs b, which only a person's sync applies.
	token, hash := auth.NewToken(auth.PrefixAPI)
	if _, err := e.st.CreateAPIToken(context.Background(), "ci-deploy", api.RoleAdmin, hash, 0); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", base+"/api/v1/resources/VirtualMachine/b/sync", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("sync b with the token: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	e.waitStatus("VirtualMachine/b", vocab.StatusSynced)
	tokenActor := api.Actor{Kind: api.ActorToken, Name: "ci-deploy"}
	if c := e.lastEntry("VirtualMachine/b", api.EventCreated); c == nil || c.Actor == nil || *c.Actor != tokenActor {
		t.Fatalf("b's creation: %+v, want the token ci-deploy as its actor", c)
	}

	// A webhook delivery pulls a change to a, which the pass it asked for applies.
	more := repo.Commit("more cores", map[string]string{"vms/a.yaml": vmManifest("a", 450, 2)}).String()
	body := `{"ref":"refs/heads/main"}`
	m := hmac.New(sha256.New, []byte("hook-secret"))
	m.Write([]byte(body))
	req, _ = http.NewRequest("POST", base+"/api/v1/webhooks/github", strings.NewReader(body))
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
	req.Header.Set("X-GitHub-Delivery", "9a1b7c3e-5d2f-11ef-8a4e-0242ac120002")
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	e.waitFor("cores 2 applied", func(api.ResourceList) bool { return guestCores(t, sim, 450) == "2" })
	hookActor := api.Actor{Kind: api.ActorWebhook, Name: "github", Delivery: "9a1b7c3e-5d2f-11ef-8a4e-0242ac120002"}
	// The first change at that commit is the webhook's (a reboot a re-scan
	// adds after it is the pass's).
	var applied *api.HistoryEntry
	e.waitFor("a's change recorded", func(api.ResourceList) bool {
		for _, h := range e.history("VirtualMachine/a") {
			if h.Event == api.EventApplied && h.Commit == more {
				applied = &h
				return true
			}
		}
		return false
	})
	if applied.Actor == nil || *applied.Actor != hookActor {
		t.Fatalf("a's change: %+v, want the webhook delivery as its actor", applied.Actor)
	}

	// The API shows the actor as data.
	req, _ = http.NewRequest("GET", base+"/api/v1/resources/VirtualMachine/b", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d struct {
		History []struct {
			Event api.HistoryEvent  `json:"event"`
			Actor map[string]string `json:"actor"`
		} `json:"history"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, h := range d.History {
		found = found || h.Event == api.EventCreated && h.Actor["kind"] == "token" && h.Actor["name"] == "ci-deploy"
	}
	if !found {
		t.Fatalf("GET the resource: history %+v has no creation by the token ci-deploy", d.History)
	}
}
