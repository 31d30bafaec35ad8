package controller

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/proxmops/proxmops/internal/forge"
	"github.com/proxmops/proxmops/internal/forge/forgetest"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
)

// previewForge is how one forge names a request's head and its webhook.
type previewForge struct {
	name    string
	ref     string // the head ref of request 7
	event   func(action string, sha string) (http.Header, string)
	sign    func(h http.Header, secret, body string)
	success string // the forge's word for success
}

const previewSecret = "hook-secret"

func hmacHex(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

var previewForges = []previewForge{
	{name: "github", ref: "refs/pull/7/head", success: "success",
		event: func(action, sha string) (http.Header, string) {
			h := http.Header{"X-Github-Event": {"pull_request"}}
			return h, fmt.Sprintf(`{"action":%q,"number":7,"pull_request":{"number":7,"state":"open","title":"More cores","html_url":"https://github.com/you/homelab/pull/7","head":{"sha":%q,"ref":"more-cores"}},"repository":{"full_name":"you/homelab"}}`, action, sha)
		},
		sign: func(h http.Header, secret, body string) {
			h.Set("X-Hub-Signature-256", "sha256="+hmacHex(secret, body))
		}},
	{name: "gitea", ref: "refs/pull/7/head", success: "success",
		event: func(action, sha string) (http.Header, string) {
			if action == "synchronize" {
				action = "synchronized" // Gitea's word
			}
			h := http.Header{"X-Gitea-Event": {"pull_request"}}
			return h, fmt.Sprintf(`{"action":%q,"number":7,"pull_request":{"number":7,"state":"open","title":"More cores","html_url":"https://git.example/you/homelab/pulls/7","head":{"sha":%q,"ref":"more-cores"}},"repository":{"full_name":"you/homelab"}}`, action, sha)
		},
		sign: func(h http.Header, secret, body string) { h.Set("X-Gitea-Signature", hmacHex(secret, body)) }},
	{name: "gitlab", ref: "refs/merge-requests/7/head", success: "success",
		event: func(action, sha string) (http.Header, string) {
			oldrev := ""
			switch action {
			case "opened":
				action = "open"
			case "synchronize":
				action, oldrev = "update", `"oldrev":"1111111111111111111111111111111111111111",`
			case "closed":
				action = "close"
			}
			h := http.Header{"X-Gitlab-Event": {"Merge Request Hook"}}
			return h, fmt.Sprintf(`{"object_kind":"merge_request","project":{"path_with_namespace":"you/homelab"},"object_attributes":{"iid":7,"title":"More cores","url":"https://gitlab.example/you/homelab/-/merge_requests/7","action":%q,%s"state":"opened","last_commit":{"id":%q}}}`, action, oldrev, sha)
		},
		sign: func(h http.Header, secret, _ string) { h.Set("X-Gitlab-Token", secret) }},
}

// TestPullRequestPreviewOnEachForge drives the daemon's webhook over real
// HTTP, with a real controller on pvesim and a recording stand-in of each
// forge's API: a signed "opened" delivery leads to one comment with the
// plan and one commit status; a push edits that comment (never a second
// one) and sets a new status; a wrong signature is refused and changes
// nothing; a closed request is no longer tracked; and nothing is written
// to Proxmox throughout.
func TestPullRequestPreviewOnEachForge(t *testing.T) {
	for _, f := range previewForges {
		t.Run(f.name, func(t *testing.T) { testPreview(t, f) })
	}
}

func testPreview(t *testing.T, f previewForge) {
	e := syncedVM(t, 0.2, "a", 420, 1)
	sim, repo := e.sim, e.repo
	base := e.first

	fs := forgetest.Start(t, f.name, "forge-token")
	fs.RateLimitOnce = f.name != "gitea" // GitHub's secondary limit (403), GitLab's 429
	fs.AddComment(7, "LGTM, someone else's comment")
	url := startPreviewServer(t, e, f.name, fs.URL)
	push := func(cores int) plumbing.Hash {
		h := repo.Commit("cores", map[string]string{"vms/a.yaml": vmManifest("a", 420, cores)})
		repo.ResetHard(base) // the request's head, not the watched branch
		if err := repo.Git.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(f.ref), h)); err != nil {
			t.Fatal(err)
		}
		return h
	}
	before := writes(sim)

	head := push(2)
	if code := deliver(t, url, f, "opened", head.String(), "d1", previewSecret); code != http.StatusAccepted {
		t.Fatalf("opened: %d", code)
	}
	testwait.For(t, "one status", 30*time.Second, func() bool { return len(fs.Statuses()) == 1 })
	mine := ownComments(fs)
	if len(mine) != 1 || len(fs.Comments()) != 2 {
		t.Fatalf("comments after the first delivery: %+v", fs.Comments())
	}
	for _, want := range []string{"~ VirtualMachine/a", "cores: 1 -> 2", "**Plan:** 0 to create, 1 to update"} {
		if !strings.Contains(mine[0].Body, want) {
			t.Fatalf("the comment lacks %q:\n%s", want, mine[0].Body)
		}
	}
	if limited := countLimited(fs); fs.RateLimitOnce && limited != 1 {
		t.Fatalf("%d rate-limited answers, want the one asked for, then a retry", limited)
	}
	t.Logf("comment:\n%s", mine[0].Body)
	st := fs.Statuses()[0]
	if st.SHA != head.String() || st.Body["state"] != f.success || st.Body["description"] != "0 to create, 1 to update, 0 to reboot, 0 to delete" ||
		st.Body["target_url"] != "http://proxmops.test/previews?request=7" {
		t.Fatalf("status: %+v", st)
	}
	if name := st.Body["context"]; f.name == "gitlab" {
		name = st.Body["name"]
		if name != forge.StatusContext {
			t.Fatalf("status name %v", name)
		}
	} else if name != forge.StatusContext {
		t.Fatalf("status context %v", name)
	}
	testwait.For(t, "the request recorded", 30*time.Second, func() bool {
		prs, _ := e.st.PullRequests(context.Background())
		return len(prs) == 1 && prs[0].Planned == head.String() && prs[0].Plan != nil && prs[0].State == "success"
	})

	// A push: the same comment is edited.
	head2 := push(3)
	if code := deliver(t, url, f, "synchronize", head2.String(), "d2", previewSecret); code != http.StatusAccepted {
		t.Fatalf("synchronize: %d", code)
	}
	testwait.For(t, "a second status", 30*time.Second, func() bool { return len(fs.Statuses()) == 2 })
	again := ownComments(fs)
	if len(again) != 1 || again[0].ID != mine[0].ID || !strings.Contains(again[0].Body, "cores: 1 -> 3") {
		t.Fatalf("after a push, proxmops' comments: %+v", again)
	}
	if fs.Statuses()[1].SHA != head2.String() {
		t.Fatalf("second status on %s, want %s", fs.Statuses()[1].SHA, head2)
	}
	if n := countCalls(fs, "POST", "comments", "notes"); n != 1 {
		t.Fatalf("%d comments created, want 1 (then edited)", n)
	}

	// A wrong signature: refused, nothing asked of the forge.
	calls := len(fs.Calls())
	if code := deliver(t, url, f, "synchronize", head2.String(), "d3", "wrong-secret"); code != http.StatusUnauthorized {
		t.Fatalf("bad signature: %d", code)
	}

	// Closed: no longer tracked.
	if code := deliver(t, url, f, "closed", head2.String(), "d4", previewSecret); code != http.StatusAccepted {
		t.Fatalf("closed: %d", code)
	}
	testwait.For(t, "the closed request forgotten", 30*time.Second, func() bool {
		prs, _ := e.st.PullRequests(context.Background())
		return len(prs) == 0
	})
	if len(fs.Calls()) != calls {
		t.Fatalf("the forge was called after a refused or closing delivery: %+v", fs.Calls()[calls:])
	}
	if n := writes(sim); n != before {
		t.Fatalf("previews wrote to Proxmox: %d write requests", n-before)
	}
}

// startPreviewServer serves the daemon's API for e's controller with
// previews on forge, over real HTTP.
func startPreviewServer(t *testing.T, e *env, forgeName, apiURL string) string {
	return startPreviewServerWith(t, e, forgeName, apiURL, "forge-token", io.Discard)
}

func startPreviewServerWith(t *testing.T, e *env, forgeName, apiURL, token string, logs io.Writer) string {
	cfg := e.c.opts.Config.Clone()
	cfg.Server.WebhookSecret = previewSecret
	cfg.Forge.Type, cfg.Forge.APIURL, cfg.Forge.Repository = forgeName, apiURL, "you/homelab"
	cfg.Forge.Token, cfg.Forge.PullRequestPreviews, cfg.Server.PublicURL = token, true, "http://proxmops.test"
	o := e.serverOptions(cfg)
	o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return serveHTTP(t, o)
}

func deliver(t *testing.T, url string, f previewForge, action, sha, id, secret string) int {
	t.Helper()
	h, body := f.event(action, sha)
	f.sign(h, secret, body)
	r, _ := http.NewRequest("POST", url+"/api/v1/webhooks/"+f.name, strings.NewReader(body))
	for k, v := range h {
		r.Header[k] = v
	}
	r.Header.Set("X-GitHub-Delivery", id)
	r.Header.Set("X-Gitea-Delivery", id)
	r.Header.Set("X-Gitlab-Event-UUID", id)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode
}

func ownComments(fs *forgetest.Server) []forgetest.Comment {
	var out []forgetest.Comment
	for _, c := range fs.Comments() {
		if strings.HasPrefix(c.Body, forge.Marker) {
			out = append(out, c)
		}
	}
	return out
}

func countCalls(fs *forgetest.Server, method string, suffixes ...string) int {
	n := 0
	for _, c := range fs.Calls() {
		for _, s := range suffixes {
			if c.Method == method && strings.HasSuffix(c.Path, "/"+s) && c.Status < 300 {
				n++
			}
		}
	}
	return n
}

func countLimited(fs *forgetest.Server) int {
	n := 0
	for _, c := range fs.Calls() {
		if c.Status == http.StatusTooManyRequests || c.Status == http.StatusForbidden {
			n++
		}
	}
	return n
}

// TestPullRequestPreviewFailsOnWhatCannotBeMerged: a request whose
// manifests do not load gets a failure status naming the first error with
// its file and line, and a comment listing the errors; one that declares a
// guest where someone else's VM is gets a failure naming the conflict.
func TestPullRequestPreviewFailsOnWhatCannotBeMerged(t *testing.T) {
	sim := startSim(t, 0.2, pvesimGuest(441, "legacy"))
	repo := gittest.New(t)
	base := repo.Commit("vm", map[string]string{"vms/a.yaml": vmManifest("a", 420, 1)})
	e := newEnv(t, sim, repo, "").start()
	e.waitStatus("VirtualMachine/a", vocab.StatusSynced)
	fs := forgetest.Start(t, "github", "forge-token")
	url := startPreviewServer(t, e, "github", fs.URL)
	f := previewForges[0]
	before := writes(sim)

	for i, c := range []struct {
		files       map[string]string
		description string // its start
		comment     []string
	}{
		{map[string]string{"vms/a.yaml": strings.Replace(vmManifest("a", 420, 1), "cores: 1", "cores: lots", 1)},
			"vms/a.yaml:", []string{"**The manifests do not load:**", "vms/a.yaml:"}},
		{map[string]string{"vms/b.yaml": vmManifest("b", 441, 1)},
			"VirtualMachine/b: ", []string{"#### Conflicts", "`VirtualMachine/b`"}},
	} {
		n := int64(i + 1)
		h := repo.Commit("change", c.files)
		repo.ResetHard(base)
		ref := plumbing.ReferenceName(fmt.Sprintf("refs/pull/%d/head", n))
		if err := repo.Git.Storer.SetReference(plumbing.NewHashReference(ref, h)); err != nil {
			t.Fatal(err)
		}
		hdr, body := f.event("opened", h.String())
		body = strings.ReplaceAll(body, `"number":7`, fmt.Sprintf(`"number":%d`, n))
		r, _ := http.NewRequest("POST", url+"/api/v1/webhooks/github", strings.NewReader(body))
		r.Header = hdr
		f.sign(r.Header, previewSecret, body)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("request %d: %d", n, resp.StatusCode)
		}
		testwait.For(t, "its status", 30*time.Second, func() bool { return len(fs.Statuses()) == i+1 })
		st := fs.Statuses()[i]
		desc, _ := st.Body["description"].(string)
		if st.Body["state"] != "failure" || !strings.HasPrefix(desc, c.description) || len([]rune(desc)) > 140 {
			t.Fatalf("request %d: status %+v", n, st.Body)
		}
		var mine string
		for _, cm := range ownComments(fs) {
			if cm.Number == n {
				mine = cm.Body
			}
		}
		for _, want := range c.comment {
			if !strings.Contains(mine, want) {
				t.Fatalf("request %d: the comment lacks %q:\n%s", n, want, mine)
			}
		}
	}
	if n := writes(sim); n != before {
		t.Fatalf("previews wrote to Proxmox: %d write requests", n-before)
	}
}

// TestRefusedForgeCallIsShownNeverTheToken: a token the forge refuses
// leaves the request recorded with the forge's answer, and the token is in
// no log line.
func TestRefusedForgeCallIsShownNeverTheToken(t *testing.T) {
	e := syncedVM(t, 0.2, "a", 420, 1)
	repo := e.repo
	base := e.first
	fs := forgetest.Start(t, "gitlab", "the-right-token")
	logs := &testwait.Buffer{}
	url := startPreviewServerWith(t, e, "gitlab", fs.URL, "glpat-wrong-token-1234", logs)
	h := repo.Commit("cores", map[string]string{"vms/a.yaml": vmManifest("a", 420, 2)})
	repo.ResetHard(base)
	if err := repo.Git.Storer.SetReference(plumbing.NewHashReference("refs/merge-requests/7/head", h)); err != nil {
		t.Fatal(err)
	}
	if code := deliver(t, url, previewForges[2], "opened", h.String(), "d1", previewSecret); code != http.StatusAccepted {
		t.Fatalf("opened: %d", code)
	}
	testwait.For(t, "the refusal recorded", 30*time.Second, func() bool {
		prs, _ := e.st.PullRequests(context.Background())
		return len(prs) == 1 && len(prs[0].Errors) > 0
	})
	prs, _ := e.st.PullRequests(context.Background())
	if !strings.Contains(strings.Join(prs[0].Errors, " "), "401") || prs[0].Plan == nil {
		t.Fatalf("recorded: %+v", prs[0])
	}
	if len(fs.Comments()) != 0 || len(fs.Statuses()) != 0 {
		t.Fatal("the forge took a call with a wrong token")
	}
	if strings.Contains(logs.String(), "glpat-wrong-token-1234") || !strings.Contains(logs.String(), "the forge refused the plan") {
		t.Fatalf("logs:\n%s", logs.String())
	}
}
