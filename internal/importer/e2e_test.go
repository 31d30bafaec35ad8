package importer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/importer"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// simClient starts a simulated cluster on loopback and a client talking to
// it over real HTTP.
func simClient(t *testing.T) *pve.Client {
	t.Helper()
	const id, secret = "root@pam!proxmops", "import-e2e"
	sim := simtest.Start(t, pvesim.Options{Nodes: 2, TokenID: id, TokenSecret: secret, TaskSpeed: 0.01, Seed: 3})
	client, err := pve.New(pve.Config{Endpoint: sim.APIURL(), TokenID: id, TokenSecret: secret,
		RetryBackoff: 5 * time.Millisecond, TaskPollMin: 5 * time.Millisecond, TaskPollMax: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client
}

// The seed's layout, imported with --vmid-offset 100, applies to a
// simulated cluster: the OS template is downloaded and each container is
// created with container.env's cores, memory, swap, disk, address and
// onboot. The addresses are moved to loopback by container.local.env, as a
// user's local override would, so that nothing in the test points outside
// the machine.
func TestImportedSeedLayoutAppliesToPVESim(t *testing.T) {
	dir := fixture(t, map[string]string{
		"libs/apache/container.local.env": "IP=127.0.42.42\n",
		"libs/broker/config.local.env":    "IP=127.0.42.109\n",
		"env.local.json":                  `{"PROXMOX_GATEWAY": "127.0.42.1"}`,
	})
	_, out := importFixture(t, dir, importer.Options{VMIDOffset: 100})
	set, err := manifest.LoadDir(out)
	if err != nil {
		t.Fatalf("validate: %v", err)
	}
	// This test checks what Proxmox is told. Provisioning is left out:
	// applying it needs the engine's provisioner and the guests' SSH servers.
	for _, r := range set.Resources {
		if ct, ok := r.(*manifest.Container); ok {
			if ct.Spec.Provision == nil {
				t.Fatalf("%s: imported without provisioning", ct.Metadata.Name)
			}
			ct.Spec.Provision = nil
		}
	}
	client := simClient(t)
	eng := engine.New(client, engine.Options{})
	ctx := context.Background()
	plan, err := eng.Plan(ctx, engine.DesiredFromSet(set, nil), "import")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range [][2]string{{engine.KindContainerTemplate, "debian-13-standard-13-1-2"}, {engine.KindContainer, "apache"}, {engine.KindContainer, "broker"}} {
		if a := plan.Find(key[0], key[1]); a == nil || a.Action != vocab.ActionCreate {
			t.Fatalf("%s/%s not planned for creation: %+v", key[0], key[1], a)
		}
	}
	rep, err := eng.Apply(ctx, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Status != vocab.StatusSynced {
			t.Fatalf("%s/%s: %s %s: %s", r.Kind, r.Name, r.Action, r.Status, r.Error)
		}
	}
	want := map[int]map[string]string{
		142: {"hostname": "apache", "cores": "2", "memory": "2048", "swap": "512", "onboot": "1", "rootfs": "local-lvm:vm-142-disk-0,size=8G",
			"ostype": "debian", "features": "nesting=1", "unprivileged": "1"},
		209: {"hostname": "broker", "cores": "2", "memory": "2048", "swap": "512", "onboot": "0", "rootfs": "local-lvm:vm-209-disk-0,size=8G"},
	}
	nets := map[int]string{142: "ip=127.0.42.42/24", 209: "ip=127.0.42.109/24"}
	for vmid, keys := range want {
		cfg, err := client.LxcConfig(ctx, "pve1", vmid)
		if err != nil {
			t.Fatalf("container %d: %v", vmid, err)
		}
		for k, v := range keys {
			if cfg[k] != v {
				t.Errorf("%d: %s = %q, want %q", vmid, k, cfg[k], v)
			}
		}
		for _, part := range []string{"name=eth0", "bridge=vmbr0", "gw=127.0.42.1", nets[vmid]} {
			if !strings.Contains(cfg["net0"], part) {
				t.Errorf("%d: net0 = %q, want %s", vmid, cfg["net0"], part)
			}
		}
		if st, err := client.LxcStatus(ctx, "pve1", vmid); err != nil || st.Status != "running" {
			t.Errorf("%d: status %+v %v, want running", vmid, st, err)
		}
	}
}
