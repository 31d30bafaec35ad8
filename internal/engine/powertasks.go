package engine

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// powerTaskTypes are the tasks that start, stop or restart a guest
// (qemu-server API2/Qemu.pm and pve-container API2/LXC/Status.pm
// fork_worker types, and the HA requests). A guest reads "stopped" in
// status/current until its start task has brought the process up, and
// "running" until a shutdown ends: a start or stop planned meanwhile
// would be a second one, which waits for the first's config lock and then
// fails ("VM 100 already running").
var powerTaskTypes = map[string]bool{
	"qmstart": true, "qmstop": true, "qmshutdown": true, "qmreboot": true, "qmreset": true,
	"qmsuspend": true, "qmresume": true,
	"vzstart": true, "vzstop": true, "vzshutdown": true, "vzreboot": true, "vzsuspend": true, "vzresume": true,
	"hastart": true, "hastop": true,
}

// changesPower reports whether the action starts or stops its guest.
func changesPower(a *Action) bool {
	if !a.Acts() || a.VMID <= 0 || a.Action != vocab.ActionUpdate {
		return false
	}
	for _, c := range a.Changes {
		if c.Field == "state" {
			return true
		}
	}
	return false
}

// holdForPowerTasks leaves for the next pass every planned start or stop
// of a guest that has a power task running (a start whose answer was
// lost, a shutdown someone asked for): the guest's state is about to
// change, not the one to act on. A node whose active tasks cannot be
// listed holds nothing: the call is made, and the state is read again
// right before it.
func (e *Engine) holdForPowerTasks(ctx context.Context, p *Plan) {
	var acts []*Action
	for _, a := range p.Actions {
		if changesPower(a) && a.Status == vocab.StatusOutOfSync {
			acts = append(acts, a)
		}
	}
	if len(acts) == 0 {
		return
	}
	var mu sync.Mutex
	jobs := make([]func(context.Context) error, 0, len(acts))
	for _, a := range acts {
		jobs = append(jobs, func(ctx context.Context) error {
			tasks, err := e.client.NodeTasks(ctx, a.Node, pve.TaskFilter{VMID: a.VMID, Source: "active"})
			if err != nil {
				e.log.Debug("plan: active tasks not listed", "node", a.Node, "vmid", a.VMID, "error", err)
				return nil
			}
			for _, t := range tasks {
				if t.Running() && powerTaskTypes[t.Type] && t.ID == strconv.Itoa(a.VMID) {
					mu.Lock()
					a.Action, a.Status, a.run = vocab.ActionNone, vocab.StatusProgressing, nil
					a.Reason = fmt.Sprintf("a %s task runs for it (%s); looked at again next pass", t.Type, t.UPID)
					mu.Unlock()
					return nil
				}
			}
			return nil
		})
	}
	_ = runParallel(ctx, observeWorkers, jobs)
}
