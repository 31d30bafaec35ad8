package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/probe"
	"github.com/proxmops/proxmops/internal/vocab"
)

// maxConcurrentProbes bounds the probes running at once across all
// guests of a cluster: a slow or hanging guest delays only probes, never
// a pass.
const maxConcurrentProbes = 16

// healthProbes are the running health checks of spec.healthCheck, one
// goroutine per guest (guarded by Controller.mu, except sem).
type healthProbes struct {
	byKey map[string]*prober
	sem   chan struct{}
	wg    sync.WaitGroup // the probers' goroutines (Run waits for them)
}

// probeSpec is what a prober probes; a change starts a new prober.
type probeSpec struct {
	kind, node                     string
	vmid                           int
	agent, http                    bool
	address, path                  string
	port, expect, failures         int
	interval, timeout, gracePeriod time.Duration
}

// prober is one guest's health check and what its results say.
type prober struct {
	spec   probeSpec
	cancel context.CancelFunc
	// health is the check's verdict (0 while it says nothing: no result
	// yet, or the guest is not running); reason why when not Healthy.
	health vocab.Health
	reason string
	fails  int
	// boot is when the guest was first seen running; healthy says a probe
	// has passed since (the grace period is over then).
	boot    time.Time
	healthy bool
	// baseHealth and baseReason are the summary's before the check's
	// verdict was laid over it (overlayProbeLocked).
	baseHealth vocab.Health
	baseReason string
}

// checkedHealth is the health check's verdict on the resource key, ok
// false when it has no check: Progressing until a probe has passed (not
// probed yet, or booting). The engine holds what depends on the resource
// (metadata.dependsOn) until it is Healthy.
func (c *Controller) checkedHealth(key string) (vocab.Health, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.resources[key]
	if r == nil {
		return 0, false
	}
	if _, ok := probeSpecOf(r); !ok {
		return 0, false
	}
	if p := c.probes.byKey[key]; p != nil && p.health != 0 {
		return p.health, true
	}
	return vocab.HealthProgressing, true
}

// probeSpecOf is the resource's health check, ok false without one.
func probeSpecOf(r *resource) (probeSpec, bool) {
	if r.desired == nil {
		return probeSpec{}, false
	}
	h, addr := manifest.HealthCheckOf(r.desired)
	if h == nil {
		return probeSpec{}, false
	}
	s := probeSpec{kind: r.sum.Kind, node: r.sum.Node, vmid: r.sum.VMID, agent: h.Agent, address: addr,
		failures: h.Failures(), interval: h.IntervalDuration(), timeout: h.TimeoutDuration(), gracePeriod: h.GraceDuration()}
	switch {
	case h.TCP != nil:
		s.port = h.TCP.Port
	case h.HTTP != nil:
		s.http, s.port, s.path, s.expect = true, h.HTTP.Port, h.HTTP.Path, h.HTTP.ExpectStatus
	}
	return s, true
}

// syncProbesLocked starts the health checks of the resources declaring
// one, restarts those whose check changed and stops the others (caller
// holds mu). ctx ends them all.
func (c *Controller) syncProbesLocked(ctx context.Context) {
	hp := &c.probes
	if hp.byKey == nil {
		hp.byKey = map[string]*prober{}
		hp.sem = make(chan struct{}, maxConcurrentProbes)
	}
	for key, r := range c.resources {
		spec, ok := probeSpecOf(r)
		old := hp.byKey[key]
		if old != nil {
			if ok && old.spec == spec {
				continue
			}
			old.cancel()
			delete(hp.byKey, key)
		}
		if !ok {
			if old != nil {
				c.reapplyProbeLocked(r, old) // the check is gone: the plan's health
			}
			continue
		}
		pctx, cancel := context.WithCancel(ctx)
		p := &prober{spec: spec, cancel: cancel}
		if old != nil {
			// A changed check keeps the verdict until it says otherwise:
			// no history entry for a restart.
			p.health, p.reason, p.boot, p.healthy = old.health, old.reason, old.boot, old.healthy
		}
		hp.byKey[key] = p
		hp.wg.Add(1)
		go func() {
			defer hp.wg.Done()
			c.runProber(pctx, key, p)
		}()
	}
	for key, p := range hp.byKey {
		if _, ok := c.resources[key]; !ok {
			p.cancel()
			delete(hp.byKey, key)
		}
	}
}

// runProber probes every interval until ctx ends.
func (c *Controller) runProber(ctx context.Context, key string, p *prober) {
	for {
		if c.guestRunning(key, p) {
			err := c.probeOnce(ctx, p.spec)
			if ctx.Err() != nil {
				return
			}
			c.mu.Lock()
			c.probeResultLocked(ctx, key, p, err)
			c.mu.Unlock()
		}
		t := c.clock.NewTimer(p.spec.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// guestRunning says whether the last pass saw the guest running; a guest
// that is not has no verdict and a new grace period at its next start.
func (c *Controller) guestRunning(key string, p *prober) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.resources[key]
	if r != nil && r.observed != nil && r.observed["status"] == "running" {
		if p.boot.IsZero() {
			p.boot = c.clock.Now()
		}
		return true
	}
	p.boot, p.healthy, p.fails = time.Time{}, false, 0
	if p.health != 0 && r != nil && c.probes.byKey[key] == p {
		p.health, p.reason = 0, ""
		c.reapplyProbeLocked(r, p)
	}
	return false
}

// probeOnce runs one probe, waiting for a slot among the bounded ones.
func (c *Controller) probeOnce(ctx context.Context, s probeSpec) error {
	select {
	case c.probes.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.probes.sem }()
	chk := probe.Check{Address: s.address, Port: s.port, HTTP: s.http, Path: s.path, ExpectStatus: s.expect, Timeout: s.timeout}
	if s.agent {
		chk.Agent = func(ctx context.Context) error { return c.agentPing(ctx, s) }
	}
	if err := probe.Run(ctx, chk); err != nil {
		return fmt.Errorf("%s: %w", chk.Describe(), err)
	}
	return nil
}

// agentPing asks the VM's guest agent through the Proxmox API
// (POST .../agent/ping).
func (c *Controller) agentPing(ctx context.Context, s probeSpec) error {
	rt := c.runtime()
	if rt.client == nil {
		return errors.New("the cluster is not configured")
	}
	path := "/nodes/" + s.node + "/qemu/" + strconv.Itoa(s.vmid) + "/agent/ping"
	return rt.client.Post(ctx, path, nil, nil)
}

// probeResultLocked counts a probe's result and, when the verdict
// changes, writes it to the history and the summary (caller holds mu).
// Failures inside the grace period, before the first passing probe,
// leave the guest Progressing; failureThreshold failures in a row after it make it
// Degraded; a single failure of a healthy guest changes nothing yet.
func (c *Controller) probeResultLocked(ctx context.Context, key string, p *prober, err error) {
	r := c.resources[key]
	if r == nil || c.probes.byKey[key] != p {
		return
	}
	health, reason := vocab.HealthHealthy, ""
	if err == nil {
		p.fails, p.healthy = 0, true
	} else {
		p.fails++
		booting := !p.healthy && c.clock.Now().Before(p.boot.Add(p.spec.gracePeriod))
		switch {
		case p.fails >= p.spec.failures && !booting:
			health, reason = vocab.HealthDegraded, fmt.Sprintf("health check failing (%d in a row): %v", p.fails, err)
		case p.health == vocab.HealthHealthy || p.health == vocab.HealthDegraded:
			health, reason = p.health, p.reason
		default:
			health, reason = vocab.HealthProgressing, "health check not passing yet: "+err.Error()
		}
	}
	if health == p.health && (health != vocab.HealthProgressing || reason == p.reason) {
		return
	}
	changed := health != p.health
	p.health, p.reason = health, reason
	if changed {
		msg := health.String()
		if reason != "" {
			msg += ": " + reason
		}
		var commit string
		if c.desired != nil {
			commit = c.desired.commit
		}
		kind, name := splitKey(key)
		c.addEntryLocked(context.WithoutCancel(ctx), kind, name, api.HistoryEntry{Event: api.EventHealth, Commit: commit, Message: msg,
			Actor: &api.Actor{Kind: api.ActorPass}})
	}
	c.reapplyProbeLocked(r, p)
}

// reapplyProbeLocked publishes the summary with the check's new verdict
// laid over the plan's (caller holds mu).
func (c *Controller) reapplyProbeLocked(r *resource, p *prober) {
	sum := r.sum
	if p.baseHealth.Valid() {
		sum.Health, sum.Reason = p.baseHealth, p.baseReason
	}
	c.setSummaryLocked(r, sum)
}

// overlayProbeLocked lays the health check's verdict over the health the
// plan decided (engine.HealthOf): only over Healthy, since a guest being
// created, failing or stopped is that first; a running guest not probed
// yet is Progressing (caller holds mu).
func (c *Controller) overlayProbeLocked(sum api.ResourceSummary) api.ResourceSummary {
	p := c.probes.byKey[vocab.Key(sum.Kind, sum.Name)]
	if p == nil {
		return sum
	}
	p.baseHealth, p.baseReason = sum.Health, sum.Reason
	r := c.resources[vocab.Key(sum.Kind, sum.Name)]
	if sum.Health != vocab.HealthHealthy || r == nil || r.observed != nil && r.observed["status"] != "running" {
		// Seen not running (a guest declared stopped is Healthy so): no
		// check. A guest just created is not seen yet: it boots.
		return sum
	}
	if p.health == 0 {
		// Running, not probed yet: booting as far as anyone knows.
		sum.Health, sum.Reason = vocab.HealthProgressing, joinReason(sum.Reason, "waiting for the first health check")
		return sum
	}
	sum.Health = p.health
	if p.health != vocab.HealthHealthy {
		sum.Reason = joinReason(sum.Reason, p.reason)
	}
	return sum
}

// noteHealthMetricLocked moves the resource's health gauge from prev to
// now (0: none, the resource is gone).
func (c *Controller) noteHealthMetricLocked(kind, name string, prev, now vocab.Health) {
	if prev.Valid() {
		c.m.ResourceHealth.DeleteLabelValues(kind, name, prev.String(), c.Name())
	}
	if now.Valid() {
		c.m.ResourceHealth.WithLabelValues(kind, name, now.String(), c.Name()).Set(1)
	}
}

// resourceHealthLocked is the resource's shown health (0 when unknown).
func (c *Controller) resourceHealthLocked(key string) vocab.Health {
	if r := c.resources[key]; r != nil {
		return r.sum.Health
	}
	return 0
}
