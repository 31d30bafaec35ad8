package check

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/pvesim"
)

// exercise runs the script on the cluster and on a simulator set up like
// the chosen node and storage, compares the two, and cleans up on the
// cluster whatever happens (a cancelled ctx included).
func (c *clusterCheck) exercise(ctx context.Context) {
	node, st, ok := c.exerciseTarget(ctx)
	if !ok {
		return
	}
	missing, err := MissingPrivileges(ctx, c.client, exerciseNeeds(st.Storage))
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

	want, sim, err := simulatorRun(ctx, node, st)
	if err != nil {
		c.r.fail("exercise: simulator", "the reference simulator did not run: "+err.Error(), "report it: the exercise compares the cluster with it")
		return
	}
	target := &exerciseRun{client: c.client, node: node, storage: st.Storage}
	steps := exerciseSteps()
	got, took, _ := runSteps(ctx, target, steps)
	// Whatever happened (an error, Ctrl-C), remove what the run made.
	removed, left := cleanup(cleanCtx, c.client, map[int]string{target.vmid: node, target.clone: node})
	deviations := compare(c.r, steps, target, sim, got, want, took)
	ran := 0
	for _, g := range got {
		if g != nil {
			ran++
		}
	}
	switch {
	case deviations > 0:
		c.r.warn("exercise: deviations", fmt.Sprintf("%d answers of %d steps differ from the simulator's", deviations, ran),
			"report them (this report, with the Proxmox VE version): proxmops assumes what its simulator answers")
	case ran < len(steps):
		c.r.warn("exercise: deviations", fmt.Sprintf("none in the %d steps that ran (of %d)", ran, len(steps)), "see the steps above for why the others did not run")
	default:
		c.r.ok("exercise: deviations", fmt.Sprintf("none: all %d steps answered as the simulator does", ran))
	}
	reportCleanup(c.r, "exercise: cleanup", removed, left)
}

// exerciseTarget picks the node and storage (ExerciseOptions, or the first
// online node and its first storage taking disk images).
func (c *clusterCheck) exerciseTarget(ctx context.Context) (string, pve.StorageInfo, bool) {
	eo := c.o.Exercise
	node := eo.Node
	if node == "" {
		for _, n := range sortedKeys(c.online) {
			if c.online[n] {
				node = n
				break
			}
		}
	}
	if node == "" || !c.online[node] {
		c.r.fail("exercise: target", fmt.Sprintf("no online node %q to run on", node), "name an online node with --node")
		return "", pve.StorageInfo{}, false
	}
	list, err := c.client.NodeStorages(ctx, node, "images")
	if err != nil {
		c.r.fail("exercise: target", "GET /nodes/"+node+"/storage: "+err.Error(), fixForError(err, c.o))
		return "", pve.StorageInfo{}, false
	}
	for _, st := range list {
		if (eo.Storage == "" || st.Storage == eo.Storage) && st.Enabled != 0 && st.Active != 0 && contains(st.ContentTypes(), "images") {
			c.r.ok("exercise: target", fmt.Sprintf("node %s, storage %s (%s); throwaway VMs named %s* tagged %s in pool %s", node, st.Storage, st.Type, exerciseName, exerciseTag, ExercisePool))
			return node, st, true
		}
	}
	c.r.fail("exercise: target", fmt.Sprintf("node %s has no enabled storage %staking disk images", node, map[bool]string{true: "", false: eo.Storage + " "}[eo.Storage == ""]),
		"name one with --storage (pvesm status --content images lists them)")
	return "", pve.StorageInfo{}, false
}

// simulatorRun runs the script on an in-process simulator with the node's
// storage as the cluster has it, for what Proxmox VE's own code answers.
func simulatorRun(ctx context.Context, node string, st pve.StorageInfo) ([]*observation, *exerciseRun, error) {
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return nil, nil, err
	}
	sim := pvesim.New(pvesim.Options{Nodes: 1, TokenID: "root@pam!check", TokenSecret: hex.EncodeToString(secret), TaskSpeed: 0, Seed: 1, StatusInterval: -1})
	if err := sim.SetStorage(pvesim.StorageSpec{ID: st.Storage, Type: st.Type, Content: st.ContentTypes(), Shared: st.Shared != 0, Total: 100 << 30}); err != nil {
		return nil, nil, err
	}
	if err := sim.StartTLS("127.0.0.1:0"); err != nil {
		return nil, nil, err
	}
	defer sim.Close()
	client, err := pve.New(pve.Config{Endpoint: sim.APIURL(), TokenID: "root@pam!check", TokenSecret: hex.EncodeToString(secret), Fingerprint: sim.Fingerprint()})
	if err != nil {
		return nil, nil, err
	}
	defer client.Close()
	x := &exerciseRun{client: client, node: "pve1", storage: st.Storage}
	obs, _, _ := runSteps(ctx, x, exerciseSteps())
	return obs, x, nil
}
