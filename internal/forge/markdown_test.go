package forge

import (
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/vocab"
)

func TestCommentShowsEachActionTerraformStyle(t *testing.T) {
	p := &api.Plan{Revision: "0123456789abcdef", Summary: api.PlanSummary{Create: 1, Update: 1, Delete: 1,
		Statuses: map[vocab.Status]int{vocab.StatusOutOfSync: 3, vocab.StatusFailed: 1, vocab.StatusSynced: 2}},
		Actions: []api.PlanAction{
			{Kind: "VirtualMachine", Name: "web", Node: "pve1", VMID: 120, Action: vocab.ActionCreate, Reason: "not on the cluster",
				Changes: []vocab.Change{{Field: "cores", To: "2"}}},
			{Kind: "VirtualMachine", Name: "db", Node: "pve1", VMID: 121, Action: vocab.ActionUpdate,
				Changes: []vocab.Change{{Field: "memory", From: "1024", To: "2048"}}},
			{Kind: "Container", Name: "old", Action: vocab.ActionDelete},
			{Kind: "Iso", Name: "debian", Action: vocab.ActionCreate, Status: vocab.StatusFailed,
				Reason: "the API token lacks Datastore.AllocateTemplate on /storage/local, needed to download"},
			{Kind: "VirtualMachine", Name: "same", Action: vocab.ActionNone, Status: vocab.StatusSynced},
		}}
	o := outcome{plan: p}
	got := render(o, p.Revision, "http://ui/previews?request=3")
	for _, want := range []string{
		Marker + "\n", "`0123456789ab`",
		"+ VirtualMachine/web (pve1, vmid 120): create\n", "+     cores: 2\n",
		"~ VirtualMachine/db (pve1, vmid 121): update\n", "~     memory: 1024 -> 2048\n",
		"- Container/old: delete\n",
		"#### Missing privileges\n\n- `Iso/debian`: the API token lacks Datastore.AllocateTemplate",
		"**Plan:** 1 to create, 1 to update, 0 to reboot, 1 to delete.",
		"(http://ui/previews?request=3)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the comment lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "same") {
		t.Errorf("a resource in sync is listed:\n%s", got)
	}
	if o.state() != "failure" || !strings.HasPrefix(o.description(), "Iso/debian: the API token lacks") {
		t.Errorf("state %s, description %q", o.state(), o.description())
	}
}

func TestStatusDescriptionFitsGitHub(t *testing.T) {
	for _, o := range []outcome{
		{loadErrors: []string{"vms/a.yaml:3:1: " + strings.Repeat("é", 300)}},
		{err: "cluster home: " + strings.Repeat("x", 300) + "\nsecond line"},
		{plan: &api.Plan{Summary: api.PlanSummary{Create: 12345}}},
	} {
		if d := o.description(); len([]rune(d)) > 140 || strings.Contains(d, "\n") || d == "" {
			t.Errorf("description %q (%d runes)", d, len([]rune(d)))
		}
	}
}

func TestCommentCannotBreakOutOfItsMarkdown(t *testing.T) {
	// In a code span HTML shows as text; a backtick would end the span.
	got := render(outcome{loadErrors: []string{"a.yaml:1:1: `x` <script>\n```"}}, "c", "")
	if strings.Contains(got, "```") || !strings.Contains(got, "- `a.yaml:1:1: 'x' <script> '''`\n") {
		t.Fatalf("unsafe comment:\n%s", got)
	}
	got = render(outcome{err: "<img src=x> ```"}, "c", "")
	if strings.Contains(got, "<img") || strings.Contains(got, "```") {
		t.Fatalf("unsafe comment:\n%s", got)
	}
}

func TestLongPlansAreCutWithACount(t *testing.T) {
	p := &api.Plan{}
	for i := range 3000 {
		p.Actions = append(p.Actions, api.PlanAction{Kind: "VirtualMachine", Name: strings.Repeat("n", 20) + string(rune('a'+i%26)),
			Action: vocab.ActionUpdate, Changes: []vocab.Change{{Field: "description", From: strings.Repeat("a", 10), To: strings.Repeat("b", 10)}}})
	}
	got := render(outcome{plan: p}, "c", "")
	if len(got) > maxCommentBytes || !strings.Contains(got, "more (the dashboard lists them all)") {
		t.Fatalf("%d bytes", len(got))
	}
}
