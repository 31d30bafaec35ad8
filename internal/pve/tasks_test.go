package pve

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/pvesim"
)

// Waiting for a task of a type seen before polls once, when such a task
// has usually ended, instead of polling from the start at a growing
// interval: 20 starts and stops of a VM cost at most 30 status reads.
func TestWaitTaskPollsATaskOfAKnownTypeOnce(t *testing.T) {
	sim := simtest.Start(t, pvesim.Options{Nodes: 1, TokenID: testToken, TokenSecret: "s3cret", TaskSpeed: 0.01, StatusInterval: -1})
	c := newTestClient(t, strings.TrimSuffix(sim.APIURL(), "/api2/json"), func(cfg *Config) {
		cfg.TaskPollMin, cfg.TaskPollMax = 2*time.Millisecond, 200*time.Millisecond
	})
	ctx := context.Background()
	must := taskDone(t, c)
	must(c.QemuCreate(ctx, "pve1", 100, NewParams().Set("scsi0", "local-lvm:1")))
	// One round to learn how long a start and a stop take.
	must(c.QemuStart(ctx, "pve1", 100))
	must(c.QemuStop(ctx, "pve1", 100))
	sim.ResetRequests()
	for range 10 {
		must(c.QemuStart(ctx, "pve1", 100))
		must(c.QemuStop(ctx, "pve1", 100))
	}
	if n := sim.RequestCountFor("GET", "/nodes/{node}/tasks/{upid}/status"); n > 30 {
		t.Errorf("%d task status reads for 20 tasks, want at most 30", n)
	}
}
