package engine

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// ctemplateReconciler downloads LXC OS templates (vztmpl volumes) from the
// appliance catalogue or a URL, replaces those it downloaded when their
// source changed and prunes them when no longer declared (ownership:
// volowner.go). A catalogue template someone downloaded by hand is used as is.
type ctemplateReconciler struct{}

// vztmplName matches the file names Proxmox accepts for vztmpl content.
var vztmplName = regexp.MustCompile(`\.(tar|tar\.gz|tar\.xz|tar\.zst|tar\.bz2|tgz)$`)

// resolvedCTemplate is a ContainerTemplate placed on its node.
type resolvedCTemplate struct {
	node, storage string
	volid         string
	fileName      string
	appliance     string // catalogue file name, for aplinfo downloads
	source        string // the URL, or appliance:<file name>
	checksum      string
	err           error // why it could not be resolved
}

func (ctemplateReconciler) scope(pc *planContext, sc *scope) {
	for _, s := range specsOf[*CTemplateSpec](pc.d, KindContainerTemplate) {
		if s.Sync == vocab.SyncDisabled {
			continue
		}
		node := nodeFor(pc, s.Node)
		sc.storage(node, s.Storage)
		if s.Appliance != "" && !vztmplName.MatchString(s.Appliance) {
			sc.kinds.appliances[node] = true
		}
	}
	if pc.e.opts.Prune {
		// Owned templates no longer declared can be on any template storage.
		for _, node := range pc.snap.Nodes {
			for _, st := range pc.snap.StoragesOn(node) {
				if st.Accepts("vztmpl") {
					sc.storage(node, st.Storage)
				}
			}
		}
	}
}

// resolveCTemplate decides the volume a ContainerTemplate becomes.
func resolveCTemplate(pc *planContext, s *CTemplateSpec) *resolvedCTemplate {
	node := nodeFor(pc, s.Node)
	r := &resolvedCTemplate{node: node, storage: s.Storage}
	switch {
	case s.Appliance != "" && vztmplName.MatchString(s.Appliance):
		r.fileName, r.appliance = s.Appliance, s.Appliance
	case s.Appliance != "":
		if err := pc.snap.kinds.aplErr[node]; err != nil {
			r.err = fmt.Errorf("could not read the appliance catalogue of %s: %w", node, err)
			return r
		}
		best := newestAppliance(pc.snap.kinds.appliances[node], s.Appliance)
		if best == nil {
			r.err = fmt.Errorf("the appliance catalogue of %s has no package %q (see pveam available; run pveam update on the node if it is new)", node, s.Appliance)
			return r
		}
		r.fileName, r.appliance = best.Template, best.Template
	default:
		name := s.FileName
		if name == "" {
			n, err := pvefields.ISOFileName(s.URL, "", s.Name)
			if err != nil {
				r.err = err
				return r
			}
			name = n
		}
		// Proxmox stores a download under the normalised name (pve-storage
		// Storage.pm normalize_content_filename): plan for the volume it makes.
		name = pvefields.SanitizeFileName(name)
		if !vztmplName.MatchString(name) {
			r.err = fmt.Errorf("file name %q must end in .tar.gz, .tar.xz or .tar.zst for container templates", name)
			return r
		}
		r.fileName, r.source = name, s.URL
		if s.ChecksumAlgo != "" && s.ChecksumValue != "" {
			r.checksum = s.ChecksumAlgo + ":" + s.ChecksumValue
		}
	}
	if r.appliance != "" {
		r.source = "appliance:" + r.appliance
	}
	r.volid = s.Storage + ":vztmpl/" + r.fileName
	return r
}

// newestAppliance picks the newest LXC template of a package.
func newestAppliance(list []pve.Appliance, pkg string) *pve.Appliance {
	var best *pve.Appliance
	for i := range list {
		a := &list[i]
		if a.Package != pkg || (a.Type != "" && a.Type != "lxc") {
			continue
		}
		if best == nil || pve.ApplianceVersionLess(best.Version, a.Version) {
			best = a
		}
	}
	return best
}

func (r ctemplateReconciler) plan(pc *planContext) []*Action {
	if pc.kinds.ctemplates == nil {
		pc.kinds.ctemplates = map[string]*resolvedCTemplate{}
	}
	var out []*Action
	declared := map[string]bool{}
	unresolved := map[string]bool{} // storages where a declared template could not be resolved
	for _, s := range specsOf[*CTemplateSpec](pc.d, KindContainerTemplate) {
		rt := resolveCTemplate(pc, s)
		pc.kinds.ctemplates[s.Name] = rt
		if rt.err != nil {
			unresolved[claimStorage(pc.snap, rt.node, s.Storage)] = true
		} else {
			declared[rt.volid] = true
		}
		out = append(out, r.planOne(pc, s, rt))
	}
	return append(out, r.prune(pc, declared, unresolved)...)
}

func (ctemplateReconciler) planOne(pc *planContext, s *CTemplateSpec, rt *resolvedCTemplate) *Action {
	node := rt.node
	a := baseAction(s.Meta, node, 0)
	if syncDisabled(a) {
		return a
	}
	ref := pc.snap.Storage(node, s.Storage)
	if reason := firstRefusal(nodeRefusal(pc.snap, node), ctemplateStorageRefusal(pc.snap, node, s)); reason != "" || ref == nil {
		a.Action = vocab.ActionCreate
		a.refuse(firstRefusal(reason, fmt.Sprintf("storage '%s' is not listed on node '%s'", s.Storage, node)))
		return a
	}
	if rt.err != nil {
		a.Status, a.Reason = vocab.StatusUnknown, rt.err.Error()
		if !strings.HasPrefix(rt.err.Error(), "could not read") {
			a.refuse(rt.err.Error())
		}
		return a
	}
	vols, ok := listedVolumes(pc, a, node, s.Storage)
	if !ok {
		return a
	}
	a.claim = claim{nodes: []string{node}, storages: []string{storageKey(ref)}}
	download := func(ctx context.Context, x *execCtx) error {
		what := "downloading " + rt.fileName + " to " + s.Storage
		var upid string
		var err error
		if rt.appliance != "" {
			upid, err = x.downloadTask(ctx, what+" from the appliance catalogue", func() (string, error) {
				return x.e.client.DownloadAppliance(ctx, node, s.Storage, rt.appliance)
			})
		} else {
			o := pve.DownloadOptions{Content: "vztmpl", Filename: rt.fileName, URL: s.URL}
			if s.ChecksumAlgo != "" && s.ChecksumValue != "" {
				o.Checksum, o.ChecksumAlgorithm = s.ChecksumValue, s.ChecksumAlgo
			}
			upid, err = x.downloadTask(ctx, what, func() (string, error) { return x.e.client.DownloadURL(ctx, node, s.Storage, o) })
		}
		if err != nil {
			return err
		}
		x.recordDownload(ctx, downloadDone{upid: upid, node: node, storage: s.Storage, volid: rt.volid, content: "vztmpl",
			shared: ref.Shared, source: rt.source, checksum: rt.checksum})
		return nil
	}
	for _, v := range vols {
		if v.VolID != rt.volid {
			continue
		}
		a.Observed = map[string]any{"volid": v.VolID, "size": int64(v.Size), "node": node, "storage": s.Storage, "filename": rt.fileName}
		proof, perr := pc.proveDownload(node, v)
		if perr != nil {
			a.Status, a.Reason = vocab.StatusUnknown, fmt.Sprintf("could not read the task history of %s to tell who downloaded %s: %v", node, rt.volid, perr)
			return a
		}
		if proof == nil {
			if rt.appliance != "" {
				// The same catalogue file name is the same package version.
				a.Status = vocab.StatusSynced
				a.Reason = fmt.Sprintf("%s is on %s but was not downloaded by proxmops: used as is, never replaced or deleted", rt.volid, node)
				return a
			}
			return a.conflict(notProvenReason(rt.volid, node, pc.e.client.TokenID()))
		}
		a.Owned = true
		a.Observed["downloaded_by"] = proof.UPID
		// An appliance's file name is its package version; a URL's source
		// is the one its download task logged.
		src, sum := proof.Source, rt.checksum
		if rt.appliance != "" {
			src = rt.source
			a.Observed["appliance"] = rt.appliance
		} else {
			a.Observed["source"] = src
		}
		if proof.recorded {
			// Only a recorded checksum is known: an unrecorded one is not shown.
			sum = proof.Checksum
			if sum != "" || rt.checksum != "" {
				a.Observed["checksum"] = sum
			}
		}
		var changes []vocab.Change
		if src != rt.source {
			changes = append(changes, vocab.Change{Field: "source", From: src, To: rt.source})
		}
		if sum != rt.checksum {
			changes = append(changes, vocab.Change{Field: "checksum", From: sum, To: rt.checksum})
		}
		if len(changes) == 0 {
			a.Status, a.Reason = vocab.StatusSynced, "in sync"
			return a
		}
		a.Action, a.Status, a.Changes = vocab.ActionUpdate, vocab.StatusOutOfSync, changes
		a.Reason = "the source changed: the template is downloaded again (existing containers keep their root file system)"
		a.run = func(ctx context.Context, x *execCtx) error {
			upid, err := x.e.client.DeleteVolume(ctx, node, s.Storage, rt.volid)
			if upid != "" || err != nil {
				if err := x.wait(ctx, upid, "deleting the previous "+rt.fileName, err); err != nil {
					return err
				}
			}
			return download(ctx, x)
		}
		return a
	}
	a.Action, a.Status = vocab.ActionCreate, vocab.StatusOutOfSync
	a.Reason = fmt.Sprintf("%s is not on %s", rt.volid, node)
	a.Changes = []vocab.Change{{Field: "volume", To: rt.volid}, {Field: "source", To: rt.source}}
	if rt.checksum != "" {
		a.Changes = append(a.Changes, vocab.Change{Field: "checksum", To: rt.checksum})
	}
	a.run = download
	return a
}

// prune plans the deletion of owned container templates no manifest
// declares, on the storages listed this pass; a storage where a declared
// template could not be resolved is passed over (it could be any of them).
func (ctemplateReconciler) prune(pc *planContext, declared, unresolved map[string]bool) []*Action {
	return pruneOwnedVolumes(pc, KindContainerTemplate, "vztmpl", declared, unresolved, ctemplateName)
}

// ctemplateName turns a template file name into a resource name.
func ctemplateName(file string) string {
	name := vztmplName.ReplaceAllString(file, "")
	name = strings.ToLower(name)
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// ctemplateVolume resolves a Container's template reference to a volume id
// on its node: a declared ContainerTemplate, a volume id, or an appliance
// package name found among the node's vztmpl volumes (the newest).
func ctemplateVolume(pc *planContext, node, ref string) (volid string, err error) {
	if rt, ok := pc.kinds.ctemplates[ref]; ok {
		if rt.err != nil {
			return "", fmt.Errorf("ContainerTemplate %s: %w", ref, rt.err)
		}
		if rt.node != node {
			if st := pc.snap.Storage(node, rt.storage); st == nil || !st.Shared {
				return "", fmt.Errorf("ContainerTemplate %s is on %s:%s of node %s, which node %s cannot read (declare it on %s or on a shared storage)", ref, rt.storage, rt.fileName, rt.node, node, node)
			}
		}
		return rt.volid, nil
	}
	if strings.Contains(ref, ":") {
		stor := pvefields.StorageOf(ref)
		if vols, listed, _ := pc.snap.Volumes(node, stor); listed {
			for _, v := range vols {
				if v.VolID == ref {
					return ref, nil
				}
			}
			return "", fmt.Errorf("template volume %s does not exist on node %s", ref, node)
		}
		return ref, nil
	}
	// An appliance package name expected on the cluster.
	var best pve.Volume
	bestVersion := ""
	for _, st := range pc.snap.StoragesOn(node) {
		if !st.Accepts("vztmpl") {
			continue
		}
		vols, _, _ := pc.snap.Volumes(node, st.Storage)
		for _, v := range vols {
			file := v.FileName()
			if v.Content != "vztmpl" || !strings.HasPrefix(file, ref+"_") {
				continue
			}
			version, _, _ := strings.Cut(strings.TrimPrefix(file, ref+"_"), "_")
			if best.VolID == "" || pve.ApplianceVersionLess(bestVersion, version) {
				best, bestVersion = v, version
			}
		}
	}
	if best.VolID == "" {
		return "", fmt.Errorf("no template %s_* on the storages of node %s: declare a ContainerTemplate named %s (appliance: %s) or download it with pveam", ref, node, ref, ref)
	}
	return best.VolID, nil
}

// ctemplateStorageRefusal: an appliance goes through apl_download, a URL
// through download_url; each checks the storage in its own words.
func ctemplateStorageRefusal(snap *Observation, node string, s *CTemplateSpec) string {
	if s.Appliance != "" {
		return storageRefusal(snap, node, s.Storage, "vztmpl")
	}
	return downloadRefusal(snap, node, s.Storage, "vztmpl")
}

// CTemplateSpec is a desired ContainerTemplate: an LXC OS template on a
// storage, from the appliance catalogue or from a URL.
type CTemplateSpec struct {
	Meta
	Storage string
	// Appliance is a catalogue file name (debian-12-standard_12.7-1_amd64.tar.zst)
	// or a package name (debian-12-standard: the newest version).
	Appliance     string
	URL           string
	FileName      string // for URL downloads
	ChecksumAlgo  string
	ChecksumValue string
}

func ctemplateFromManifest(t *manifest.ContainerTemplate, _ SecretReader) *CTemplateSpec {
	s := &CTemplateSpec{Meta: metaOf(t), Storage: t.Spec.Storage, Appliance: t.Spec.Appliance,
		URL: t.Spec.Source, FileName: t.Spec.Filename}
	if s.Node == "" {
		s.Node = t.Spec.Node
	}
	if s.URL != "" && s.FileName == "" {
		s.FileName = t.FileName()
	}
	if t.Spec.Checksum != nil {
		s.ChecksumAlgo, s.ChecksumValue = strings.ToLower(t.Spec.Checksum.Algo), strings.ToLower(t.Spec.Checksum.Value)
	}
	return s
}
