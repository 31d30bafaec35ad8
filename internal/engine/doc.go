// Package engine is proxmops' reconciliation core: it observes a Proxmox VE
// cluster cheaply, pairs every desired resource with what the cluster has,
// diffs them in Proxmox's own normalised form, plans actions that each carry
// a reason and field changes, and applies them with bounded concurrency.
//
// The flow of one pass:
//
//	desired (Desired, from manifests) ─┐
//	                                   ├─▶ Plan ─▶ Apply ─▶ Report
//	observed (one Observation) ────────┘
//
// A file per verb: engine.go holds the Engine and its options, plan.go
// Plan (observe, plan each kind, resolve dependencies), apply.go Apply
// (run the actions in dependency order under the limits) and converge.go
// Converge (plan and apply again until nothing is left); action.go holds
// the Action a plan is made of and the predicates its state is read
// through (Acts, Refused, Conflicted, Runnable, Settled).
//
// A file per kind: each kind's spec, its conversion from the manifest
// (xxxFromManifest) and its reconciler sit in one file: vm.go
// (VirtualMachine), template.go, iso.go, ctemplate.go (ContainerTemplate),
// container.go, network.go, sdn.go (SdnZone and SdnVnet; sdnapply.go
// applies them), pool.go (Pool, and the guests' spec.pool membership). What several kinds share is apart: desired.go (Meta,
// Desired and the QEMU hardware, disk, NIC and cloud-init specs of VMs and
// templates), fromset.go (DesiredFromSet and the shared conversions),
// guest.go (the guest kinds' diff and update plan), gate.go (the checks
// every kind makes).
//
// Observation (observe.go) is one GET /cluster/resources, then what the
// reconcilers ask for: the configuration of owned guests and declared
// VMIDs (with a ReadCache, only those whose summary changed, those whose
// turn came within the pass's budget of requests, or that the plan would
// act on), the status/current of guests whose
// power the plan would change, one content listing per storage that
// matters, and each kind's own reads (host networks, SDN, appliance
// catalogues, task histories): never a walk over the whole cluster. The
// result is an Observation (not to be confused with a guest's snapshots,
// guestsnapshot.go). A plan may take up to maxPlanRounds rounds: a guest
// planned from the cache or from pvestatd's report is read and planned
// again before anything is done to it. ObserveSelection reads what
// internal/export writes manifests for; it writes them with the readings
// of Proxmox values of internal/pvefields, the ones the plan compares with.
//
// Kinds come from one registry, the kinds table of registry.go: a row
// per kind says how its manifests become specs (desired), which reconciler
// plans it, which VMID a spec claims (an owned guest at a claimed VMID is
// never pruned), how Engine.Delete recognises the prune action of one
// resource (deletion) and what privileges its actions need (needs). The
// row's place is the kind's order: its reconciler plans, and its actions
// are listed, after those of the rows above it (an Iso or a Template
// before the VMs that use them). A reconciler says what it needs observed
// and turns desired/observed pairs into actions; the checks every kind
// makes (sync disabled, a conflict, an owned resource no longer declared)
// are the shared helpers of gate.go.
//
// Fields: every Proxmox field rule is internal/pvefields. A guest kind's
// managed fields are the rows of its table there (pvefields/qemu.go for
// VirtualMachine and Template, pvefields/container.go for Container; the
// row type and the table walk in pvefields/table.go), which fill the
// guest diff (pvefields.Diff, guestdiff.go) the engine plans and applies:
// the engine calls pvefields.DiffQemu and DiffCT for the diff,
// QemuCreateParams and CTCreateParams for the create, QemuPreview and
// CTPreview for its preview, with the guest as read (Guest.observed). The
// engine keeps the kinds' specs (VMSpec, TemplateSpec, ContainerSpec),
// which hand the tables their input: pvefields.GuestSpec (vmGuestSpec,
// templateGuestSpec) and the ContainerConfig a ContainerSpec embeds; the
// component specs (DiskSpec, NICSpec, CloudInitSpec, QemuHW, MountSpec,
// CTNICSpec) are aliases of pvefields' types. How a Proxmox value is read,
// compared and shown (sizes, booleans, disk and NIC property strings,
// tags, lists, the boot order) is pvefields too, which internal/export
// reads with. A change's manifest path comes from its row, else from
// pvefields.PathsOf: the kind's keyPaths row (pvefields/fieldpath.go) for
// keys not named as the manifest's fields (Network, SdnZone, SdnVnet, HARule),
// else the manifest's struct tags; pvefields.FieldPaths hands the same
// rows to the UI.
//
// Actions depend on one another by key; Apply runs independent actions in
// parallel under overall, per-node and per-storage limits, waits for every
// Proxmox task, and marks the dependents of a failed action as blocked
// with that reason.
//
// A guest is found by its VMID wherever it is: one that HA, a migration or
// load balancing moved off its manifest's metadata.node is planned and
// acted on where it is, never created again nor moved back, and named
// (Action.ManifestNode, MovedNote; moved.go).
//
// The engine knows nothing of HTTP servers or of the daemon's loop: the CLI
// and the daemon drive it and follow progress through a Progress observer.
//
// Entry points: DesiredFromSet (manifests to Desired), Engine.Plan,
// Engine.Apply (one plan, or Plan.Only for one resource), Engine.Converge
// (apply, then re-read and re-plan while something failed, until a refusal repeats),
// Engine.Delete (one-shot delete with the ownership check of prune) and
// Plan.JSON (the document of docs/api.md). The engine keeps data only:
// internal/render writes a plan and apply results as text.
//
// Adding a kind is one file and one row here (pool.go follows this
// recipe; a cluster-wide collection is a collection row instead,
// firewall.go), after the manifest's part:
//
//  0. In internal/manifest: the Kind constant (types.go), the resource type
//     (Object and a Spec with json, pm and doc tags; Kind, Summary and
//     MarshalJSON), its row of the kind table (kinds.go: the Noun the UI
//     shows, node rule, relation of a reference to it, export folder and
//     aliases, doc; its place in the table is its order everywhere), and
//     its check, which records each reference with addRef (the relation and
//     the dependency graph come from those). Decoding and the JSON Schema
//     are generic. Then `go generate ./internal/api` writes the kind into
//     the UI's generated.ts (KINDS, KIND_INFO; TestGeneratedFileIsCurrent
//     fails until it is run).
//  1. The file (pool.go, say) holds the spec, a struct embedding Meta; its
//     conversion from the manifest type, func(*manifest.Pool,
//     SecretReader) *PoolSpec; and its reconciler. scope asks for what the
//     kind needs read: sc.guest and sc.storage for guest configurations
//     and storage listings (the observation already holds every guest,
//     node and storage of /cluster/resources), sc.read for requests of its
//     own, whose results the reconciler keeps in its fields (one
//     reconciler per plan). plan returns one Action per desired spec, read
//     with specsOf[*PoolSpec](pc.d, KindPool), plus the owned resources no
//     longer declared: baseAction starts an action, syncDisabled ends it
//     for a disabled resource, a.conflict marks something proxmops does
//     not own in the way, orphan and decidePrune plan the fate of an owned
//     undeclared one. A runnable action has a run function built from the
//     typed client and a claim naming the nodes and storages it occupies;
//     its dependencies are keys ("Kind/name") in Action.DependsOn, taken
//     from the spec's Meta.needs (manifest.Dependencies' references, the
//     graph the UI draws): a new relation is a reference the manifest
//     records (addRef), never an edge the reconciler writes itself.
//  2. The row in kinds (registry.go; inKindOrder puts the rows in the kind
//     table's order): kind (KindPool =
//     string(manifest.KindPool)), desired: fromManifest(poolFromManifest),
//     reconciler, and where they apply vmid, deletion (by name when nil)
//     and needs (privileges.go).
//  3. When its Proxmox keys are not named as its manifest fields, its row
//     in keyPaths (internal/pvefields/fieldpath.go); when `proxmops export` writes it, its
//     reader in internal/export (a cluster-wide collection: its row in
//     collectionExports, internal/export/collections.go).
//
// Adding a field of a guest kind:
//
//  1. The manifest field (internal/manifest) and the table input's field
//     beside it, in internal/pvefields/guestspec.go: QemuHW for QEMU
//     hardware a VM and a template share (qemuHW converts one into the
//     other), GuestSpec for another VM or Template field (filled in
//     vmGuestSpec, vm.go, or templateGuestSpec, template.go, from the
//     kind's spec and its conversion), ContainerConfig for a container's
//     (filled in containerFromManifest, container.go).
//  2. One row in the kind's table (internal/pvefields/qemu.go or
//     container.go): key, path, want, and whatever differs from a plain
//     string compared as is and taken live; a reading, comparison or
//     display of a Proxmox value comes from the same package (ParseBool,
//     SameSpaced, ParseDisk, ...), or is added there when new.
//  3. Its export reader (qemuReaders or ctReaders in internal/export),
//     and the field declared in the full specs of
//     internal/pvefields/table_test.go and in fieldsManifests
//     (e2e_fields_test.go). TestFieldTablesAreWellFormed (pvefields),
//     TestEveryFieldRowIsExported (internal/export) and
//     TestEveryFieldRowInSyncAfterCreate fail until all are there.
//
// A cluster-wide collection kind (firewall aliases and IP sets, backup
// jobs, HA rules, storage definitions) has no reconciler of its own: its
// row is collectionRow over a row of the collections table (collection.go:
// list path, item key, managed fields, requests, nested entries,
// privileges; where needed the key proxmops gives an item, a takeover
// under that key, a resolution of the spec against the plan, a wait
// holding an item this pass, fields a change of which replaces the item,
// further privileges, and for items without a comment an owner keeping
// ownership records in Records, fixed fields, a removal guard and
// secrets); firewall.go holds the firewall rows, specs and conversions,
// backupjob.go the backup jobs', ha.go the HA rules' (and the guests'
// spec.ha, planned with the guest), storage.go the storage row.
//
// The manifest type itself (internal/manifest: type, decoder, schema) is
// the manifest package's part.
package engine
