package pve

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/pvesim"
)

// Refusals a retry cannot change are terminal; answers that may pass by
// themselves are not, as the simulator gives them over HTTP.
func TestTerminalTellsRefusalsFromPassingFaults(t *testing.T) {
	sim := simtest.Start(t, pvesim.Options{Nodes: 1, TokenID: testToken, TokenSecret: "s3cret", StatusInterval: -1})
	if err := sim.AddGuest(pvesim.GuestSpec{VMID: 100, Node: "pve1", Config: map[string]string{"name": "a"}}); err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, strings.TrimSuffix(sim.APIURL(), "/api2/json"), func(cfg *Config) { cfg.GetRetries = -1 })
	ctx := context.Background()
	put := func(p *Params) error { return c.QemuSetConfig(ctx, "pve1", 100, p) }
	const path = "/nodes/pve1/qemu/100/config"
	for _, tc := range []struct {
		name     string
		call     func() error
		terminal bool
	}{
		{"a refused parameter (400)", func() error { return put(NewParams().Set("cores", "0")) }, true},
		{"a missing privilege (403)", func() error {
			sim.SetTokenPrivileges([]string{"VM.Audit"})
			defer sim.SetTokenPrivileges(nil)
			return put(NewParams().Set("cores", "2"))
		}, true},
		{"a 500", func() error {
			sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultError, Method: "PUT", Path: path})
			return put(NewParams().Set("cores", "2"))
		}, false},
		{"a lock timeout", func() error {
			sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultError, Method: "PUT", Path: path, Message: "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout"})
			return put(NewParams().Set("cores", "2"))
		}, false},
		{"a failed task", func() error {
			sim.FailNextTask("qmstart")
			upid, err := c.QemuStart(ctx, "pve1", 100)
			if err == nil {
				_, err = c.WaitTask(ctx, upid, nil)
			}
			return err
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil {
				t.Fatal("no error")
			}
			if IsTerminal(err) != tc.terminal {
				t.Errorf("IsTerminal(%v) = %v, want %v", err, !tc.terminal, tc.terminal)
			}
		})
	}
}
