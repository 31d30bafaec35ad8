package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// isoReconciler downloads ISO images, replaces those it downloaded when
// their source or checksum changes and prunes them when no longer declared
// (ownership: volowner.go).
type isoReconciler struct{}

// isoVolume is the volume id an Iso lands as.
func isoVolume(s *IsoSpec) (string, error) {
	if s.Storage == "" {
		return "", fmt.Errorf("Iso %s: storage is missing", s.Name)
	}
	name, err := pvefields.ISOFileName(s.URL, s.FileName, s.Name)
	if err != nil {
		return "", err
	}
	return s.Storage + ":iso/" + name, nil
}

func (s *IsoSpec) checksum() string {
	if s.ChecksumAlgo == "" || s.ChecksumValue == "" {
		return ""
	}
	return strings.ToLower(s.ChecksumAlgo) + ":" + strings.ToLower(s.ChecksumValue)
}

func (isoReconciler) scope(pc *planContext, sc *scope) {
	for _, s := range specsOf[*IsoSpec](pc.d, KindIso) {
		if s.Sync != vocab.SyncDisabled {
			sc.storage(nodeFor(pc, s.Node), s.Storage)
		}
	}
}

func (r isoReconciler) plan(pc *planContext) []*Action {
	var out []*Action
	declared := map[string]bool{}
	for _, s := range specsOf[*IsoSpec](pc.d, KindIso) {
		a := r.planOne(pc, s)
		if vol, err := isoVolume(s); err == nil {
			declared[vol] = true
		}
		out = append(out, a)
	}
	return append(out, r.prune(pc, declared)...)
}

// listedVolumes is the volumes of storage on node; when the storage could
// not be listed, a is Unknown and ok false.
func listedVolumes(pc *planContext, a *Action, node, storage string) (vols []pve.Volume, ok bool) {
	vols, listed, err := pc.snap.Volumes(node, storage)
	if err != nil || !listed {
		a.Status, a.Reason = vocab.StatusUnknown, fmt.Sprintf("could not list storage %s on %s: %v", storage, node, err)
		return nil, false
	}
	return vols, true
}

func (isoReconciler) planOne(pc *planContext, s *IsoSpec) *Action {
	node := nodeFor(pc, s.Node)
	a := baseAction(s.Meta, node, 0)
	if syncDisabled(a) {
		return a
	}
	volid, err := isoVolume(s)
	if err != nil {
		a.refuse(err.Error())
		return a
	}
	ref := pc.snap.Storage(node, s.Storage)
	if reason := firstRefusal(nodeRefusal(pc.snap, node), downloadRefusal(pc.snap, node, s.Storage, "iso")); reason != "" || ref == nil {
		a.Action = vocab.ActionCreate
		a.refuse(firstRefusal(reason, fmt.Sprintf("storage '%s' is not listed on node '%s'", s.Storage, node)))
		return a
	}
	vols, ok := listedVolumes(pc, a, node, s.Storage)
	if !ok {
		return a
	}
	fileName := strings.TrimPrefix(volid, s.Storage+":iso/")
	wantSum := s.checksum()
	download := func(ctx context.Context, x *execCtx) error {
		o := downloadISO(s, fileName)
		upid, err := x.downloadTask(ctx, "downloading "+fileName+" to "+s.Storage, func() (string, error) {
			return x.e.client.DownloadURL(ctx, node, s.Storage, o)
		})
		if err != nil {
			return err
		}
		x.recordDownload(ctx, downloadDone{upid: upid, node: node, storage: s.Storage, volid: volid, content: "iso",
			shared: ref.Shared, source: s.URL, checksum: wantSum})
		return nil
	}
	a.claim = claim{nodes: []string{node}, storages: []string{storageKey(ref)}}
	for _, v := range vols {
		if v.VolID != volid {
			continue
		}
		a.Observed = map[string]any{"volid": v.VolID, "size": int64(v.Size), "node": node, "storage": s.Storage, "filename": fileName}
		proof, perr := pc.proveDownload(node, v)
		if perr != nil {
			a.Status, a.Reason = vocab.StatusUnknown, fmt.Sprintf("could not read the task history of %s to tell who downloaded %s: %v", node, volid, perr)
			return a
		}
		if proof == nil {
			return a.conflict(notProvenReason(volid, node, pc.e.client.TokenID()))
		}
		a.Owned = true
		a.Observed["downloaded_by"] = proof.UPID
		src, sum := proof.Source, wantSum
		a.Observed["source"] = src
		if proof.recorded {
			// Only a recorded checksum is known: an unrecorded one is not shown.
			sum = proof.Checksum
			if sum != "" || wantSum != "" {
				a.Observed["checksum"] = sum
			}
		}
		var changes []vocab.Change
		if src != s.URL {
			changes = append(changes, vocab.Change{Field: "source", From: src, To: s.URL})
		}
		if sum != wantSum {
			changes = append(changes, vocab.Change{Field: "checksum", From: sum, To: wantSum})
		}
		if len(changes) == 0 {
			a.Status, a.Reason = vocab.StatusSynced, "in sync"
			return a
		}
		a.Action, a.Status, a.Changes = vocab.ActionUpdate, vocab.StatusOutOfSync, changes
		a.Reason = fieldNames(changes, " and ") + " changed: the ISO is downloaded again"
		a.run = func(ctx context.Context, x *execCtx) error {
			upid, err := x.e.client.DeleteVolume(ctx, node, s.Storage, volid)
			if upid != "" || err != nil {
				if err := x.wait(ctx, upid, "deleting the previous "+fileName, err); err != nil {
					return err
				}
			}
			return download(ctx, x)
		}
		return a
	}
	a.Action, a.Status = vocab.ActionCreate, vocab.StatusOutOfSync
	a.Reason = fmt.Sprintf("%s is not on %s", volid, node)
	a.Changes = []vocab.Change{{Field: "volume", To: volid}, {Field: "source", To: s.URL}}
	if wantSum != "" {
		a.Changes = append(a.Changes, vocab.Change{Field: "checksum", To: wantSum})
	}
	a.run = download
	return a
}

// prune plans the deletion of owned ISOs no manifest declares, on the
// storages listed this pass.
func (isoReconciler) prune(pc *planContext, declared map[string]bool) []*Action {
	return pruneOwnedVolumes(pc, KindIso, "iso", declared, nil, func(file string) string {
		return strings.TrimSuffix(file, ".iso")
	})
}

// volumeLocation turns a storage key back into a node and storage.
func volumeLocation(snap *Observation, key, volid string) (node, storage string) {
	if n, s, ok := strings.Cut(key, "/"); ok {
		return n, s
	}
	storage = pvefields.StorageOf(volid)
	for _, n := range snap.Nodes {
		if snap.Storage(n, storage) != nil {
			return n, storage
		}
	}
	return "", storage
}

func downloadISO(s *IsoSpec, fileName string) pve.DownloadOptions {
	o := pve.DownloadOptions{Content: "iso", Filename: fileName, URL: s.URL}
	if s.ChecksumAlgo != "" && s.ChecksumValue != "" {
		o.Checksum, o.ChecksumAlgorithm = strings.ToLower(s.ChecksumValue), strings.ToLower(s.ChecksumAlgo)
	}
	return o
}

// IsoSpec is a desired ISO image on a storage.
type IsoSpec struct {
	Meta
	URL           string
	Storage       string
	FileName      string // "" derives it from the URL
	ChecksumAlgo  string
	ChecksumValue string
}

func isoFromManifest(i *manifest.Iso, _ SecretReader) *IsoSpec {
	s := &IsoSpec{Meta: metaOf(i), URL: i.Spec.Source, Storage: i.Spec.Storage, FileName: i.Spec.Filename}
	if s.Node == "" {
		s.Node = i.Spec.Node
	}
	if i.Spec.Checksum != nil {
		s.ChecksumAlgo, s.ChecksumValue = strings.ToLower(i.Spec.Checksum.Algo), strings.ToLower(i.Spec.Checksum.Value)
	}
	return s
}
