package controller

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
)

// A pass event names its commit's subject, as the status list does: a
// browser that learns a new revision (a push, a pin) from the event shows
// the commit's message beside its hash instead of the hash alone.
func TestPassEventsNameTheirCommitsMessage(t *testing.T) {
	e := syncedVM(t, 0, "a", 433, 1)
	repo := e.repo
	events, _ := serve(t, e, nil).eventsFromSnapshot(t)

	next := repo.Commit("a: two cores", map[string]string{"vms/a.yaml": vmManifest("a", 433, 2)})
	e.c.Refresh(context.Background())
	var ev api.PassEvent
	nextEvent(t, events, func(typ, data string) bool {
		return typ == api.SSEPass && json.Unmarshal([]byte(data), &ev) == nil && ev.Revision == next.String()
	})
	if ev.RevisionMessage != "a: two cores" {
		t.Fatalf("pass event at %s names the message %q, want %q", next, ev.RevisionMessage, "a: two cores")
	}
	list, err := e.c.Resources(context.Background())
	if err != nil || list.RevisionMessage != ev.RevisionMessage {
		t.Fatalf("the status list says %q, the pass event %q (%v)", list.RevisionMessage, ev.RevisionMessage, err)
	}
}
