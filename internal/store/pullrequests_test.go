package store

import (
	"context"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
)

func TestPullRequestsAreKeptUntilClosed(t *testing.T) { eachBackend(t, testPullRequests) }

func testPullRequests(t *testing.T, opt Options) {
	ctx := context.Background()
	s := open(t, opt)
	for _, pr := range []api.PullRequest{
		{Forge: "github", Number: 7, Title: "more cores", Commit: "c1", State: "success",
			Plan: &api.Plan{Revision: "c1", Summary: api.PlanSummary{Update: 1}}},
		{Forge: "github", Number: 9, Title: "new vm", Commit: "c2", State: "failure", Errors: []string{"vms/a.yaml:3:1: bad"}},
		{Forge: "github", Number: 7, Title: "more cores", Commit: "c3", State: "success"},
	} {
		if err := s.PutPullRequest(ctx, pr); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.PullRequests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Number != 9 || list[1].Commit != "c3" || list[0].Errors[0] != "vms/a.yaml:3:1: bad" {
		t.Fatalf("requests: %+v", list)
	}
	if err := s.DeletePullRequest(ctx, "github", 9); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.PullRequest(ctx, "github", 9); ok || err != nil {
		t.Fatalf("a closed request is still recorded (%v)", err)
	}
	if pr, ok, err := s.PullRequest(ctx, "github", 7); !ok || err != nil || pr.Commit != "c3" {
		t.Fatalf("request 7: %+v %v %v", pr, ok, err)
	}
}

// The forge token saved from the UI is in the encrypted records only.
func TestForgeTokenIsSavedEncrypted(t *testing.T) { eachBackend(t, testForgeToken) }

func testForgeToken(t *testing.T, opt Options) {
	ctx := context.Background()
	s := open(t, opt)
	tok := "ghp_secretsecretsecret"
	if err := s.SaveOverlay(ctx, config.Overlay{Forge: &config.ForgeOverlay{Token: &tok}}); err != nil {
		t.Fatal(err)
	}
	o, err := s.Overlay(ctx)
	if err != nil || o.Forge == nil || *o.Forge.Token != tok {
		t.Fatalf("overlay: %+v %v", o.Forge, err)
	}
	var raw []byte
	if err := s.db.QueryRowContext(ctx, `SELECT value FROM encrypted WHERE name = ?`, recForge).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if len(raw) == 0 || contains(raw, tok) {
		t.Fatal("the forge token is stored in clear")
	}
}

func contains(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if string(b[i:i+len(s)]) == s {
			return true
		}
	}
	return false
}
