package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// templateReconciler builds Templates from images and reports (never
// changes) drift on existing ones: a template cannot be changed in place,
// and rebuilding it silently would break its linked clones.
type templateReconciler struct{}

func (templateReconciler) scope(pc *planContext, sc *scope) {
	for _, s := range specsOf[*TemplateSpec](pc.d, KindTemplate) {
		if s.Sync == vocab.SyncDisabled {
			continue
		}
		sc.guest(s.VMID)
		if pc.snap.Guest(s.VMID) == nil && s.Image != nil {
			node := nodeFor(pc, s.Node)
			if s.Image.Volume != "" {
				sc.storage(node, pvefields.StorageOf(s.Image.Volume))
			} else if s.Image.Storage != "" {
				sc.storage(node, s.Image.Storage)
			} else {
				sc.storage(node, importStorage(pc.snap, node))
			}
		}
	}
}

func templateGuestSpec(s *TemplateSpec, node string) *pvefields.GuestSpec {
	return &pvefields.GuestSpec{Kind: KindTemplate, Name: s.Name, VMID: s.VMID, Node: node, Tags: s.Tags,
		QemuHW: s.QemuHW, Description: s.Description, Agent: s.Agent,
		Disks: s.Disks, NICs: s.NICs, CloudInit: s.CloudInit}
}

func (r templateReconciler) plan(pc *planContext) []*Action {
	var out []*Action
	for _, s := range specsOf[*TemplateSpec](pc.d, KindTemplate) {
		out = append(out, r.planOne(pc, s))
	}
	out = append(out, pruneGuests(pc, KindTemplate, "qemu", func(g *Guest) bool { return g.Template })...)
	return out
}

func (templateReconciler) planOne(pc *planContext, s *TemplateSpec) *Action {
	node := nodeFor(pc, s.Node)
	a := baseAction(s.Meta, node, s.VMID)
	if s.VMID <= 0 && a.Sync != vocab.SyncDisabled {
		a.refuse("a Template needs a vmid")
		return a
	}
	g, done := guestGates(pc, a, KindTemplate, s.Meta, pc.snap.Guest(s.VMID))
	if done != nil {
		return done
	}
	a.Reason = ""
	if s.Invalid != "" {
		a.refuse(s.Invalid)
		return a
	}
	gs := templateGuestSpec(s, node)
	if g == nil {
		return planTemplateBuild(pc, s, gs, a)
	}
	a.Observed = observedSummary(g)
	if !g.Read {
		a.Status, a.Reason = vocab.StatusUnknown, fmt.Sprintf("configuration could not be read: %v", g.ReadErr)
		return a
	}
	if !g.Template {
		// An owned VM at the template's VMID: a build that stopped before
		// the conversion. Finish it.
		a.Action, a.Status = vocab.ActionUpdate, vocab.StatusOutOfSync
		a.Reason = "the build stopped before the conversion to a template: finishing it"
		a.Changes = []vocab.Change{{Field: "template", From: "0", To: "1"}}
		a.claim = claim{nodes: []string{g.Node}}
		a.run = func(ctx context.Context, x *execCtx) error { return x.finishTemplate(ctx, gs, g.Node, g.VMID) }
		return a
	}
	if disks := nonBaseDisks(g); len(disks) > 0 {
		// qemu-server's template call writes template: 1 first, then turns
		// the disks into base volumes one by one (QemuServer.pm
		// template_create): a task that failed in between leaves a template
		// whose disks cannot be linked-cloned. Convert what is left.
		a.Action, a.Status = vocab.ActionUpdate, vocab.StatusOutOfSync
		a.Reason = fmt.Sprintf("the conversion to a template stopped before %s became base volumes: finishing it", strings.Join(disks, ", "))
		for _, k := range disks {
			a.Changes = append(a.Changes, vocab.Change{Field: k, From: pvefields.ParseDisk(g.Current[k]).File, To: "base volume"})
		}
		a.claim = claim{nodes: []string{g.Node}}
		node, vmid := g.Node, g.VMID
		a.run = func(ctx context.Context, x *execCtx) error {
			for _, k := range disks {
				if err := x.task(ctx, fmt.Sprintf("converting %s of template %d to a base volume", k, vmid), func() (string, error) {
					return x.e.client.QemuTemplateDisk(ctx, node, vmid, k)
				}); err != nil {
					return err
				}
			}
			return nil
		}
		return a
	}
	d := diffGuest(gs, g)
	if a.Adopt {
		return planTemplateAdopt(a, d)
	}
	notes := adoptDiff(a, d) // an adopted template: what its adoption accepted is only noted
	a.Changes = d.Changes()
	if d.Empty() && len(d.Grown) > 0 {
		a.Status, a.Reason = vocab.StatusOutOfSync, joinReasons(append(append([]string(nil), d.Grown...), notes...))
		return a
	}
	if d.Empty() {
		a.Status, a.Reason = vocab.StatusSynced, joinReasons(append([]string{"in sync"}, notes...))
		return a
	}
	fields := make([]string, 0, len(a.Changes))
	for _, c := range a.Changes {
		fields = append(fields, strings.SplitN(c.Field, ".", 2)[0])
	}
	a.Status = vocab.StatusOutOfSync
	var reasons []string
	if len(fields) > 0 {
		reasons = append(reasons, fmt.Sprintf("the template differs from the manifest (%s); templates cannot be changed in place and existing clones keep their copy: delete the template to rebuild it, or give the new version another name and vmid",
			strings.Join(uniqStrings(fields), ", ")))
	}
	a.Reason = joinReasons(append(append(append(reasons, d.Refused...), d.Grown...), notes...))
	return a
}

// planTemplateBuild plans the build of a template that does not exist: a
// VM created from its image, converged, stopped and converted.
func planTemplateBuild(pc *planContext, s *TemplateSpec, gs *pvefields.GuestSpec, a *Action) *Action {
	node := a.Node
	a.Action, a.Status = vocab.ActionCreate, vocab.StatusOutOfSync
	if kind, ok := pc.declared[s.VMID]; ok && kind != vocab.Key(KindTemplate, s.Name) {
		a.refuse(fmt.Sprintf("VMID %d is also declared by %s", s.VMID, kind))
		return a
	}
	if s.Image == nil {
		a.refuse("a Template is built from an image: image.source is missing")
		return a
	}
	if reason := guestSpecRefusal(pc.snap, gs, node, false); reason != "" {
		a.refuse(reason)
		return a
	}
	img, err := resolveImage(pc.snap, node, s.Image)
	if err != nil {
		a.refuse(err.Error())
		return a
	}
	a.Reason = "the template does not exist"
	a.Changes = createChanges(gs, img.volid, img.volid, false)
	storages := []string{claimStorage(pc.snap, node, img.storage)}
	for _, d := range gs.Disks {
		storages = append(storages, claimStorage(pc.snap, node, d.Storage))
	}
	a.claim = claim{nodes: []string{node}, storages: storages}
	a.run = func(ctx context.Context, x *execCtx) error {
		if err := x.ensureImage(ctx, node, img); err != nil {
			return err
		}
		if err := x.task(ctx, fmt.Sprintf("creating VM %d from %s", s.VMID, img.volid), func() (string, error) {
			return x.e.client.QemuCreate(ctx, node, s.VMID, createParams(gs, s.VMID, img.volid))
		}); err != nil {
			return err
		}
		return x.finishTemplate(ctx, gs, node, s.VMID)
	}
	return a
}

// finishTemplate converges a freshly built VM (disk growth, cloud-init),
// stops it if it runs, and converts it.
func (x *execCtx) finishTemplate(ctx context.Context, gs *pvefields.GuestSpec, node string, vmid int) error {
	g, err := x.rereadGuest(ctx, node, vmid, true)
	if err != nil {
		return err
	}
	if err := x.applyDiff(ctx, gs, g, diffGuest(gs, g), updateOptions{state: "stopped"}); err != nil {
		return err
	}
	return x.task(ctx, fmt.Sprintf("converting VM %d to a template", vmid), func() (string, error) { return x.e.client.QemuTemplate(ctx, node, vmid) })
}

// nonBaseDisks lists a template's disks that are still ordinary VM volumes
// ("vm-<id>-disk-N"), not base volumes ("base-<id>-disk-N").
func nonBaseDisks(g *Guest) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(g.Current)) {
		if !pvefields.IsDiskKey(k) {
			continue
		}
		d := pvefields.ParseDisk(g.Current[k])
		if d.IsCdrom() || d.IsCloudInit() {
			continue
		}
		_, name, _ := strings.Cut(d.File, ":")
		if strings.HasPrefix(name, "vm-") || strings.Contains(name, "/vm-") {
			out = append(out, k)
		}
	}
	return out
}

// TemplateSpec is a desired Template: a VM built from an image and
// converted.
type TemplateSpec struct {
	Meta
	VMID int
	QemuHW
	Description string
	Agent       *bool
	Image       *ImageSpec
	Disks       []DiskSpec
	NICs        []NICSpec
	CloudInit   *CloudInitSpec
}

func templateFromManifest(t *manifest.Template, secrets SecretReader) *TemplateSpec {
	sp := t.Spec
	s := &TemplateSpec{Meta: metaOf(t), VMID: sp.VMID, QemuHW: qemuHW(sp.QemuHardware),
		Description: sp.Description, Agent: sp.Agent, Image: imageFromManifest(sp.Image),
		Disks: disksFromManifest(sp.Disks), NICs: nicsFromManifest(sp.Net)}
	ci, err := cloudInitFromManifest(sp.CloudInit, secrets)
	s.CloudInit = ci
	if err != nil {
		s.Invalid = err.Error()
	}
	return s
}
