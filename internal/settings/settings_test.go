package settings

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/config"
)

func TestPatchUpdateAndDocument(t *testing.T) {
	saved, err := ParsePatch([]byte(`{"cluster":{"tokenSecret":"s1","endpoint":"https://pve:8006"},"source":{"token":"g1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	patch, err := ParsePatch([]byte(`{"cluster":{"tokenSecret":"set"},"source":{"token":"","sshKey":"not set","path":"infra"},"reconcile":{"prune":false}}`))
	if err != nil {
		t.Fatal(err)
	}
	if patch.Cluster.TokenSecret != nil || patch.Source.SSHKey != nil {
		t.Fatal("secret markers were taken as values")
	}
	got, err := Update(saved, patch)
	if err != nil {
		t.Fatal(err)
	}
	if *got.Cluster.TokenSecret != "s1" || *got.Source.Token != "" || *got.Source.Path != "infra" ||
		*got.Cluster.Endpoint != "https://pve:8006" || got.Reconcile.Prune == nil || *got.Reconcile.Prune {
		t.Fatalf("update: %+v %+v %+v", got.Cluster, got.Source, got.Reconcile)
	}
	if f := Fields(patch); !reflect.DeepEqual(f, []string{"reconcile.prune", "source.path", "source.token"}) {
		t.Fatalf("fields: %v", f)
	}
	eff, _, err := config.Defaults().WithOverlay(got)
	if err != nil {
		t.Fatal(err)
	}
	doc := Document(eff, nil)
	if doc.Cluster.TokenSecret != "set" || doc.Source.Token != "not set" || doc.Reconcile.Interval != "60s" ||
		!strings.HasSuffix(doc.Cluster.Endpoint, "/api2/json") {
		t.Fatalf("document: %+v", doc)
	}
	if _, err := ParsePatch([]byte(`{"cluster":{"tokenSecrt":"x"}}`)); err == nil || !strings.Contains(err.Error(), "tokenSecret") {
		t.Fatalf("unknown key: %v", err)
	}
	if FormatDuration(1500*time.Millisecond) != "1.5s" {
		t.Fatal(FormatDuration(1500 * time.Millisecond))
	}
}

// The forge token saved from the UI is shown as "set" only, and "set" sent
// back keeps it.
func TestForgeTokenIsASecret(t *testing.T) {
	saved, err := ParsePatch([]byte(`{"forge":{"type":"gitea","apiURL":"https://git.example","repository":"you/homelab","token":"tok-1","pullRequestPreviews":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	patch, err := ParsePatch([]byte(`{"forge":{"token":"set","repository":"you/lab"}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Update(saved, patch)
	if err != nil {
		t.Fatal(err)
	}
	eff, _, err := config.Defaults().WithOverlay(got)
	if err != nil {
		t.Fatal(err)
	}
	if eff.Forge.Token != "tok-1" || eff.Forge.Repository != "you/lab" || !eff.Forge.PullRequestPreviews {
		t.Fatalf("forge: %+v", eff.Forge)
	}
	doc := Document(eff, nil)
	if doc.Forge.Token != "set" || doc.Forge.Type != "gitea" {
		t.Fatalf("document: %+v", doc.Forge)
	}
	if r := eff.Redacted(); r.Forge.Token != "(set)" {
		t.Fatalf("redacted: %q", r.Forge.Token)
	}
	// Previews on without a token are refused, naming the key.
	if _, _, err := config.Defaults().WithOverlay(config.Overlay{Forge: &config.ForgeOverlay{Type: ptr("github"), Repository: ptr("a/b"), PullRequestPreviews: ptr(true)}}); err == nil || !strings.Contains(err.Error(), "forge.token") {
		t.Fatalf("no token: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
