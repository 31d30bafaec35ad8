package check

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/pvesim"
)

// exercise runs the script on the cluster and on a simulator set up like
// the chosen node and storages, compares the two, and cleans up on the
// cluster whatever happens (a cancelled ctx included).
func (c *clusterCheck) exercise(ctx context.Context) {
	plan, ok := c.exercisePlan(ctx)
	if !ok {
		return
	}
	missing, err := MissingPrivileges(ctx, c.client, exerciseNeeds(plan))
	if err != nil {
		c.r.fail("exercise: privileges", "the token's privileges could not be read: "+err.Error(), fixForError(err, c.o))
		return
	}
	if len(missing) > 0 {
		var list []string
		for _, m := range missing {
			list = append(list, m.Privilege+" on "+m.Path)
		}
		c.r.fail("exercise: privileges", fmt.Sprintf("refused: the token lacks %d privileges the exercise needs: %s", len(missing), strings.Join(list, ", ")),
			"grant them to the token (pveum acl modify PATH --tokens TOKEN --roles ROLE), or run check without --exercise")
		return
	}
	// What an interrupted run left goes first.
	cleanCtx, cancelClean := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancelClean()
	if removed, left := cleanup(cleanCtx, c.client, nil); removed > 0 || len(left) > 0 {
		reportCleanup(c.r, "exercise: leftovers of an earlier run", removed, left)
		if len(left) > 0 {
			return
		}
	}

	steps := exerciseSteps()
	want, err := simulatorRun(ctx, plan, steps)
	if err != nil {
		c.r.fail("exercise: simulator", "the reference simulator did not run: "+err.Error(), "report it: the exercise compares the cluster with it")
		return
	}
	target := &exerciseRun{client: c.client, plan: plan, ids: map[string]int{}}
	got, took := runSteps(ctx, target, steps)
	// Whatever happened (an error, Ctrl-C), remove what the run made.
	known := map[int]guestRef{}
	for role, id := range target.ids {
		known[id] = guestRef{node: plan.node, typ: map[bool]string{true: "lxc", false: "qemu"}[role == "ct"], template: role == "clone"}
	}
	removed, left := cleanup(cleanCtx, c.client, known)
	deviations := compare(c.r, steps, target, got, want, took)
	c.reportDeviations(steps, plan, got, deviations)
	reportCleanup(c.r, "exercise: cleanup", removed, left)
}

func (c *clusterCheck) reportDeviations(steps []exerciseStep, plan exercisePlan, got []*observation, deviations int) {
	ran, skipped := 0, 0
	for i, s := range steps {
		if s.skip != nil {
			if why, _ := s.skip(plan); why != "" {
				skipped++
				continue
			}
		}
		if got[i] != nil {
			ran++
		}
	}
	note := ""
	if skipped > 0 {
		note = fmt.Sprintf(" (%d skipped: this cluster cannot take them, see above)", skipped)
	}
	switch {
	case deviations > 0:
		c.r.warn("exercise: deviations", fmt.Sprintf("%d answers of %d steps differ from the simulator's", deviations, ran),
			"report them (this report, with the Proxmox VE version): proxmops assumes what its simulator answers")
	case ran < len(steps)-skipped:
		c.r.warn("exercise: deviations", fmt.Sprintf("none in the %d steps that ran (of %d)%s", ran, len(steps)-skipped, note), "see the steps above for why the others did not run")
	default:
		c.r.ok("exercise: deviations", fmt.Sprintf("none: all %d steps answered as the simulator does%s", ran, note))
	}
}

// exercisePlan picks the node and storage (ExerciseOptions, or the first
// online node and its first storage taking disk images), a second node
// when the storage is shared, and a container template and root storage.
func (c *clusterCheck) exercisePlan(ctx context.Context) (exercisePlan, bool) {
	eo := c.o.Exercise
	node := eo.Node
	if node == "" {
		for _, n := range slices.Sorted(maps.Keys(c.online)) {
			if c.online[n] {
				node = n
				break
			}
		}
	}
	if node == "" || !c.online[node] {
		c.r.fail("exercise: target", fmt.Sprintf("no online node %q to run on", node), "name an online node with --node")
		return exercisePlan{}, false
	}
	list, err := c.client.NodeStorages(ctx, node, "")
	if err != nil {
		c.r.fail("exercise: target", "GET /nodes/"+node+"/storage: "+err.Error(), fixForError(err, c.o))
		return exercisePlan{}, false
	}
	usable := func(st pve.StorageInfo, content string) bool {
		return st.Enabled != 0 && st.Active != 0 && contains(st.ContentTypes(), content)
	}
	p := exercisePlan{node: node}
	found := false
	for _, st := range list {
		if (eo.Storage == "" || st.Storage == eo.Storage) && usable(st, "images") {
			p.storage, found = st, true
			break
		}
	}
	if !found {
		what := "node %s has no enabled storage taking disk images"
		if eo.Storage != "" {
			what = "node %s has no enabled storage " + eo.Storage + " taking disk images"
		}
		c.r.fail("exercise: target", fmt.Sprintf(what, node), "name one with --storage (pvesm status --content images lists them)")
		return exercisePlan{}, false
	}
	if p.storage.Shared != 0 {
		for _, n := range slices.Sorted(maps.Keys(c.online)) {
			if c.online[n] && n != node {
				p.node2 = n
				break
			}
		}
	}
	c.containerPlan(ctx, &p, list, usable)
	msg := fmt.Sprintf("node %s, storage %s (%s); throwaway guests named %s* tagged %s in pool %s", node, p.storage.Storage, p.storage.Type, exerciseName, exerciseTag, ExercisePool)
	if p.node2 != "" {
		msg += "; migrations to " + p.node2
	}
	if p.ctTemplate != "" && p.ctStorage != "" {
		msg += "; a container from " + p.ctTemplate + " on " + p.ctStorage
	}
	c.r.ok("exercise: target", msg)
	return p, true
}

// containerPlan finds a container template on the node and a storage for
// the container's root disk (the VM's storage when it takes rootdir).
func (c *clusterCheck) containerPlan(ctx context.Context, p *exercisePlan, list []pve.StorageInfo, usable func(pve.StorageInfo, string) bool) {
	if usable(p.storage, "rootdir") {
		p.ctStorage, p.ctRootStorage = p.storage.Storage, p.storage
	} else if c.o.Exercise.Storage == "" {
		for _, st := range list {
			if usable(st, "rootdir") {
				p.ctStorage, p.ctRootStorage = st.Storage, st
				break
			}
		}
	}
	for _, st := range list {
		if !usable(st, "vztmpl") {
			continue
		}
		vols, err := c.client.StorageContent(ctx, p.node, st.Storage, "vztmpl")
		if err != nil || len(vols) == 0 {
			continue
		}
		p.ctTemplate, p.ctTemplateStorage = vols[0].VolID, st
		return
	}
}

// simulatorRun runs the script on an in-process simulator with the plan's
// storages, template and nodes as the cluster has them, for what Proxmox
// VE's own code answers.
func simulatorRun(ctx context.Context, plan exercisePlan, steps []exerciseStep) ([]*observation, error) {
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	nodes := 1
	simPlan := plan
	simPlan.node = "pve1"
	if plan.node2 != "" {
		nodes, simPlan.node2 = 2, "pve2"
	}
	sim := pvesim.New(pvesim.Options{Nodes: nodes, TokenID: "root@pam!check", TokenSecret: hex.EncodeToString(secret), TaskSpeed: 0, Seed: 1, StatusInterval: -1})
	if err := setUpSimulator(sim, plan); err != nil {
		return nil, err
	}
	if err := sim.StartTLS("127.0.0.1:0"); err != nil {
		return nil, err
	}
	defer sim.Close()
	client, err := pve.New(pve.Config{Endpoint: sim.APIURL(), TokenID: "root@pam!check", TokenSecret: hex.EncodeToString(secret), Fingerprint: sim.Fingerprint()})
	if err != nil {
		return nil, err
	}
	defer client.Close()
	x := &exerciseRun{client: client, plan: simPlan, ids: map[string]int{}}
	obs, _ := runSteps(ctx, x, steps)
	return obs, nil
}

// setUpSimulator gives the simulator the plan's storages (their type,
// content and sharing, merged when one holds several roles) and template.
func setUpSimulator(sim *pvesim.Server, plan exercisePlan) error {
	specs := map[string]*pvesim.StorageSpec{}
	var order []string
	for _, st := range []pve.StorageInfo{plan.storage, plan.ctRootStorage, plan.ctTemplateStorage} {
		if st.Storage == "" {
			continue
		}
		if s, ok := specs[st.Storage]; ok {
			for _, ct := range st.ContentTypes() {
				if !contains(s.Content, ct) {
					s.Content = append(s.Content, ct)
				}
			}
			continue
		}
		specs[st.Storage] = &pvesim.StorageSpec{ID: st.Storage, Type: st.Type, Content: st.ContentTypes(), Shared: st.Shared != 0, Total: 100 << 30}
		order = append(order, st.Storage)
	}
	for _, id := range order {
		if err := sim.SetStorage(*specs[id]); err != nil {
			return err
		}
	}
	if plan.ctTemplate != "" {
		if err := sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: plan.ctTemplate, Size: 128 << 20}); err != nil {
			return fmt.Errorf("the container template %s: %w", plan.ctTemplate, err)
		}
	}
	return nil
}
