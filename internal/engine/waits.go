package engine

import (
	"fmt"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Wait is what a held action waits for: a resource its manifest's
// metadata.dependsOn names that is not in sync and healthy yet, with that
// resource's status and health when the plan was made. A waiting action is
// not applied this pass; a later pass plans it again.
type Wait struct {
	Key    string // "Kind/name"
	Status vocab.Status
	Health vocab.Health
	// Sync is the resource's policy when it is not auto: nothing brings it
	// in sync but a user, so the wait says so.
	Sync vocab.SyncPolicy
}

// Text is the wait in words: "waiting for VirtualMachine/db to be healthy".
func (w *Wait) Text() string {
	if w.Status != vocab.StatusSynced {
		return fmt.Sprintf("waiting for %s to be in sync and healthy (%s%s)", w.Key, w.Status, w.byHand())
	}
	return fmt.Sprintf("waiting for %s to be healthy (%s)", w.Key, w.Health)
}

// byHand names a policy that leaves the wait to a user.
func (w *Wait) byHand() string {
	switch w.Sync {
	case vocab.SyncManual:
		return "; its sync is manual: sync it to go on"
	case vocab.SyncDisabled:
		return "; its sync is disabled: proxmops will not bring it in sync"
	}
	return ""
}

// waitOn is the wait on dep as its plan has it.
func waitOn(dep *Action, st vocab.Status, h vocab.Health) *Wait {
	w := &Wait{Key: dep.Key(), Status: st, Health: h}
	if dep.Sync != vocab.SyncAuto {
		w.Sync = dep.Sync
	}
	return w
}

// Document is the wait as the API writes it (nil when there is none).
func (w *Wait) Document() *api.Wait {
	if w == nil {
		return nil
	}
	return &api.Wait{Resource: w.Key, Status: w.Status, Health: w.Health, Sync: w.Sync}
}

// Waits reports an action held until a dependency is in sync and healthy.
func (a *Action) Waits() bool { return a.Waiting != nil }

// starts reports an action that creates or starts its resource.
func (a *Action) starts() bool {
	return a.Acts() && (a.Action == vocab.ActionCreate || a.changesState("running"))
}

// stops reports an action that stops or deletes its resource.
func (a *Action) stops() bool {
	return a.Acts() && (a.Action == vocab.ActionDelete || a.changesState("stopped"))
}

func (a *Action) changesState(to string) bool {
	for _, c := range a.Changes {
		if c.Field == "state" && c.To == to {
			return true
		}
	}
	return false
}

// Dependencies maps each resource ("Kind/name") to the keys its
// metadata.dependsOn names: the declared ones, and those an earlier
// revision declared for a resource no longer declared (WithFormer).
func (d *Desired) Dependencies() map[string][]string {
	out := map[string][]string{}
	for k, deps := range d.former {
		out[k] = deps
	}
	for _, list := range d.specs {
		for _, s := range list {
			m := s.meta()
			delete(out, vocab.Key(m.Kind, m.Name))
			if len(m.DependsOn) > 0 {
				out[vocab.Key(m.Kind, m.Name)] = m.DependsOn
			}
		}
	}
	return out
}

// WithFormer remembers the dependencies of an earlier revision
// (earlier.Dependencies()) for the resources d no longer declares, so that
// pruning a resource and what it depended on deletes it first.
func (d *Desired) WithFormer(earlier *Desired) {
	if earlier == nil {
		return
	}
	d.former = earlier.Dependencies()
}

// holdForDependencies applies metadata.dependsOn (manifest.Dependencies'
// RelationDependsOn edges, carried in Meta.DependsOn): an action that
// creates or starts a resource waits while a resource it depends on has
// something to do, is not in sync, or is not healthy (health, when the
// daemon's health checks know it, from Options.Health; else the plan's,
// which for a guest is simply running); and a resource that stops or goes
// is stopped or deleted after what depends on it.
func holdForDependencies(p *Plan, d *Desired, probe func(key string) (vocab.Health, bool)) {
	byKey := make(map[string]*Action, len(p.Actions))
	for _, a := range p.Actions {
		byKey[a.Key()] = a
	}
	deps := d.Dependencies()
	for _, a := range p.Actions {
		for _, k := range deps[a.Key()] {
			dep := byKey[k]
			if dep == nil {
				continue
			}
			if a.starts() && a.Waiting == nil {
				a.Waiting = waitFor(dep, probe)
			}
			if dep.stops() && a.stops() {
				dep.DependsOn = append(dep.DependsOn, a.Key())
			}
		}
	}
}

// waitFor is the wait on dep, nil when it is ready: nothing to do, in
// sync and healthy.
func waitFor(dep *Action, probe func(key string) (vocab.Health, bool)) *Wait {
	st, h := StatusOf(dep), HealthOf(dep)
	if probe != nil && h == vocab.HealthHealthy {
		if ph, ok := probe(dep.Key()); ok {
			h = ph
		}
	}
	if dep.Action == vocab.ActionNone && st == vocab.StatusSynced && h == vocab.HealthHealthy {
		return nil
	}
	return waitOn(dep, st, h)
}

// holdBehindHeldDependencies holds an action whose dependency has
// something to do this pass that will not be done (it waits, or its sync
// is manual): run, it would find what it needs missing (a clone without
// its template, an HA rule naming a guest not yet in HA, which Proxmox
// refuses). It waits with the dependency named, instead of failing as
// blocked when the apply reaches it. Actions come in dependency order, so
// a wait passes on down a chain.
func holdBehindHeldDependencies(p *Plan) {
	byKey := make(map[string]*Action, len(p.Actions))
	for _, a := range p.Actions {
		byKey[a.Key()] = a
	}
	for _, a := range p.Actions {
		if a.Waiting != nil || !a.Acts() {
			continue
		}
		for _, k := range a.DependsOn {
			if dep := byKey[k]; dep != nil && dep.Acts() && !dep.Runnable() && dep.BlockedBy == "" && !dep.Refused() {
				a.Waiting = waitOn(dep, StatusOf(dep), HealthOf(dep))
				break
			}
		}
	}
}
