package check

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/pve"
)

// guestRef is one throwaway guest: where it is and what kind.
type guestRef struct {
	node, typ string // typ: qemu or lxc
	template  bool
}

// cleanup removes every guest of the exercise and then its pool,
// retrying through errors and lock timeouts. The guests are found by what
// the run knows (known), the pool's members and the guest list (by tag),
// and each is deleted only when its configuration carries the exercise's
// name and tag. It reports what is left.
func cleanup(ctx context.Context, client *pve.Client, known map[int]guestRef) (removed int, left []string) {
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
		for _, vmid := range removalOrder(found) {
			if gone[vmid] {
				continue
			}
			deleted, absent, err := removeGuest(ctx, client, found[vmid], vmid)
			switch {
			case err != nil:
				left = append(left, fmt.Sprintf("guest %d: %v", vmid, err))
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
			left = append(left, "the exercise's guests or pool are still listed")
		}
	}
	return removed, left
}

// removalOrder deletes templates last: a linked clone holds its
// template's base volume until it is gone.
func removalOrder(m map[int]guestRef) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if m[out[i]].template != m[out[j]].template {
			return !m[out[i]].template
		}
		return out[i] < out[j]
	})
	return out
}

// exerciseGuests are the candidate guests and whether the pool exists.
func exerciseGuests(ctx context.Context, client *pve.Client, known map[int]guestRef) (map[int]guestRef, bool, error) {
	found := map[int]guestRef{}
	for id, g := range known {
		if id > 0 {
			found[id] = g
		}
	}
	var pools []struct {
		PoolID  string `json:"poolid"`
		Members []struct {
			VMID     pve.Int `json:"vmid"`
			Node     string  `json:"node"`
			Type     string  `json:"type"`
			Template pve.Int `json:"template"`
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
				if m.Type == "qemu" || m.Type == "lxc" {
					found[int(m.VMID)] = guestRef{node: m.Node, typ: m.Type, template: m.Template != 0}
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
		if contains(g.TagList(), exerciseTag) {
			found[int(g.VMID)] = guestRef{node: g.Node, typ: g.Type, template: g.IsTemplate()}
		}
	}
	return found, poolExists, nil
}

// removeGuest stops and deletes one guest of the exercise: deleted when it
// did, absent when there was none; neither for a guest that is not the
// exercise's, which is never touched.
func removeGuest(ctx context.Context, client *pve.Client, g guestRef, vmid int) (deleted, absent bool, err error) {
	var cfg pve.ConfigValues
	name := "name"
	if g.typ == "lxc" {
		name = "hostname"
		cfg, err = client.LxcConfig(ctx, g.node, vmid)
	} else {
		cfg, err = client.QemuConfig(ctx, g.node, vmid, false)
	}
	if err != nil {
		if free, ferr := client.VMIDFree(ctx, vmid); ferr == nil && free {
			return false, true, nil
		}
		return false, false, err
	}
	if !strings.HasPrefix(cfg[name], exerciseName) || !contains(pve.SplitTags(cfg["tags"]), exerciseTag) {
		return false, false, nil
	}
	status, stop, del := client.QemuStatus, client.QemuStop, client.QemuDelete
	if g.typ == "lxc" {
		status, stop, del = client.LxcStatus, client.LxcStop, client.LxcDelete
	}
	if st, err := status(ctx, g.node, vmid); err != nil {
		return false, false, err
	} else if st.Status == "running" {
		upid, err := stop(ctx, g.node, vmid)
		if err == nil {
			_, err = client.WaitTask(ctx, upid, nil)
		}
		if err != nil {
			return false, false, err
		}
	}
	upid, err := del(ctx, g.node, vmid)
	if err == nil {
		_, err = client.WaitTask(ctx, upid, nil)
	}
	return err == nil, false, err
}

func withoutKeys(m map[int]guestRef, drop map[int]bool) map[int]guestRef {
	out := map[int]guestRef{}
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
			"run `proxmops check --exercise` again to remove them, or delete the guests named "+exerciseName+"* tagged "+exerciseTag+" and the pool "+ExercisePool+" by hand")
		return
	}
	r.ok(name, fmt.Sprintf("nothing left (%d throwaway guests removed)", removed))
}
