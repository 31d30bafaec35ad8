// Package engine is proxmops' reconciliation core: it observes a Proxmox VE
// cluster cheaply, pairs every desired resource with what the cluster has,
// diffs them in Proxmox's own normalised form, plans actions that each carry
// a reason and field changes, and applies them with bounded concurrency.
//
// The flow of one pass:
//
//	desired (Desired, from manifests) ─┐
//	                                   ├─▶ Plan ─▶ Apply ─▶ Report
//	observed (one Snapshot) ───────────┘
//
// Observation is one GET /cluster/resources, one configuration read per
// owned guest or declared VMID, and one content listing per storage that
// matters: never a walk over the whole cluster.
//
// Each kind has its reconciler (VirtualMachine, Template, Iso, Container,
// ContainerTemplate, Network, SdnZone with SdnVnet); a reconciler
// says what it needs observed and turns desired/observed pairs into actions.
// Actions depend on one another (an Iso or a Template before the VMs that use
// them); Apply runs independent actions in parallel under overall, per-node
// and per-storage limits, waits for every Proxmox task, and marks the
// dependents of a failed action as blocked with that reason.
//
// The engine knows nothing of HTTP servers or of the daemon's loop: the CLI
// and the daemon drive it and follow progress through a Progress observer.
//
// Entry points: DesiredFromSet (manifests to Desired), Engine.Plan,
// Engine.Apply (one plan, or Plan.Only for one resource), Engine.Converge
// (apply, then re-read and re-plan while something failed, until a refusal repeats),
// Engine.Delete (one-shot delete with the ownership check of prune),
// WritePlanText and Plan.JSON (the document of docs/api.md).
//
// Adding a kind (Container, Network, SDN): give Desired a slice of its spec,
// fill it in DesiredFromSet instead of Others, and add a reconciler (see
// reconciler in engine.go) to Engine.reconcilers: its scope names the guest
// configurations and storages it needs read (the snapshot already holds
// every guest, node and storage of /cluster/resources), and its plan returns
// one Action per resource with a run function built from the typed client
// (internal/pve has the LXC, network and SDN calls). Dependencies are keys
// ("Kind/name") in Action.DependsOn; the action's claim names the nodes and
// storages it occupies for the concurrency limits.
package engine
