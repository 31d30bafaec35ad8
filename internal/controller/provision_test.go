package controller

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// A container whose provisioning command fails is Failed with the command,
// its exit status and its output, in its history and its reason; the
// controller does not run it again at once (the re-scan after the failure
// waits for the backoff) but only when the retry time has come.
func TestFailedProvisioningIsRetriedWithBackoff(t *testing.T) {
	const ip = "127.0.72.10"
	port := simtest.GuestSSHPort(t, ip)
	trees := filepath.Join(t.TempDir(), "guests")
	sim := simtest.Start(t, pvesim.Options{Nodes: 3, TokenID: simTokenID, TokenSecret: simTokenSecret, TaskSpeed: 0.01, Seed: 1,
		GuestSSHPort: port, GuestRoot: trees})
	if err := sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: testvm.CTTemplate, Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	repo := gittest.New(t)
	repo.Commit("broker", map[string]string{"broker.yaml": testvm.CT{Name: "broker", Node: "pve1", VMID: 330, IP: ip, Spec: "  provision:\n    port: " + strconv.Itoa(port) + `
    commands:
      - echo run >> /root/runs
      - echo "no broker.conf" >&2; exit 7
`}.YAML()})
	e := newEnv(t, sim, repo, "").start()
	const key = "Container/broker"
	sum := e.waitStatus(key, vocab.StatusFailed)
	if !strings.Contains(sum.Reason, "exit status 7") || !strings.Contains(sum.Reason, "no broker.conf") {
		t.Fatalf("reason %q", sum.Reason)
	}
	h := e.history(key)
	last := h[len(h)-1]
	if !strings.Contains(last.Message, "command 2/2") || !strings.Contains(last.Message, "exit status 7") || !strings.Contains(last.Message, "no broker.conf") {
		t.Fatalf("history %+v", h)
	}
	runs := func() int {
		b, _ := os.ReadFile(filepath.Join(trees, "330", "root", "runs"))
		return strings.Count(string(b), "run\n")
	}
	// The re-scan after the failure and the passes before the retry time
	// leave it alone: a pass that started after the failure was recorded
	// submits nothing for it (a retry would show it Progressing, and run
	// the commands again).
	e.waitPasses(2)
	l, _ := e.c.Resources(t.Context())
	if r := find(l, key); r == nil || r.Status != vocab.StatusFailed || r.Progress != nil {
		t.Fatalf("a pass before the retry time acted: %+v", r)
	}
	if n := runs(); n != 1 {
		t.Fatalf("provisioning ran %d times before the retry time", n)
	}
	// Once the backoff (half an interval, then doubling) has passed, a
	// pass runs it again (now an update: the container exists); the same
	// failure again is not written to the history twice.
	retry := func(want int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for runs() < want {
			if time.Now().After(deadline) {
				t.Fatalf("not retried after the backoff; runs %d", runs())
			}
			e.clock.Advance(10 * time.Second) // the interval's pass comes, the retry time passes
			time.Sleep(50 * time.Millisecond)
		}
		e.waitStatus(key, vocab.StatusFailed)
	}
	retry(2)
	h = e.history(key)
	if last := h[len(h)-1].Message; !strings.HasPrefix(last, "update failed: provisioning failed at command 2/2") {
		t.Fatalf("history %+v", h)
	}
	retry(3)
	if got := len(e.history(key)); got != len(h) {
		t.Fatalf("history grew from %d to %d entries for the same failure: %+v", len(h), got, e.history(key))
	}
}
