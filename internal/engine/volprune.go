package engine

import (
	"context"
	"maps"
	"slices"

	"github.com/proxmops/proxmops/internal/vocab"
)

// pruneOwnedVolumes plans, for each volume of the given content type that
// proxmops can prove it downloaded (proveDownload) and no manifest declares, a delete when
// prune is on, or an OutOfSync report when it is off. Storage keys in skip
// are passed over. resourceName turns the volume's file name into the
// resource name shown in the plan.
func pruneOwnedVolumes(pc *planContext, kind, content string, declared, skip map[string]bool, resourceName func(file string) string) []*Action {
	var out []*Action
	for _, k := range slices.Sorted(maps.Keys(pc.snap.volumes)) {
		if skip[k] {
			continue
		}
		for _, v := range pc.snap.volumes[k] {
			if v.Content != content || declared[v.VolID] {
				continue
			}
			node, storage := volumeLocation(pc.snap, k, v.VolID)
			proof, err := pc.proveDownload(node, v)
			if err != nil || proof == nil {
				continue // never delete what cannot be proven ours
			}
			a := orphan(kind, resourceName(v.FileName()), node, 0, map[string]any{"volid": v.VolID, "downloaded_by": proof.UPID, "source": proof.Source})
			out = append(out, a)
			if !decidePrune(pc, a, ownedWhy("owned by proxmops"), "", vocab.Change{Field: "volume", From: v.VolID}) {
				continue
			}
			volid := v.VolID
			a.claim = claim{nodes: []string{node}, storages: []string{k}}
			a.run = func(ctx context.Context, x *execCtx) error {
				upid, err := x.e.client.DeleteVolume(ctx, node, storage, volid)
				if upid == "" && err == nil {
					return nil // removed synchronously (no task to wait for)
				}
				return x.wait(ctx, upid, "deleting "+volid, err)
			}
		}
	}
	return out
}
