package engine_test

import (
	"context"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/vocab"
)

// runnableSDN lists the plan's runnable SDN actions in plan order.
func runnableSDN(p *engine.Plan) []*engine.Action {
	var out []*engine.Action
	for _, a := range p.Actions {
		if (a.Kind == engine.KindSdnZone || a.Kind == engine.KindSdnVnet) && a.Runnable() {
			out = append(out, a)
		}
	}
	return out
}

// The daemon applies one action at a time (Plan.Only) and plans again
// after each. Whichever SDN action runs alone, the passes converge: each
// call applies the SDN configuration at most once, and a change left
// pending is applied by the next pass rather than re-planned for ever.
func TestSdnActionsAppliedAloneConverge(t *testing.T) {
	// As the controller: the first action none of whose prerequisites is
	// still to run.
	choose := func(p *engine.Plan) *engine.Action {
		runnable := map[string]bool{}
		for _, a := range p.Actions {
			if a.Runnable() {
				runnable[a.Key()] = true
			}
		}
		for _, a := range runnableSDN(p) {
			ready := true
			for _, d := range a.DependsOn {
				ready = ready && !runnable[d]
			}
			if ready {
				return a
			}
		}
		return nil
	}
	t.Run("one action at a time", func(t *testing.T) {
		e, eng := withManifests(t, engine.Options{Prune: true},
			"sdn/zones.yaml", testvm.Example(t, "sdn/zones.yaml"),
			"sdn/vnets.yaml", testvm.Example(t, "sdn/vnets.yaml"),
		)
		converge := func(what string) {
			t.Helper()
			for pass := 0; ; pass++ {
				if pass > 12 {
					t.Fatalf("%s: not converged after %d passes:\n%s", what, pass, planText(e.plan(eng)))
				}
				p := e.plan(eng)
				a := choose(p)
				if a == nil {
					break
				}
				e.sim.ResetRequests()
				rep, err := eng.Apply(context.Background(), p.Only(a.Key()), nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rep.Results {
					if r.Status != vocab.StatusSynced {
						t.Fatalf("%s: %s alone: %s: %s", what, a.Key(), r.Status, r.Error)
					}
				}
				if n := e.sim.RequestCountFor("PUT", "/cluster/sdn"); n > 1 {
					t.Fatalf("%s: %s alone applied the SDN configuration %d times", what, a.Key(), n)
				}
			}
			e.requireInSync(eng)
			for _, kind := range []string{"zones", "vnets"} {
				list, err := e.client.SDNPending(context.Background(), kind)
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range list {
					if x.Pending() {
						t.Errorf("%s: %s %s left pending (%s)", what, kind, x.ID, x.State)
					}
				}
			}
		}
		converge("create")

		// Prune, one action at a time: the zones go with their vnets.
		e.remove("sdn/vnets.yaml")
		e.remove("sdn/zones.yaml")
		converge("prune")
		for _, id := range []string{"lab", "vlans", "overlay"} {
			if z := sdnEntry(t, e, "zones", id); z.ID != "" {
				t.Errorf("zone %s left: %+v", id, z)
			}
		}
		for _, id := range []string{"labnet", "iot", "k8s"} {
			if v := sdnEntry(t, e, "vnets", id); v.ID != "" {
				t.Errorf("vnet %s left: %+v", id, v)
			}
		}
	})
}

// A change left pending (written, then interrupted before the apply) is
// not re-planned as an update that does nothing and never applies: while
// something else is to be written, the pending objects wait for its apply
// and hold nothing back; with nothing else to write, one of them carries
// the apply.
func TestSdnPendingChangeIsApplied(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.write("sdn/zones.yaml", testvm.Example(t, "sdn/zones.yaml"))
	e.write("sdn/vnets.yaml", testvm.Example(t, "sdn/vnets.yaml"))
	// Zone lab as the manifest has it, written but not applied.
	must(t, e.client.SDNCreate(ctx, "zones", pve.NewParams().Set("zone", "lab").Set("type", "simple").Set("dhcp", "dnsmasq").Set("ipam", "pve")))
	eng := e.engine(engine.Options{})
	p := e.plan(eng)
	lab := p.Find(engine.KindSdnZone, "lab")
	if lab.Action != vocab.ActionNone || lab.Status != vocab.StatusOutOfSync || lab.Runnable() {
		t.Fatalf("zone lab, pending only, should wait for the apply:\n%s", planText(p))
	}
	labnet := p.Find(engine.KindSdnVnet, "labnet")
	if !labnet.Runnable() || contains(labnet.DependsOn, "SdnZone/lab") {
		t.Fatalf("vnet labnet should not wait for zone lab (%v):\n%s", labnet.DependsOn, planText(p))
	}

	// Only zones declared, all three written and left pending: one of them
	// applies, once.
	e2 := newEnv(t)
	e2.write("sdn/zones.yaml", testvm.Example(t, "sdn/zones.yaml"))
	must(t, e2.client.SDNCreate(ctx, "zones", pve.NewParams().Set("zone", "lab").Set("type", "simple").Set("dhcp", "dnsmasq").Set("ipam", "pve")))
	must(t, e2.client.SDNCreate(ctx, "zones", pve.NewParams().Set("zone", "vlans").Set("type", "vlan").Set("bridge", "vmbr1")))
	eng2 := e2.engine(engine.Options{})
	p = e2.plan(eng2)
	acts := runnableSDN(p)
	if len(acts) != 1 || acts[0].Name != "overlay" {
		t.Fatalf("want overlay created, the pending zones waiting for its apply:\n%s", planText(p))
	}
	e2.applyAloneSendingOneSDNApply(eng2, p, acts[0].Key())

	e3 := newEnv(t)
	e3.write("sdn/zones.yaml", testvm.Example(t, "sdn/zones.yaml"))
	for _, z := range []*pve.Params{
		pve.NewParams().Set("zone", "lab").Set("type", "simple").Set("dhcp", "dnsmasq").Set("ipam", "pve"),
		pve.NewParams().Set("zone", "vlans").Set("type", "vlan").Set("bridge", "vmbr1"),
		pve.NewParams().Set("zone", "overlay").Set("type", "vxlan").Set("peers", "192.168.1.11,192.168.1.12,192.168.1.13").Set("mtu", "1450"),
	} {
		must(t, e3.client.SDNCreate(ctx, "zones", z))
	}
	eng3 := e3.engine(engine.Options{})
	p = e3.plan(eng3)
	acts = runnableSDN(p)
	if len(acts) != 1 || p.Summary.Update != 1 {
		t.Fatalf("want exactly one action carrying the apply:\n%s", planText(p))
	}
	e3.applyAloneSendingOneSDNApply(eng3, p, acts[0].Key())
}

// applyAloneSendingOneSDNApply applies only the action key of p and fails
// unless it sent the SDN apply (PUT /cluster/sdn) exactly once and left
// the cluster in sync.
func (e *env) applyAloneSendingOneSDNApply(eng *engine.Engine, p *engine.Plan, key string) {
	e.t.Helper()
	e.sim.ResetRequests()
	if rep, err := eng.Apply(e.t.Context(), p.Only(key), nil); err != nil || rep.Failed > 0 {
		e.t.Fatalf("%s alone: %v %+v", key, err, rep)
	}
	if n := e.sim.RequestCountFor("PUT", "/cluster/sdn"); n != 1 {
		e.t.Fatalf("%s alone applied the SDN configuration %d times, want once", key, n)
	}
	e.requireInSync(eng)
}
