package engine

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Adoption of guests proxmops made but could not tag. Proxmox's clone
// cannot carry tags, so proxmops tags a clone right after it; when that
// call fails, or the daemon stops in between, the guest stays untagged. A
// guest at a declared VMID is adopted (tagged) when the newest task that
// made or removed a guest at that VMID, across the cluster's task
// histories, is a successful create or clone by proxmops' token. Nothing
// else ever is: a guest made by anyone else, or whose maker cannot be seen,
// stays a Conflict.

// reCloneLine is qemu-server's clone_vm and pve-container's clone_vm log
// line naming the new guest (the task's id is the source's VMID).
var reCloneLine = regexp.MustCompile(`^creating a clone of (?:VM|container) (\d+) with ID (\d+)$`)

// guestMadeByUs returns the task of proxmops' token that made the guest at
// vmid, or "" when it was not (or cannot be shown to be) proxmops'.
func (pc *planContext) guestMadeByUs(vmid int) (string, error) {
	var all []pve.TaskStatus
	for _, n := range pc.snap.Nodes {
		h, err := pc.nodeHistory(n)
		if err != nil {
			return "", fmt.Errorf("task history of %s: %w", n, err)
		}
		all = append(all, h...)
	}
	token, id := pc.e.client.TokenID(), strconv.Itoa(vmid)
	ours := false
	for _, t := range all {
		if t.Succeeded() && t.Issuer() == token && (isCreateTask(t.Type) && t.ID == id || isCloneTask(t.Type)) {
			ours = true
			break
		}
	}
	if !ours {
		return "", nil
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].StartTime > all[j].StartTime })
	for _, t := range all {
		if t.Running() || !t.Succeeded() {
			continue // a failed create or clone leaves no guest behind
		}
		switch {
		case (isCreateTask(t.Type) || t.Type == "qmrestore" || t.Type == "vzrestore") && t.ID == id:
			return madeBy(t, token), nil
		case (t.Type == "qmdestroy" || t.Type == "vzdestroy") && t.ID == id:
			return "", nil // removed after its maker: who made it now is not seen
		case isCloneTask(t.Type):
			lines, err := pc.taskLog(t.UPID)
			if err != nil {
				return "", err
			}
			for _, l := range lines {
				if m := reCloneLine.FindStringSubmatch(l); m != nil && m[2] == id {
					return madeBy(t, token), nil
				}
			}
		}
	}
	return "", nil
}

func isCreateTask(typ string) bool { return typ == "qmcreate" || typ == "vzcreate" }
func isCloneTask(typ string) bool  { return typ == "qmclone" || typ == "vzclone" }

func madeBy(t pve.TaskStatus, token string) string {
	if t.Issuer() == token && (isCreateTask(t.Type) || isCloneTask(t.Type)) {
		return t.UPID
	}
	return ""
}

// adoptUntagged plans the tagging of an untagged guest at a declared VMID
// that proxmops made, or returns nil to leave it a Conflict. A locked guest
// is left for later (its task may still run).
func adoptUntagged(pc *planContext, a *Action, g *Guest) *Action {
	if g == nil || g.Owned || a.Sync == vocab.SyncDisabled || g.Lock != "" {
		return nil
	}
	upid, err := pc.guestMadeByUs(g.VMID)
	if err != nil || upid == "" {
		return nil
	}
	tags := pvefields.AppendTags(g.Tags, OwnerTag)
	a.placeOn(g)
	a.Owned = true
	a.Action, a.Status = vocab.ActionUpdate, vocab.StatusOutOfSync
	a.Reason = fmt.Sprintf("made by proxmops (task %s) but its ownership tag is missing: tagging it", upid)
	a.Changes = []vocab.Change{{Field: "tags", From: strings.Join(g.Tags, ";"), To: strings.Join(tags, ";")}}
	a.Observed = observedSummary(g)
	a.claim = claim{nodes: []string{g.Node}}
	node, vmid, typ := g.Node, g.VMID, g.Type
	a.run = func(ctx context.Context, x *execCtx) error {
		p := pve.NewParams().Set("tags", strings.Join(tags, ";"))
		if typ == "lxc" {
			return x.e.client.LxcSetConfig(ctx, node, vmid, p)
		}
		return x.e.client.QemuSetConfig(ctx, node, vmid, p)
	}
	return a
}
