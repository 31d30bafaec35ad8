package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
)

// The fake backend pins as the controller does: a known commit only.
func (b *fakeBackend) Revisions(context.Context) (api.RevisionList, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := api.RevisionList{Branch: "main", Pinned: b.pin, Revisions: []api.Revision{
		{Hash: "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", Author: "Alice", Message: "head", Current: b.pin == nil},
		{Hash: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", Author: "Bob", Message: "older", Current: b.pin != nil, Pinned: b.pin != nil},
	}}
	return l, nil
}

func (b *fakeBackend) Pin(_ context.Context, rev, by string) (api.Pin, error) {
	b.record("Pin " + rev + " by " + by)
	if !strings.HasPrefix("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", rev) || rev == "" {
		return api.Pin{}, fmt.Errorf("revision %q cannot be read: %w", rev, api.ErrInvalid)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pin = &api.Pin{Revision: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", By: by}
	return *b.pin, nil
}

func (b *fakeBackend) Unpin(_ context.Context, by string) error {
	b.record("Unpin by " + by)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pin == nil {
		return fmt.Errorf("no revision is pinned: %w", api.ErrConflict)
	}
	b.pin = nil
	return nil
}

func TestRevisionsListForViewersPinForAdminsOnly(t *testing.T) {
	e := newEnv(t)
	admin := e.admin()
	viewer := e.viewer(admin)

	var l api.RevisionList
	if err := json.Unmarshal(viewer.expect(200, "GET", "/api/v1/revisions", nil), &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Revisions) != 2 || l.Pinned != nil || !l.Revisions[0].Current {
		t.Fatalf("revisions = %+v", l)
	}
	viewer.expect(403, "POST", "/api/v1/revisions/pin", map[string]string{"revision": "aaaa"})
	viewer.expect(403, "DELETE", "/api/v1/revisions/pin", nil)
	admin.expect(400, "POST", "/api/v1/revisions/pin", map[string]string{"revision": "cccc"})
	admin.expect(409, "DELETE", "/api/v1/revisions/pin", nil)

	body := admin.expect(202, "POST", "/api/v1/revisions/pin", map[string]string{"revision": "aaaa"})
	var ans struct {
		Status string  `json:"status"`
		Pinned api.Pin `json:"pinned"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatal(err)
	}
	if ans.Pinned.Revision != strings.Repeat("a", 40) || !strings.Contains(ans.Status, "pinned to aaaaaaaaaaaa") {
		t.Fatalf("pin answer = %s", body)
	}
	if err := json.Unmarshal(viewer.expect(200, "GET", "/api/v1/revisions", nil), &l); err != nil {
		t.Fatal(err)
	}
	if l.Pinned == nil || !l.Revisions[1].Pinned {
		t.Fatalf("after pin: %+v", l)
	}
	admin.expect(202, "DELETE", "/api/v1/revisions/pin", nil)
	calls := strings.Join(e.backend.Calls(), "; ")
	if !strings.Contains(calls, "Pin aaaa by admin") || !strings.Contains(calls, "Unpin by admin") || strings.Contains(calls, "by viewer") {
		t.Fatalf("backend calls = %s", calls)
	}
}
