package controller

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/vocab"
)

// TestReplayedWebhookCostsOnePass posts one signed GitHub delivery 50 times
// over real HTTP to the daemon's server wired to a real controller: the
// first pulls the new commit and makes one pass, the 49 replays none.
func TestReplayedWebhookCostsOnePass(t *testing.T) {
	e := syncedVM(t, 0.2, "a", 420, 1)
	sim, repo := e.sim, e.repo

	base := e.serve(t, "hook-secret")

	// Publish hands each event to the subscription's buffer before it
	// returns, so draining it after the fact counts every pass.
	sub, _, _ := e.hub.Subscribe("")
	defer e.hub.Unsubscribe(sub)
	passes := 0
	drain := func() {
		for {
			select {
			case ev, ok := <-sub.C:
				if !ok {
					return // lagged: checked below
				}
				if ev.Type == api.SSEPass {
					passes++
				}
			default:
				return
			}
		}
	}

	repo.Commit("more cores", map[string]string{"vms/a.yaml": vmManifest("a", 420, 2)})
	body := `{"ref":"refs/heads/main"}`
	m := hmac.New(sha256.New, []byte("hook-secret"))
	m.Write([]byte(body))
	codes := map[int]int{}
	for range 50 {
		r, _ := http.NewRequest("POST", base+"/api/v1/webhooks/github", strings.NewReader(body))
		r.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
		r.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	// One accepted; the replays answered "already handled" until the
	// source's burst was spent, then 429.
	if codes[202] != 1 || codes[200]+codes[429] != 49 || codes[200] == 0 {
		t.Fatalf("50 replays: %v", codes)
	}
	// The one accepted delivery pulled the commit and the VM followed.
	e.waitFor("cores 2 applied", func(api.ResourceList) bool { return guestCores(t, sim, 420) == "2" })
	e.waitStatus("VirtualMachine/a", vocab.StatusSynced)
	// Nothing more is asked of the loop (the fake clock never reaches the
	// interval pull), so the passes counted are all the replays caused.
	e.waitFor("the loop idle", func(api.ResourceList) bool {
		e.c.reqMu.Lock()
		idle := !e.c.req.immediate() && e.c.rescanAt.IsZero()
		e.c.reqMu.Unlock()
		drain()
		return idle && len(e.c.dispatcher.Active()) == 0 && passes >= 1
	})
	drain()
	if sub.Lagged() {
		t.Fatal("the subscription lagged: passes were not all counted")
	}
	// The pull's pass, then one re-scan after each action it caused
	// (MinPassGap is off here): the cores change of the running VM is
	// written and then needs its reboot, which may come as a second action
	// depending on when the re-scan reads the pending change. Without
	// de-duplication every replay would pull and pass again.
	if n := passes; n > 3 {
		t.Fatalf("%d passes after 50 replays of one delivery, want the pull's pass and a re-scan after each of its actions", n)
	}
}
