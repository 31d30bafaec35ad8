package engine_test

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
)

// poolVMIDs reads a pool's guests through GET /pools?poolid=.
func poolVMIDs(t *testing.T, c *pve.Client, pool string) []int {
	t.Helper()
	var pools []struct {
		Members []struct {
			Type string  `json:"type"`
			VMID pve.Int `json:"vmid"`
		} `json:"members"`
	}
	if err := c.Get(context.Background(), "pools", pve.NewParams().Set("poolid", pool), &pools); err != nil {
		t.Fatal(err)
	}
	ids := []int{}
	for _, m := range pools[0].Members {
		if m.Type == "qemu" || m.Type == "lxc" {
			ids = append(ids, int(m.VMID))
		}
	}
	sort.Ints(ids)
	return ids
}

// An operator's resource pools are no part of proxmops' model: the pool
// entries /cluster/resources lists first are not taken for guests, and
// guests in a pool stay in sync and keep their pool through updates; a
// pruned guest leaves its pool as Proxmox's destroy makes it.
func TestGuestsInResourcePoolsConvergeAndKeepTheirPool(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{Prune: true},
		"templates/debian-12-tpl.yaml", seedTemplate,
		"vms/app-02.yaml", seedClone,
		"vms/app-03.yaml", seedLinkedClone,
	)
	ctx := context.Background()

	if err := e.client.Post(ctx, "pools", pve.NewParams().Set("poolid", "prod").Set("comment", "operator's pool"), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Put(ctx, "pools", pve.NewParams().Set("poolid", "prod").Set("vms", "9000,130,131"), nil); err != nil {
		t.Fatal(err)
	}
	res, err := e.client.ClusterResources(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 || res[0].Type != "pool" || res[0].ID != "/pool/prod" {
		t.Fatalf("the simulator lists no pool first: %+v", res)
	}
	p := e.assertInSync(eng)
	for _, a := range p.Actions {
		if strings.Contains(a.Key(), "pool") {
			t.Errorf("a pool became a resource: %s", a.Key())
		}
	}

	// An update of a pooled guest keeps its pool.
	e.write("vms/app-02.yaml", strings.Replace(seedClone, "memory: 2048", "memory: 3072\n  applyMode: reboot", 1))
	e.converge(eng)
	if g := e.guest(130); g.Config["memory"] != "3072" || !g.Running {
		t.Fatalf("app-02 after the update: %v, running %v", g.Config, g.Running)
	}
	e.assertInSync(eng)
	if got := poolVMIDs(t, e.client, "prod"); !reflect.DeepEqual(got, []int{130, 131, 9000}) {
		t.Fatalf("pool after the update = %v", got)
	}

	// A pruned guest leaves the pool.
	e.remove("vms/app-03.yaml")
	e.converge(eng)
	if got := poolVMIDs(t, e.client, "prod"); !reflect.DeepEqual(got, []int{130, 9000}) {
		t.Fatalf("pool after the prune = %v", got)
	}
	e.assertInSync(eng)
}
