package check

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
)

// The exercise's throwaway guests: in their own pool, named and tagged so
// a later run finds and removes what an interrupted one left.
const (
	ExercisePool = "proxmops-check"
	exerciseTag  = "proxmops-check"
	exerciseName = "proxmops-check-"
)

// ExerciseOptions choose where the exercise runs.
type ExerciseOptions struct {
	// Node and Storage hold the throwaway guests; "" picks the first
	// online node and the first storage there that takes disk images.
	Node, Storage string
}

// exercisePlan is what the cluster offers the exercise, decided once from
// the target cluster and given to the simulator's run as well, so both
// run the same steps.
type exercisePlan struct {
	node    string          // the guests' node
	storage pve.StorageInfo // the VM's disks
	// node2 is the node the VM migrates to and back ("": no second
	// online node, or the storage is not shared).
	node2 string
	// ctTemplate is an existing container template's volume, ctStorage a
	// storage for its root disk ("" each when there is none).
	ctTemplate, ctStorage string
	ctTemplateStorage     pve.StorageInfo
	ctRootStorage         pve.StorageInfo
}

// fileBased storages hold disk images as files: the exercise asks for
// qcow2 there, the format that takes snapshots and linked clones.
func fileBased(typ string) bool {
	switch typ {
	case "dir", "nfs", "cifs", "glusterfs":
		return true
	}
	return false
}

// linkedCloneCapable storages can turn a template's disks into base
// volumes and clone them linked (pve-storage's plugins' create_base and
// clone_image: LVM-thin, ZFS, RBD, btrfs, and qcow2 files).
func linkedCloneCapable(typ string) bool {
	switch typ {
	case "lvmthin", "zfspool", "rbd", "btrfs":
		return true
	}
	return fileBased(typ)
}

// observation is what one step saw: "ok" or the error's words, and the
// fields read back after it, with the run's VMIDs and nodes replaced by
// placeholders so two clusters' answers compare.
type observation struct {
	outcome  string
	readBack map[string]string
}

// exerciseRun is the script on one cluster.
type exerciseRun struct {
	client *pve.Client
	plan   exercisePlan
	ids    map[string]int // role (vm, clone, linked, ct) → VMID
}

func (x *exerciseRun) node() string { return x.plan.node }

// exerciseStep is one step of the script. A step whose error is expected
// (a refusal provoked on purpose) reports it in its observation.
type exerciseStep struct {
	name string
	run  func(x *exerciseRun, ctx context.Context) (map[string]string, error)
	// refusal marks a step that must fail: its error text is compared.
	refusal bool
	// optional steps (start) may fail on a real node for reasons of its
	// own (no KVM): a WARN, and the steps that need it are skipped.
	optional bool
	needs    string // the optional step this one needs
	// skip says why the cluster cannot take this step, and what would
	// let it ("" when it can).
	skip func(p exercisePlan) (why, fix string)
}

// exerciseNeeds are the privileges the planned steps need, on their paths.
func exerciseNeeds(p exercisePlan) []engine.PrivilegeNeed {
	why := "proxmops check --exercise"
	var out []engine.PrivilegeNeed
	out = append(out, engine.PrivilegeNeed{Path: "/pool/" + ExercisePool, Privilege: "Pool.Allocate", Why: why + " (its pool)"})
	privs := []string{"VM.Allocate", "VM.Audit", "VM.Clone", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Disk",
		"VM.Config.Options", "VM.Config.Network", "VM.Snapshot", "VM.PowerMgmt"}
	if p.node2 != "" {
		privs = append(privs, "VM.Migrate")
	}
	for _, priv := range privs {
		out = append(out, engine.PrivilegeNeed{Path: "/vms", Privilege: priv, Why: why + " (its throwaway guests)"})
	}
	storages := []string{p.storage.Storage}
	if p.ctStorage != "" && p.ctStorage != p.storage.Storage {
		storages = append(storages, p.ctStorage)
	}
	for _, s := range storages {
		out = append(out, engine.PrivilegeNeed{Path: "/storage/" + s, Privilege: "Datastore.AllocateSpace", Why: why + " (their disks)"},
			engine.PrivilegeNeed{Path: "/storage/" + s, Privilege: "Datastore.Audit", Why: why + " (their disks)"})
	}
	if p.ctTemplate != "" {
		// check_volume_access: a template needs Datastore.AllocateSpace
		// or Datastore.Audit on its storage; Audit is the lesser.
		out = append(out, engine.PrivilegeNeed{Path: "/storage/" + storageOfVolume(p.ctTemplate), Privilege: "Datastore.Audit", Why: why + " (the container template)"})
	}
	return out
}

func storageOfVolume(volid string) string { s, _, _ := strings.Cut(volid, ":"); return s }

// Reasons a cluster cannot take a step.
func needsLinkedClone(p exercisePlan) (string, string) {
	if linkedCloneCapable(p.storage.Type) {
		return "", ""
	}
	return fmt.Sprintf("storage %s (%s) cannot make linked clones", p.storage.Storage, p.storage.Type),
		"run with --storage naming an LVM-thin, ZFS, Ceph RBD or directory storage to exercise them"
}

func needsSnapshots(p exercisePlan) (string, string) {
	if linkedCloneCapable(p.storage.Type) {
		return "", ""
	}
	return fmt.Sprintf("storage %s (%s) cannot take snapshots of a VM's disk", p.storage.Storage, p.storage.Type),
		"run with --storage naming an LVM-thin, ZFS, Ceph RBD or directory storage to exercise them"
}

func needsSecondNode(p exercisePlan) (string, string) {
	if p.node2 != "" {
		return "", ""
	}
	if p.storage.Shared == 0 {
		return fmt.Sprintf("storage %s is local to %s: no migration without shared storage", p.storage.Storage, p.node),
			"run with --storage naming a shared storage (NFS, Ceph) to exercise migrations"
	}
	return "no second online node to migrate to", "nothing to do on a single node"
}

func needsCTTemplate(p exercisePlan) (string, string) {
	switch {
	case p.ctTemplate == "":
		return "no container template on " + p.node, "download one (pveam update; pveam download local debian-12-standard_12.7-1_amd64.tar.zst) to exercise containers"
	case p.ctStorage == "":
		return "no storage on " + p.node + " takes container root disks (rootdir)", "name one with --storage, or add rootdir to a storage's content"
	}
	return "", ""
}

// exerciseSteps is the script: the whole life of a small VM with an empty
// disk and of a container from an existing template, with refusals
// provoked on purpose.
func exerciseSteps() []exerciseStep {
	return []exerciseStep{
		{name: "create the pool", run: (*exerciseRun).createPool},
		{name: "create a VM with an empty 1 GiB disk", run: (*exerciseRun).createVM},
		{name: "refuse a VMID already taken", refusal: true, run: (*exerciseRun).createDuplicate},
		{name: "update cores and memory", run: (*exerciseRun).updateConfig},
		{name: "write tags and the description's record lines", run: (*exerciseRun).records},
		{name: "snapshot, roll back and delete the snapshot", skip: needsSnapshots, run: (*exerciseRun).snapshotCycle},
		{name: "grow the disk by 1 GiB", run: (*exerciseRun).grow},
		{name: "refuse to shrink the disk", refusal: true, run: (*exerciseRun).shrink},
		{name: "set firewall options", run: (*exerciseRun).firewall},
		{name: "full clone", run: (*exerciseRun).fullClone},
		{name: "turn the clone into a template", skip: needsLinkedClone, run: (*exerciseRun).template},
		{name: "linked clone of the template", skip: needsLinkedClone, run: (*exerciseRun).linkedClone},
		{name: "delete the linked clone", skip: needsLinkedClone, run: deleteRole("linked")},
		{name: "delete the full clone", run: deleteRole("clone")},
		{name: "start the VM", optional: true, run: power(true)},
		{name: "change memory (pending) and cpulimit (hot-plugged) while running", needs: "start the VM", run: (*exerciseRun).runningChange},
		{name: "stop the VM", needs: "start the VM", run: power(false)},
		{name: "migrate the VM to the second node and back", skip: needsSecondNode, run: (*exerciseRun).migrate},
		{name: "create a container from an existing template", skip: needsCTTemplate, run: (*exerciseRun).createCT},
		{name: "update the container's memory and description", skip: needsCTTemplate, run: (*exerciseRun).updateCT},
		{name: "grow the container's root disk", skip: needsCTTemplate, run: (*exerciseRun).growCT},
		{name: "delete the container", skip: needsCTTemplate, run: deleteRole("ct")},
		{name: "delete the VM", run: deleteRole("vm")},
		{name: "delete the pool", run: (*exerciseRun).deletePool},
	}
}

// runSteps runs the script and returns each step's observation (nil for
// a step not run) and how long it took. It stops at the first step that
// fails unexpectedly; an optional step's failure skips those that need it.
func runSteps(ctx context.Context, x *exerciseRun, steps []exerciseStep) ([]*observation, []time.Duration) {
	obs := make([]*observation, len(steps))
	took := make([]time.Duration, len(steps))
	failed := map[string]bool{}
	for i, s := range steps {
		if s.needs != "" && failed[s.needs] {
			continue
		}
		if s.skip != nil {
			if why, _ := s.skip(x.plan); why != "" {
				continue
			}
		}
		start := time.Now()
		rb, err := s.run(x, ctx)
		took[i] = time.Since(start)
		// Placeholders now: a later step may take a VMID this one freed.
		o := &observation{outcome: "ok", readBack: map[string]string{}}
		if err != nil {
			o.outcome = x.placeholders(errorWords(err))
		}
		for k, v := range rb {
			o.readBack[k] = x.placeholders(v)
		}
		obs[i] = o
		if err != nil && !s.refusal {
			failed[s.name] = true
			if !s.optional {
				break
			}
		}
		if err == nil && s.refusal {
			break // a refusal that did not come: the cluster is not in the state the next steps expect
		}
	}
	return obs, took
}

// errorWords is what an error says, without the parts that differ from
// one cluster to another (task ids, request paths).
func errorWords(err error) string {
	var ae *pve.APIError
	if errors.As(err, &ae) {
		return fmt.Sprintf("%d %s", ae.StatusCode, strings.TrimSpace(ae.Message))
	}
	var te *pve.TaskError
	if errors.As(err, &te) {
		return "task failed: " + te.ExitStatus
	}
	return err.Error()
}

// placeholders replaces a run's VMIDs and nodes with names, longest
// number first so that one VMID inside another is not half replaced.
func (x *exerciseRun) placeholders(s string) string {
	roles := make([]string, 0, len(x.ids))
	for role := range x.ids {
		roles = append(roles, role)
	}
	sort.Slice(roles, func(i, j int) bool {
		a, b := strconv.Itoa(x.ids[roles[i]]), strconv.Itoa(x.ids[roles[j]])
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return a < b
	})
	var r []string
	for _, role := range roles {
		if x.ids[role] > 0 {
			r = append(r, strconv.Itoa(x.ids[role]), "<"+role+"-vmid>")
		}
	}
	r = append(r, "'"+x.plan.node+"'", "'<node>'")
	if x.plan.node2 != "" {
		r = append(r, "'"+x.plan.node2+"'", "'<node2>'")
	}
	return strings.NewReplacer(r...).Replace(s)
}

// compare reports each step: OK with its time, WARN when skipped, FAIL
// when it failed on the cluster, and a WARN "deviation" for each answer
// that differs from the simulator's.
func compare(r *report, steps []exerciseStep, target *exerciseRun, got, want []*observation, took []time.Duration) (deviations int) {
	for i, s := range steps {
		name := "exercise: " + s.name
		if s.skip != nil {
			if why, fix := s.skip(target.plan); why != "" {
				r.warn(name, "skipped: "+why, fix)
				continue
			}
		}
		g, w := got[i], want[i]
		if g == nil {
			continue
		}
		gOut, wOut := g.outcome, "(not run)"
		if w != nil {
			wOut = w.outcome
		}
		switch {
		case s.refusal && g.outcome == "ok":
			r.fail(name, "the cluster accepted what Proxmox VE refuses", "report it: proxmops relies on this refusal")
			continue
		case !s.refusal && g.outcome != "ok" && s.optional:
			r.warn(name, "the node could not do it: "+gOut, "the steps that need it were skipped; nothing to do unless proxmops should start guests on "+target.node())
			continue
		case !s.refusal && g.outcome != "ok":
			r.fail(name, "failed: "+gOut, "the exercise stopped here and cleaned up; run it again, and report it if it fails the same way")
			continue
		}
		var diffs []string
		if gOut != wOut {
			diffs = append(diffs, fmt.Sprintf("the cluster answered %q, the simulator %q", gOut, wOut))
		}
		if w != nil {
			for _, k := range slices.Sorted(maps.Keys(g.readBack)) {
				gv, wv := g.readBack[k], w.readBack[k]
				if gv != wv {
					diffs = append(diffs, fmt.Sprintf("%s reads back %q, the simulator's %q", k, gv, wv))
				}
			}
		}
		if len(diffs) > 0 {
			deviations += len(diffs)
			r.warn(name+": deviation", strings.Join(diffs, "; "), "report it with this report: proxmops and its simulator assume what the simulator answers")
			continue
		}
		msg := fmt.Sprintf("%s, as the simulator answers", took[i].Round(time.Millisecond))
		if s.refusal {
			msg += " (refused: " + gOut + ")"
		}
		r.ok(name, msg)
	}
	return deviations
}
