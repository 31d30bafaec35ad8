package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/pve"
)

// Applying the SDN configuration. PUT /cluster/sdn commits it and starts
// reloadnetworkall, whose worker only starts one srvreload task per node
// and does not wait for them (pve-network API2/Network/SDN.pm reload). A
// vnet is a bridge on a node once that node's srvreload task has run
// ifreload (pve-manager API2/Network.pm reload_network_config); before,
// a guest started there on the vnet fails ("bridge 'X' does not exist").
// So the apply ends only when every node's reload has ended, and a node
// whose reload failed or never started is named.

// reloadLineSuffix ends the line reloadnetworkall logs before it starts a
// node's reload ("pve1: reloading network config").
const reloadLineSuffix = ": reloading network config"

// applySDN applies the SDN configuration and waits for the nodes' reloads.
func (x *execCtx) applySDN(ctx context.Context) error {
	var upid string
	err := x.task(ctx, "applying the SDN configuration", func() (string, error) {
		u, err := x.e.client.SDNApply(ctx)
		upid = u
		return u, err
	})
	if err != nil {
		// The configuration may be committed all the same (a lost answer,
		// a task whose end was not seen) while no node's reload was
		// watched: nothing is pending, so only this makes the next plan
		// apply it again rather than start guests on missing bridges.
		x.e.sdnReload.set("the last SDN apply ended before its nodes' network reloads were seen, so a vnet may be no bridge on some node")
		return err
	}
	failed, err := x.waitNodeReloads(ctx, upid)
	reason := ""
	if len(failed) > 0 {
		reason = "the network reload after the last SDN apply failed on " + strings.Join(failed, ", ") + ": its vnets are no bridges there"
	}
	x.e.sdnReload.set(reason)
	return err
}

// nodeReloads reads which nodes reloadnetworkall started a reload on, with
// what it logged after each (a warning when the start failed).
func nodeReloads(lines []pve.TaskLogLine) (nodes []string, notes map[string][]string) {
	notes = map[string][]string{}
	for _, l := range lines {
		if node, ok := strings.CutSuffix(l.T, reloadLineSuffix); ok && !strings.ContainsAny(node, " \t") {
			nodes = append(nodes, node)
			continue
		}
		if len(nodes) > 0 && !strings.HasPrefix(l.T, "TASK ") {
			last := nodes[len(nodes)-1]
			notes[last] = append(notes[last], l.T)
		}
	}
	return nodes, notes
}

// waitNodeReloads finds each node's srvreload task in its task list (the
// first one started with or after the apply) and waits for it.
func (x *execCtx) waitNodeReloads(ctx context.Context, applyUPID string) (failedNodes []string, err error) {
	lines, err := x.e.client.TaskLog(ctx, applyUPID, 0, 1000)
	if err != nil {
		return nil, fmt.Errorf("the SDN configuration is applied, but its task log could not be read to find the nodes' network reloads: %w", err)
	}
	since := upidStart(applyUPID)
	nodes, notes := nodeReloads(lines)
	var failed []string
	for _, node := range nodes {
		upid, err := x.findNodeReload(ctx, node, since)
		logged := ""
		if n := notes[node]; len(n) > 0 {
			logged = " (the apply logged: " + strings.Join(n, "; ") + ")"
		}
		switch {
		case err != nil:
			failed = append(failed, fmt.Sprintf("%s: its tasks could not be read: %v%s", node, err, logged))
			continue
		case upid == "" && logged != "":
			failed = append(failed, node+": no network reload was started"+logged)
			continue
		case upid == "":
			failed = append(failed, node+": no srvreload task of it was found after the apply (pvesh starts it as root@pam: seeing it needs Sys.Audit on /nodes/"+node+")")
			continue
		}
		if err := x.wait(ctx, upid, "reloading the network of "+node, nil); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			failed = append(failed, fmt.Sprintf("%s: the network reload failed (%s): %v", node, upid, err))
		}
	}
	if len(failed) > 0 {
		for _, f := range failed {
			node, _, _ := strings.Cut(f, ":")
			failedNodes = append(failedNodes, node)
		}
		return failedNodes, fmt.Errorf("the SDN configuration is applied, but its vnets are not bridges on every node: %s", strings.Join(failed, "; "))
	}
	return nil, nil
}

// findNodeReload returns the UPID of a node's first srvreload task
// started at or after since ("" when there is none).
func (x *execCtx) findNodeReload(ctx context.Context, node string, since int64) (string, error) {
	tasks, err := x.e.client.NodeTasks(ctx, node, pve.TaskFilter{Type: "srvreload", Source: "all"})
	if err != nil {
		return "", err
	}
	found, at := "", int64(0)
	for _, t := range tasks {
		start := int64(t.StartTime)
		if t.ID != "networking" || start < since {
			continue
		}
		if found == "" || start < at {
			found, at = t.UPID, start
		}
	}
	return found, nil
}

// upidStart is the start time in a UPID (seconds, hexadecimal).
func upidStart(upid string) int64 {
	parts := strings.Split(upid, ":")
	if len(parts) < 5 {
		return 0
	}
	n, _ := strconv.ParseInt(parts[4], 16, 64)
	return n
}

// sdnLockedError is an SDN call refused because someone holds the SDN
// configuration lock.
type sdnLockedError struct{ err error }

func (e *sdnLockedError) Error() string {
	return "the SDN configuration is locked by another user (POST /cluster/sdn/lock): proxmops changes nothing in it until they apply it or release the lock, and tries again on a later pass (" + e.err.Error() + ")"
}

func (e *sdnLockedError) Unwrap() error { return e.err }

// explainSDNLock turns the lock's refusal into its reason.
func explainSDNLock(err error) error {
	if pve.IsSDNLocked(err) {
		return &sdnLockedError{err: err}
	}
	return err
}
