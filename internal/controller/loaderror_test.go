package controller

import (
	"context"
	"regexp"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
)

// The plan of the watched branch says when its head failed to load, with
// each error on its own (file:line:column), instead of passing the last
// good revision's plan off as the head's.
func TestPlanReportsTheFailedHeadWithEachError(t *testing.T) {
	e := syncedVM(t, 0, "a", 330, 1)
	repo := e.repo
	good := e.first

	p, err := e.c.Plan(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if p.LoadError != nil {
		t.Fatalf("load error on a good head: %+v", p.LoadError)
	}

	broken := repo.Commit("broken", map[string]string{
		"vms/a.yaml": "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: a}\nspec: {coers: 2}\n",
		"vms/b.yaml": "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: b}\nspec: {memry: 2}\n",
	})
	e.c.Refresh(context.Background())
	e.waitFor("the failed head in the status", func(l api.ResourceList) bool {
		return l.LoadError != nil && l.LoadError.Revision == broken.String()
	})
	p, err = e.c.Plan(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Revision != good.String() {
		t.Fatalf("plan revision %s, want the last good %s", p.Revision, good)
	}
	if p.LoadError == nil || p.LoadError.Revision != broken.String() {
		t.Fatalf("plan does not name the failed head %s: %+v", broken, p.LoadError)
	}
	if len(p.LoadError.Errors) < 2 {
		t.Fatalf("want one item per error, got %q", p.LoadError.Errors)
	}
	pos := regexp.MustCompile(`^vms/[ab]\.yaml:\d+:\d+: `)
	for _, msg := range p.LoadError.Errors {
		if !pos.MatchString(msg) {
			t.Errorf("error without file:line:column: %q", msg)
		}
	}

	// A good head clears it.
	repo.Commit("fixed", map[string]string{"vms/a.yaml": vmManifest("a", 330, 1), "vms/b.yaml": ""})
	e.c.Refresh(context.Background())
	e.waitFor("the load error cleared", func(l api.ResourceList) bool { return l.LoadError == nil })
	if p, err = e.c.Plan(context.Background(), ""); err != nil || p.LoadError != nil {
		t.Fatalf("load error after a good head: %v %+v", err, p.LoadError)
	}
}
