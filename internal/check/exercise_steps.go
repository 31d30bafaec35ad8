package check

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/provision"
	"github.com/proxmops/proxmops/internal/pve"
)

// wait takes a call's task id and error, and waits for the task.
func (x *exerciseRun) wait(ctx context.Context) func(upid string, err error) error {
	return func(upid string, err error) error {
		if err != nil || upid == "" {
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

// newID takes the next free VMID (/cluster/nextid) for role.
func (x *exerciseRun) newID(ctx context.Context, role string) (int, error) {
	id, err := x.client.NextID(ctx)
	if err != nil {
		return 0, err
	}
	// A VMID freed by an earlier step is handed out again: the role
	// that had it is gone.
	for r, old := range x.ids {
		if old == id {
			delete(x.ids, r)
		}
	}
	x.ids[role] = id
	return id, nil
}

func (x *exerciseRun) vmParams() *pve.Params {
	disk := x.plan.storage.Storage + ":1"
	if fileBased(x.plan.storage.Type) {
		disk += ",format=qcow2"
	}
	return pve.NewParams().Set("name", exerciseName+"vm").Set("pool", ExercisePool).Set("tags", exerciseTag).
		SetInt("memory", 128).SetInt("cores", 1).Set("scsi0", disk).Set("description", "proxmops check --exercise")
}

// readBack is a VM's configuration keys the steps compare.
func (x *exerciseRun) readBack(ctx context.Context, vmid int, keys ...string) (map[string]string, error) {
	cfg, err := x.client.QemuConfig(ctx, x.node(), vmid, false)
	if err != nil {
		return nil, err
	}
	return pick(cfg, keys), nil
}

func pick(cfg pve.ConfigValues, keys []string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		out[k] = cfg[k]
	}
	return out
}

func (x *exerciseRun) createVM(ctx context.Context) (map[string]string, error) {
	id, err := x.newID(ctx, "vm")
	if err != nil {
		return nil, err
	}
	if err := x.wait(ctx)(x.client.QemuCreate(ctx, x.node(), id, x.vmParams())); err != nil {
		return nil, err
	}
	return x.readBack(ctx, id, "name", "tags", "memory", "cores", "scsi0", "description")
}

func (x *exerciseRun) createDuplicate(ctx context.Context) (map[string]string, error) {
	return nil, x.wait(ctx)(x.client.QemuCreate(ctx, x.node(), x.ids["vm"], x.vmParams()))
}

func (x *exerciseRun) updateConfig(ctx context.Context) (map[string]string, error) {
	p := pve.NewParams().SetInt("cores", 2).SetInt("memory", 192)
	if err := x.client.QemuSetConfig(ctx, x.node(), x.ids["vm"], p); err != nil {
		return nil, err
	}
	return x.readBack(ctx, x.ids["vm"], "cores", "memory")
}

// exerciseRecords is a description with the record lines proxmops keeps
// there (provisioning, adoption), below a user's text.
func exerciseRecords() (desc, provLine, adoptLine string) {
	provLine = provision.Record{Hash: "sha256:" + strings.Repeat("0", 64), Packages: "0123456789ab"}.Line()
	adoptLine = engine.AdoptionRecord{Sizes: map[string]int64{"scsi0": 1 << 30}}.Line()
	return "proxmops check --exercise: a throwaway VM.\n\nRemoved when the check ends.\n" + provLine + "\n" + adoptLine, provLine, adoptLine
}

func (x *exerciseRun) records(ctx context.Context) (map[string]string, error) {
	desc, provLine, adoptLine := exerciseRecords()
	p := pve.NewParams().Set("tags", exerciseTag+";proxmops-check-records").Set("description", desc)
	if err := x.client.QemuSetConfig(ctx, x.node(), x.ids["vm"], p); err != nil {
		return nil, err
	}
	rb, err := x.readBack(ctx, x.ids["vm"], "tags", "description")
	if err != nil {
		return nil, err
	}
	_, rec, ok := provision.SplitDescription(rb["description"])
	rb["provisioning record intact"] = strconv.FormatBool(ok && rec.Line() == provLine)
	rb["adoption record last"] = strconv.FormatBool(strings.HasSuffix(strings.TrimRight(rb["description"], "\n"), adoptLine))
	return rb, nil
}

func (x *exerciseRun) snapshotCycle(ctx context.Context) (map[string]string, error) {
	node, vmid := x.node(), x.ids["vm"]
	if err := x.wait(ctx)(x.client.CreateSnapshot(ctx, "qemu", node, vmid, "check1", "proxmops check")); err != nil {
		return nil, err
	}
	snaps, err := x.client.Snapshots(ctx, "qemu", node, vmid)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range snaps {
		names = append(names, s.Name)
	}
	if err := x.wait(ctx)(x.client.RollbackSnapshot(ctx, "qemu", node, vmid, "check1", false)); err != nil {
		return nil, err
	}
	if err := x.wait(ctx)(x.client.DeleteSnapshot(ctx, "qemu", node, vmid, "check1")); err != nil {
		return nil, err
	}
	return map[string]string{"snapshots": strings.Join(names, ",")}, nil
}

func (x *exerciseRun) grow(ctx context.Context) (map[string]string, error) {
	if err := x.wait(ctx)(x.client.QemuResize(ctx, x.node(), x.ids["vm"], "scsi0", "+1G")); err != nil {
		return nil, err
	}
	return x.readBack(ctx, x.ids["vm"], "scsi0")
}

func (x *exerciseRun) shrink(ctx context.Context) (map[string]string, error) {
	return nil, x.wait(ctx)(x.client.QemuResize(ctx, x.node(), x.ids["vm"], "scsi0", "1G"))
}

// firewall sets the VM's firewall options (pve-firewall's set_options)
// and reads them back as get_options answers.
func (x *exerciseRun) firewall(ctx context.Context) (map[string]string, error) {
	path := "nodes/" + pve.PathEscape(x.node()) + "/qemu/" + strconv.Itoa(x.ids["vm"]) + "/firewall/options"
	p := pve.NewParams().SetBool("enable", true).Set("policy_in", "DROP").Set("log_level_in", "nolog").SetBool("macfilter", false)
	if err := x.client.Put(ctx, path, p, nil); err != nil {
		return nil, err
	}
	var opts map[string]any
	if err := x.client.Get(ctx, path, nil, &opts); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range opts {
		if k != "digest" {
			out[k] = fmt.Sprint(v)
		}
	}
	out["options"] = strings.Join(slices.Sorted(maps.Keys(out)), ",")
	return out, nil
}

func (x *exerciseRun) fullClone(ctx context.Context) (map[string]string, error) {
	return x.clone(ctx, "clone", "vm", true, "name", "tags", "scsi0", "cores")
}

func (x *exerciseRun) template(ctx context.Context) (map[string]string, error) {
	if err := x.wait(ctx)(x.client.QemuTemplate(ctx, x.node(), x.ids["clone"])); err != nil {
		return nil, err
	}
	return x.readBack(ctx, x.ids["clone"], "template", "scsi0")
}

func (x *exerciseRun) linkedClone(ctx context.Context) (map[string]string, error) {
	return x.clone(ctx, "linked", "clone", false, "name", "tags", "scsi0", "template")
}

// clone makes the guest of role, a full or linked clone of the guest of
// from, and reads fields of it back.
func (x *exerciseRun) clone(ctx context.Context, role, from string, full bool, fields ...string) (map[string]string, error) {
	id, err := x.newID(ctx, role)
	if err != nil {
		return nil, err
	}
	o := pve.CloneOptions{NewID: id, Name: exerciseName + role, Full: &full, Pool: ExercisePool}
	if err := x.wait(ctx)(x.client.QemuClone(ctx, x.node(), x.ids[from], o)); err != nil {
		return nil, err
	}
	return x.readBack(ctx, id, fields...)
}

// deleteRole deletes the guest of a role and sees its VMID free again.
func deleteRole(role string) func(*exerciseRun, context.Context) (map[string]string, error) {
	return func(x *exerciseRun, ctx context.Context) (map[string]string, error) {
		del := x.client.QemuDelete
		if role == "ct" {
			del = x.client.LxcDelete
		}
		if err := x.wait(ctx)(del(ctx, x.node(), x.ids[role])); err != nil {
			return nil, err
		}
		free, err := x.client.VMIDFree(ctx, x.ids[role])
		return map[string]string{"VMID free again": strconv.FormatBool(free)}, err
	}
}

// power starts or stops the VM (start names which) and reads back its status.
func power(start bool) func(*exerciseRun, context.Context) (map[string]string, error) {
	return func(x *exerciseRun, ctx context.Context) (map[string]string, error) {
		act := x.client.QemuStop
		if start {
			act = x.client.QemuStart
		}
		if err := x.wait(ctx)(act(ctx, x.node(), x.ids["vm"])); err != nil {
			return nil, err
		}
		st, err := x.client.QemuStatus(ctx, x.node(), x.ids["vm"])
		return map[string]string{"status": st.Status}, err
	}
}

// runningChange changes a field a running VM cannot take without memory
// hot-plug (memory: pending) and one it takes at once (cpulimit).
func (x *exerciseRun) runningChange(ctx context.Context) (map[string]string, error) {
	p := pve.NewParams().SetInt("memory", 256).Set("cpulimit", "1")
	if err := x.client.QemuSetConfig(ctx, x.node(), x.ids["vm"], p); err != nil {
		return nil, err
	}
	pending, err := x.client.QemuPending(ctx, x.node(), x.ids["vm"])
	if err != nil {
		return nil, err
	}
	out := map[string]string{"memory": "not listed", "cpulimit": "not listed"}
	for _, e := range pending {
		if _, ok := out[e.Key]; ok {
			out[e.Key] = fmt.Sprintf("value %v, pending %v", valueOf(e.Value), valueOf(e.Pending))
		}
	}
	return out, nil
}

func valueOf(v any) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprint(v)
}

// migrate moves the stopped VM to the second node and back.
func (x *exerciseRun) migrate(ctx context.Context) (map[string]string, error) {
	vmid := x.ids["vm"]
	move := func(from, to string) error {
		var upid string
		err := x.client.Post(ctx, "nodes/"+pve.PathEscape(from)+"/qemu/"+strconv.Itoa(vmid)+"/migrate", pve.NewParams().Set("target", to), &upid)
		return x.wait(ctx)(upid, err)
	}
	if err := move(x.plan.node, x.plan.node2); err != nil {
		return nil, err
	}
	cfg, err := x.client.QemuConfig(ctx, x.plan.node2, vmid, false)
	if err != nil {
		return nil, err
	}
	out := pick(cfg, []string{"name", "scsi0"})
	if err := move(x.plan.node2, x.plan.node); err != nil {
		return nil, err
	}
	st, err := x.client.QemuStatus(ctx, x.plan.node, vmid)
	out["status back on the first node"] = st.Status
	return out, err
}

func (x *exerciseRun) createCT(ctx context.Context) (map[string]string, error) {
	id, err := x.newID(ctx, "ct")
	if err != nil {
		return nil, err
	}
	p := pve.NewParams().Set("ostemplate", x.plan.ctTemplate).Set("hostname", exerciseName+"ct").Set("pool", ExercisePool).
		Set("tags", exerciseTag).SetInt("memory", 128).Set("rootfs", x.plan.ctStorage+":1").SetBool("unprivileged", true).
		Set("description", "proxmops check --exercise")
	if err := x.wait(ctx)(x.client.LxcCreate(ctx, x.node(), id, p)); err != nil {
		return nil, err
	}
	return x.ctReadBack(ctx, "hostname", "tags", "memory", "rootfs", "unprivileged", "description")
}

func (x *exerciseRun) ctReadBack(ctx context.Context, keys ...string) (map[string]string, error) {
	cfg, err := x.client.LxcConfig(ctx, x.node(), x.ids["ct"])
	if err != nil {
		return nil, err
	}
	return pick(cfg, keys), nil
}

func (x *exerciseRun) updateCT(ctx context.Context) (map[string]string, error) {
	p := pve.NewParams().SetInt("memory", 256).Set("description", "proxmops check --exercise, updated")
	if err := x.client.LxcSetConfig(ctx, x.node(), x.ids["ct"], p); err != nil {
		return nil, err
	}
	return x.ctReadBack(ctx, "memory", "description")
}

func (x *exerciseRun) growCT(ctx context.Context) (map[string]string, error) {
	if err := x.wait(ctx)(x.client.LxcResize(ctx, x.node(), x.ids["ct"], "rootfs", "+1G")); err != nil {
		return nil, err
	}
	return x.ctReadBack(ctx, "rootfs")
}

func (x *exerciseRun) deletePool(ctx context.Context) (map[string]string, error) {
	return nil, x.client.Delete(ctx, "pools", pve.NewParams().Set("poolid", ExercisePool), nil)
}
