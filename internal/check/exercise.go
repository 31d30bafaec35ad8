package check

import (
	"context"
	"errors"
	"fmt"
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
	// Node and Storage hold the throwaway VM; "" picks the first online
	// node and the first storage there that takes disk images.
	Node, Storage string
}

// observation is what one step saw: "ok" or the error's words, and the
// fields read back after it, with the run's VMIDs and node replaced by
// placeholders so two clusters' answers compare.
type observation struct {
	outcome  string
	readBack map[string]string
}

// exerciseRun is the script on one cluster.
type exerciseRun struct {
	client        *pve.Client
	node, storage string
	vmid, clone   int
	started       bool // the node started the VM
}

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
}

// exerciseNeeds are the privileges the steps need, on their paths.
func exerciseNeeds(storage string) []engine.PrivilegeNeed {
	why := "proxmops check --exercise"
	var out []engine.PrivilegeNeed
	out = append(out, engine.PrivilegeNeed{Path: "/pool/" + ExercisePool, Privilege: "Pool.Allocate", Why: why + " (its pool)"})
	for _, p := range []string{"VM.Allocate", "VM.Audit", "VM.Clone", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Disk",
		"VM.Config.Options", "VM.Snapshot", "VM.PowerMgmt"} {
		out = append(out, engine.PrivilegeNeed{Path: "/vms", Privilege: p, Why: why + " (its throwaway VMs)"})
	}
	out = append(out, engine.PrivilegeNeed{Path: "/storage/" + storage, Privilege: "Datastore.AllocateSpace", Why: why + " (their disks)"})
	out = append(out, engine.PrivilegeNeed{Path: "/storage/" + storage, Privilege: "Datastore.Audit", Why: why + " (their disks)"})
	return out
}

// exerciseSteps is the script: the whole life of a small VM with an empty
// disk, with two refusals provoked on purpose.
func exerciseSteps() []exerciseStep {
	return []exerciseStep{
		{name: "create the pool", run: (*exerciseRun).createPool},
		{name: "create a VM with an empty 1 GiB disk", run: (*exerciseRun).createVM},
		{name: "refuse a VMID already taken", refusal: true, run: (*exerciseRun).createDuplicate},
		{name: "update cores, tags and description", run: (*exerciseRun).updateConfig},
		{name: "snapshot, roll back and delete the snapshot", run: (*exerciseRun).snapshotCycle},
		{name: "grow the disk by 1 GiB", run: (*exerciseRun).grow},
		{name: "refuse to shrink the disk", refusal: true, run: (*exerciseRun).shrink},
		{name: "full clone", run: (*exerciseRun).fullClone},
		{name: "delete the clone", run: (*exerciseRun).deleteClone},
		{name: "start the VM", optional: true, run: (*exerciseRun).start},
		{name: "change memory while running (pending)", needs: "start the VM", run: (*exerciseRun).pendingMemory},
		{name: "stop the VM", needs: "start the VM", run: (*exerciseRun).stop},
		{name: "delete the VM", run: (*exerciseRun).deleteVM},
		{name: "delete the pool", run: (*exerciseRun).deletePool},
	}
}

// wait takes a call's task id and error, and waits for the task.
func (x *exerciseRun) wait(ctx context.Context) func(upid string, err error) error {
	return func(upid string, err error) error {
		if err != nil {
			return err
		}
		_, err = x.client.WaitTask(ctx, upid, nil)
		return err
	}
}

func (x *exerciseRun) createPool(ctx context.Context) (map[string]string, error) {
	p := pve.NewParams().Set("poolid", ExercisePool).Set("comment", "proxmops check --exercise; removed when it ends")
	if err := x.client.Post(ctx, "pools", p, nil); err != nil {
		return nil, err
	}
	var pools []struct {
		PoolID string `json:"poolid"`
	}
	if err := x.client.Get(ctx, "pools", pve.NewParams().Set("poolid", ExercisePool), &pools); err != nil {
		return nil, err
	}
	return map[string]string{"pools listed": strconv.Itoa(len(pools))}, nil
}

func (x *exerciseRun) vmParams(vmid int) *pve.Params {
	return pve.NewParams().Set("name", exerciseName+"vm").Set("pool", ExercisePool).Set("tags", exerciseTag).
		SetInt("memory", 128).SetInt("cores", 1).Set("scsi0", x.storage+":1").Set("description", "proxmops check --exercise")
}

// readBack is the VM's configuration keys the steps compare.
func (x *exerciseRun) readBack(ctx context.Context, vmid int, keys ...string) (map[string]string, error) {
	cfg, err := x.client.QemuConfig(ctx, x.node, vmid, false)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range keys {
		out[k] = cfg[k]
	}
	return out, nil
}

func (x *exerciseRun) createVM(ctx context.Context) (map[string]string, error) {
	id, err := x.client.NextID(ctx)
	if err != nil {
		return nil, err
	}
	x.vmid = id
	if err := x.wait(ctx)(x.client.QemuCreate(ctx, x.node, id, x.vmParams(id))); err != nil {
		return nil, err
	}
	return x.readBack(ctx, id, "name", "tags", "memory", "cores", "scsi0", "description")
}

func (x *exerciseRun) createDuplicate(ctx context.Context) (map[string]string, error) {
	return nil, x.wait(ctx)(x.client.QemuCreate(ctx, x.node, x.vmid, x.vmParams(x.vmid)))
}

func (x *exerciseRun) updateConfig(ctx context.Context) (map[string]string, error) {
	p := pve.NewParams().SetInt("cores", 2).Set("tags", exerciseTag+";updated").Set("description", "proxmops check --exercise, updated")
	if err := x.client.QemuSetConfig(ctx, x.node, x.vmid, p); err != nil {
		return nil, err
	}
	return x.readBack(ctx, x.vmid, "cores", "tags", "description")
}

func (x *exerciseRun) snapshotCycle(ctx context.Context) (map[string]string, error) {
	if err := x.wait(ctx)(x.client.CreateSnapshot(ctx, "qemu", x.node, x.vmid, "check1", "proxmops check")); err != nil {
		return nil, err
	}
	snaps, err := x.client.Snapshots(ctx, "qemu", x.node, x.vmid)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range snaps {
		names = append(names, s.Name)
	}
	if err := x.wait(ctx)(x.client.RollbackSnapshot(ctx, "qemu", x.node, x.vmid, "check1", false)); err != nil {
		return nil, err
	}
	if err := x.wait(ctx)(x.client.DeleteSnapshot(ctx, "qemu", x.node, x.vmid, "check1")); err != nil {
		return nil, err
	}
	return map[string]string{"snapshots": strings.Join(names, ",")}, nil
}

func (x *exerciseRun) grow(ctx context.Context) (map[string]string, error) {
	if err := x.wait(ctx)(x.client.QemuResize(ctx, x.node, x.vmid, "scsi0", "+1G")); err != nil {
		return nil, err
	}
	return x.readBack(ctx, x.vmid, "scsi0")
}

func (x *exerciseRun) shrink(ctx context.Context) (map[string]string, error) {
	return nil, x.wait(ctx)(x.client.QemuResize(ctx, x.node, x.vmid, "scsi0", "1G"))
}

func (x *exerciseRun) fullClone(ctx context.Context) (map[string]string, error) {
	id, err := x.client.NextID(ctx)
	if err != nil {
		return nil, err
	}
	x.clone = id
	full := true
	if err := x.wait(ctx)(x.client.QemuClone(ctx, x.node, x.vmid, pve.CloneOptions{NewID: id, Name: exerciseName + "clone", Full: &full, Pool: ExercisePool})); err != nil {
		return nil, err
	}
	return x.readBack(ctx, id, "name", "tags", "scsi0", "cores")
}

func (x *exerciseRun) deleteClone(ctx context.Context) (map[string]string, error) {
	if err := x.wait(ctx)(x.client.QemuDelete(ctx, x.node, x.clone)); err != nil {
		return nil, err
	}
	free, err := x.client.VMIDFree(ctx, x.clone)
	return map[string]string{"clone's VMID free again": strconv.FormatBool(free)}, err
}

func (x *exerciseRun) start(ctx context.Context) (map[string]string, error) {
	if err := x.wait(ctx)(x.client.QemuStart(ctx, x.node, x.vmid)); err != nil {
		return nil, err
	}
	x.started = true
	st, err := x.client.QemuStatus(ctx, x.node, x.vmid)
	return map[string]string{"status": st.Status}, err
}

func (x *exerciseRun) pendingMemory(ctx context.Context) (map[string]string, error) {
	if err := x.client.QemuSetConfig(ctx, x.node, x.vmid, pve.NewParams().SetInt("memory", 256)); err != nil {
		return nil, err
	}
	pending, err := x.client.QemuPending(ctx, x.node, x.vmid)
	if err != nil {
		return nil, err
	}
	out := map[string]string{"memory": "not listed"}
	for _, p := range pending {
		if p.Key == "memory" {
			out["memory"] = fmt.Sprintf("value %v, pending %v", p.Value, p.Pending)
		}
	}
	return out, nil
}

func (x *exerciseRun) stop(ctx context.Context) (map[string]string, error) {
	if err := x.wait(ctx)(x.client.QemuStop(ctx, x.node, x.vmid)); err != nil {
		return nil, err
	}
	x.started = false
	st, err := x.client.QemuStatus(ctx, x.node, x.vmid)
	return map[string]string{"status": st.Status}, err
}

func (x *exerciseRun) deleteVM(ctx context.Context) (map[string]string, error) {
	if err := x.wait(ctx)(x.client.QemuDelete(ctx, x.node, x.vmid)); err != nil {
		return nil, err
	}
	free, err := x.client.VMIDFree(ctx, x.vmid)
	return map[string]string{"VMID free again": strconv.FormatBool(free)}, err
}

func (x *exerciseRun) deletePool(ctx context.Context) (map[string]string, error) {
	return nil, x.client.Delete(ctx, "pools", pve.NewParams().Set("poolid", ExercisePool), nil)
}

// runSteps runs the script and returns each step's observation (nil for
// a step not run) and how long it took. It stops at the first step that
// fails unexpectedly; an optional step's failure skips those that need it.
func runSteps(ctx context.Context, x *exerciseRun, steps []exerciseStep) ([]*observation, []time.Duration, []error) {
	obs := make([]*observation, len(steps))
	took := make([]time.Duration, len(steps))
	errs := make([]error, len(steps))
	failed := map[string]bool{}
	for i, s := range steps {
		if s.needs != "" && failed[s.needs] {
			continue
		}
		start := time.Now()
		rb, err := s.run(x, ctx)
		took[i], errs[i] = time.Since(start), err
		o := &observation{outcome: "ok", readBack: rb}
		if err != nil {
			o.outcome = errorWords(err)
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
	return obs, took, errs
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

// placeholders replaces a run's VMIDs and node with names, longest first.
func (x *exerciseRun) placeholders(s string) string {
	r := []string{}
	if x.clone > 0 {
		r = append(r, strconv.Itoa(x.clone), "<clone-vmid>")
	}
	if x.vmid > 0 {
		r = append(r, strconv.Itoa(x.vmid), "<vmid>")
	}
	r = append(r, "'"+x.node+"'", "'<node>'")
	return strings.NewReplacer(r...).Replace(s)
}

// compare reports each step: OK with its time, FAIL when it failed on the
// cluster, and a WARN "deviation" for each answer that differs from the
// simulator's.
func compare(r *report, steps []exerciseStep, target, sim *exerciseRun, got, want []*observation, took []time.Duration) (deviations int) {
	for i, s := range steps {
		name := "exercise: " + s.name
		g, w := got[i], want[i]
		if g == nil {
			continue
		}
		gOut, wOut := target.placeholders(g.outcome), "(not run)"
		if w != nil {
			wOut = sim.placeholders(w.outcome)
		}
		switch {
		case s.refusal && g.outcome == "ok":
			r.fail(name, "the cluster accepted what Proxmox VE refuses", "report it: proxmops relies on this refusal")
			continue
		case !s.refusal && g.outcome != "ok" && s.optional:
			r.warn(name, "the node could not do it: "+gOut, "the steps that need it were skipped; nothing to do unless proxmops should start guests on "+target.node)
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
			for _, k := range sortedKeys(g.readBack) {
				gv, wv := target.placeholders(g.readBack[k]), sim.placeholders(w.readBack[k])
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

// cleanup removes every VM of the exercise and then its pool, retrying
// through errors and lock timeouts. The VMs are found by what the run
// knows (known: VMID → node), the pool's members and the guest list (by
// tag), and each
// is deleted only when its configuration carries the exercise's name and
// tag. It reports what is left.
func cleanup(ctx context.Context, client *pve.Client, known map[int]string) (removed int, left []string) {
	gone := map[int]bool{}
	for attempt := 0; attempt < 10; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return removed, append(left, ctx.Err().Error())
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		left = nil
		found, poolExists, err := exerciseGuests(ctx, client, known)
		if err != nil {
			left = append(left, err.Error())
			continue
		}
		for _, vmid := range sortedInts(found) {
			if gone[vmid] {
				continue
			}
			deleted, absent, err := removeGuest(ctx, client, found[vmid], vmid)
			switch {
			case err != nil:
				left = append(left, fmt.Sprintf("VM %d: %v", vmid, err))
			case deleted || absent:
				gone[vmid] = true
				if deleted {
					removed++
				}
			}
		}
		if len(left) == 0 && poolExists {
			if err := client.Delete(ctx, "pools", pve.NewParams().Set("poolid", ExercisePool), nil); err != nil {
				left = append(left, "pool "+ExercisePool+": "+err.Error())
			}
		}
		if len(left) == 0 {
			// Read once more: a dropped answer may have hidden a success
			// or a failure.
			if again, pool, err := exerciseGuests(ctx, client, nil); err == nil && !pool && len(withoutKeys(again, gone)) == 0 {
				return removed, nil
			}
			left = append(left, "the exercise's VMs or pool are still listed")
		}
	}
	return removed, left
}

// exerciseGuests are the candidate VMs (VMID → node) and whether the pool
// exists.
func exerciseGuests(ctx context.Context, client *pve.Client, known map[int]string) (map[int]string, bool, error) {
	found := map[int]string{}
	for id, node := range known {
		if id > 0 {
			found[id] = node
		}
	}
	var pools []struct {
		PoolID  string `json:"poolid"`
		Members []struct {
			VMID pve.Int `json:"vmid"`
			Node string  `json:"node"`
			Type string  `json:"type"`
		} `json:"members"`
	}
	poolExists := false
	if err := client.Get(ctx, "pools", pve.NewParams().Set("poolid", ExercisePool), &pools); err != nil {
		var ae *pve.APIError
		if !errors.As(err, &ae) || !strings.Contains(ae.Message, "does not exist") {
			return nil, false, fmt.Errorf("pool %s: %w", ExercisePool, err)
		}
	} else {
		poolExists = true
		for _, p := range pools {
			for _, m := range p.Members {
				if m.Type == "qemu" {
					found[int(m.VMID)] = m.Node
				}
			}
		}
	}
	guests, err := client.ClusterResources(ctx, "vm")
	if err != nil {
		return nil, false, fmt.Errorf("the guest list: %w", err)
	}
	for _, g := range guests {
		// Tags are read from the config at once, the name only from
		// pvestatd's next report: select by tag, removeGuest checks the name.
		if g.Type == "qemu" && contains(g.TagList(), exerciseTag) {
			found[int(g.VMID)] = g.Node
		}
	}
	return found, poolExists, nil
}

// removeGuest stops and deletes one VM of the exercise: deleted when it
// did, absent when there was none; neither for a VM that is not the
// exercise's, which is never touched.
func removeGuest(ctx context.Context, client *pve.Client, node string, vmid int) (deleted, absent bool, err error) {
	cfg, err := client.QemuConfig(ctx, node, vmid, false)
	if err != nil {
		if free, ferr := client.VMIDFree(ctx, vmid); ferr == nil && free {
			return false, true, nil
		}
		return false, false, err
	}
	if !strings.HasPrefix(cfg["name"], exerciseName) || !contains(pve.SplitTags(cfg["tags"]), exerciseTag) {
		return false, false, nil
	}
	if st, err := client.QemuStatus(ctx, node, vmid); err != nil {
		return false, false, err
	} else if st.Status == "running" {
		upid, err := client.QemuStop(ctx, node, vmid)
		if err == nil {
			_, err = client.WaitTask(ctx, upid, nil)
		}
		if err != nil {
			return false, false, err
		}
	}
	upid, err := client.QemuDelete(ctx, node, vmid)
	if err == nil {
		_, err = client.WaitTask(ctx, upid, nil)
	}
	return err == nil, false, err
}

func sortedInts(m map[int]string) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func withoutKeys(m map[int]string, drop map[int]bool) map[int]string {
	out := map[int]string{}
	for k, v := range m {
		if !drop[k] {
			out[k] = v
		}
	}
	return out
}

// reportCleanup says what cleanup did.
func reportCleanup(r *report, name string, removed int, left []string) {
	if len(left) > 0 {
		r.fail(name, "left behind: "+strings.Join(left, "; "),
			"run `proxmops check --exercise` again to remove them, or delete the VMs named "+exerciseName+"* tagged "+exerciseTag+" and the pool "+ExercisePool+" by hand")
		return
	}
	r.ok(name, fmt.Sprintf("nothing left (%d throwaway VMs removed)", removed))
}
