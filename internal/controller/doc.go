// Package controller is proxmops' always-on control loop and the backend of
// the daemon's HTTP API (it implements server.Backend).
//
// Every reconcile.interval (with jitter) a pass pulls the Git source, loads
// the manifests, observes the cluster and plans with the engine, records
// each resource's status, publishes what changed to the event hub, writes
// history on transitions only, and hands the runnable actions to a bounded
// background dispatcher without waiting for them. A resource whose action
// is still queued or running is never queued twice; when the queue is full
// the action is deferred to a later pass with a logged reason. Drift that
// appears while an action runs is seen by the next pass, because every pass
// re-reads the cluster.
//
// Safety rules kept here: the last good desired state is kept when Git or
// the manifests fail, and nothing is pruned from a failed or empty load;
// reconcile.autoSync false only detects; reconcile.dryRun plans and never
// acts. Actions in flight are persisted, so a daemon killed mid-apply
// records them as interrupted on its next start and converges from a fresh
// observation.
package controller
