package leader

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/provision"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/pvesim"
)

// The guest's loopback address in this test.
const provIP = "127.0.72.10"

// Provisioning over SSH runs each step under the term's check: a step
// holds the term while it runs, so the next term begins only after it
// ended, and the step after it, once the term ended, is refused without
// reaching the guest.
func TestProvisioningRunsNoStepAfterItsTerm(t *testing.T) {
	var seq atomic.Int64
	dbURL, _, a, first, g := guardedLead(t, &seq, 10*time.Second)
	b := following(t, &seq, dbURL, "b", 10*time.Second, 20*time.Second)

	keys := provision.NewKeys(&provision.MemStore{}, "")
	tree, port := provisionedCT(t, keys, 300)
	// The third step (the last command) asks for its check once b leads:
	// a check asked for earlier may pass, the term still leading
	// (PostgreSQL lets a share lock in while b's update waits).
	var steps atomic.Int32
	fence := func(ctx context.Context, step func() error) error {
		if steps.Add(1) == 3 {
			testwait.Until(30*time.Second, func() bool { return len(b.allTerms()) > 0 })
		}
		return g.Do(ctx, step)
	}
	runner := &provision.Runner{Keys: keys, ConnectWait: 20 * time.Second, Fence: fence}
	in := &provision.Inputs{
		Files: []provision.File{{Path: "/etc/app.conf", Data: []byte("one\n")}},
		Commands: []string{
			// the second step says it runs (so under its check), and runs
			// until the test lets it end
			"echo > /running; while [ ! -e /release ]; do sleep 0.05; done; echo two > /two",
			"echo three > /three",
		},
	}
	done := make(chan error, 1)
	go func() {
		_, err := runner.Run(WithTerm(context.Background(), first.Term),
			provision.Target{ID: "Container/app", VMID: 300, Host: provIP, Port: port}, in, nil)
		done <- err
	}()
	// Not just the file step: the command must hold its check before the
	// lock is free, or b's term may rightly begin before it asks.
	testwait.For(t, "the running command", 30*time.Second, func() bool { _, err := os.Stat(filepath.Join(tree, "running")); return err == nil })
	a.stop() // the lock is free: b takes it, and its term waits for the running step

	takeoverWaits(t, dbURL, b, "a's running step", 30*time.Second, "b's term began while a's provisioning command still ran")
	released := seq.Add(1)
	if err := os.WriteFile(filepath.Join(tree, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := <-done
	var deposed *DeposedError
	var step *provision.StepError
	if !errors.As(err, &deposed) || !errors.As(err, &step) || step.Step != "command 2/2 `echo three > /three`" {
		t.Fatalf("the provisioning: %v, want its last command refused: the term ended", err)
	}
	if _, err := os.Stat(filepath.Join(tree, "two")); err != nil {
		t.Fatalf("the step that held the term did not complete: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tree, "three")); !os.IsNotExist(err) {
		t.Fatalf("a step of the ended term ran on the guest: %v", err)
	}
	waitLead(t, b, 30*time.Second)
	if bt := b.allTerms(); bt[0].start < released {
		t.Fatalf("b's term began at %d, before a's running step was let end at %d", bt[0].start, released)
	}
}

// provisionedCT is a running container vmid, reached over SSH at provIP
// with keys' key: its tree on the host and its SSH port.
func provisionedCT(t *testing.T, keys *provision.Keys, vmid int) (string, int) {
	t.Helper()
	port := simtest.GuestSSHPort(t, provIP)
	sim := simtest.Start(t, pvesim.Options{Nodes: 1, TokenID: "root@pam!t", TokenSecret: "s", TaskSpeed: 0,
		StatusInterval: -1, GuestSSHPort: port, GuestRoot: t.TempDir()})
	if err := sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	c, err := pve.New(pve.Config{Endpoint: sim.APIURL(), TokenID: "root@pam!t", TokenSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pub, err := keys.PublicKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := &pve.Params{}
	p.Set("vmid", "300")
	p.Set("ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst")
	p.Set("rootfs", "local-lvm:4")
	p.Set("net0", "name=eth0,bridge=vmbr0,ip="+provIP+"/8")
	p.Set("ssh-public-keys", pub+"\n")
	if err := c.Post(ctx, "/nodes/pve1/lxc", p, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Post(ctx, "/nodes/pve1/lxc/300/status/start", nil, nil); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the guest's SSH server", 20*time.Second, func() bool { _, err := sim.GuestSSHAddr(vmid); return err == nil })
	return sim.GuestTree(vmid), port
}
