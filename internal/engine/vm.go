package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// vmReconciler plans VirtualMachine resources and prunes owned VMs that are
// no longer declared.
type vmReconciler struct{}

// nodeFor picks a resource's node: the declared one, else the first node.
func nodeFor(pc *planContext, node string) string {
	if node != "" {
		return node
	}
	if len(pc.snap.Nodes) > 0 {
		return pc.snap.Nodes[0]
	}
	return ""
}

// findVM locates the guest of a VM spec: by VMID, or by name among owned
// VMs when no VMID is declared.
func findVM(pc *planContext, s *VMSpec) *Guest {
	if s.VMID > 0 {
		return pc.snap.Guest(s.VMID)
	}
	var found *Guest
	for _, g := range pc.snap.Guests {
		if g.Type == "qemu" && g.Owned && !g.Template && g.Name == s.Name {
			if found == nil || g.VMID < found.VMID {
				found = g
			}
		}
	}
	if found != nil {
		return found
	}
	// A clone proxmops made under an allocated VMID whose tagging failed:
	// adopted by adoptUntagged rather than cloned a second time.
	for _, g := range pc.snap.Guests {
		if g.Type == "qemu" && !g.Owned && !g.Template && g.Lock == "" && g.Name == s.Name && (found == nil || g.VMID < found.VMID) {
			if upid, err := pc.guestMadeByUs(g.VMID); err == nil && upid != "" {
				found = g
			}
		}
	}
	return found
}

func (vmReconciler) scope(pc *planContext, sc *scope) {
	for _, s := range specsOf[*VMSpec](pc.d, KindVirtualMachine) {
		if s.Sync == vocab.SyncDisabled {
			continue
		}
		node := nodeFor(pc, s.Node)
		g := findVM(pc, s)
		if g != nil {
			sc.declaredGuest(g.VMID, s.Firewall)
			sc.confirmPower(g, s.State)
			node = g.Node // moved by HA or a migration: what it needs is read where it is
		}
		if ref := s.FromTemplate; ref != nil && pc.tpls[ref.Name] == nil {
			// pvestatd names a new template only in its next report, and
			// shows a renamed one (or a VM just made a template) under its
			// old name and flag until then: a clone's source is looked up
			// in the configurations of the guests it has not reported and,
			// before a clone, of every template and namesake.
			missing := pc.snap.TemplateByName(ref.Name) == nil
			for _, u := range pc.snap.Guests {
				if u.Type == "qemu" && (u.Status == statusUnknown && (missing || g == nil) || g == nil && (u.Template || u.Name == ref.Name)) {
					sc.guest(u.VMID)
				}
			}
		}
		if g == nil && s.FromTemplate != nil {
			// A clone to another node: its template's volumes decide
			// whether Proxmox allows it.
			if tplNode, tplVMID := cloneSource(pc, s.FromTemplate.Name); tplVMID > 0 && tplNode != node {
				sc.guest(tplVMID)
			}
		}
		if g == nil && s.Image != nil {
			if s.Image.Volume != "" {
				sc.storage(node, pvefields.StorageOf(s.Image.Volume))
			} else if st := s.Image.Storage; st != "" {
				sc.storage(node, st)
			} else {
				sc.storage(node, importStorage(pc.snap, node))
			}
		}
		if s.UserData != "" {
			sc.storage(node, isoStorage(pc.snap, node))
		}
	}
}

// vmGuestSpec turns a VMSpec into the shared guest shape.
func vmGuestSpec(pc *planContext, s *VMSpec, node string) (*pvefields.GuestSpec, error) {
	gs := &pvefields.GuestSpec{Kind: KindVirtualMachine, Name: s.Name, VMID: s.VMID, Node: node, Tags: s.Tags,
		QemuHW: s.QemuHW, Description: s.Description, OnBoot: s.OnBoot, Startup: s.Startup, Agent: s.Agent,
		Balloon: s.Balloon, Disks: s.Disks, NICs: s.NICs,
		CloudInit: s.CloudInit, UserData: s.UserData, Pool: s.Pool}
	ci, err := pc.withProvisionKey(s)
	if err != nil {
		return nil, err
	}
	gs.CloudInit = ci
	if s.Iso != "" {
		if iso, ok := pc.isos[s.Iso]; ok {
			vol, err := isoVolume(iso)
			if err != nil {
				return nil, err
			}
			gs.ISOVolume = vol
		} else if strings.Contains(s.Iso, ":") {
			gs.ISOVolume = s.Iso
		} else {
			return nil, fmt.Errorf("iso %q is neither a declared Iso nor a volume id", s.Iso)
		}
	}
	if s.UserData != "" {
		gs.CidataStorage = isoStorage(pc.snap, node)
		if gs.CidataStorage == "" {
			return nil, fmt.Errorf("no storage on node %s accepts iso content for the cloud-init seed", node)
		}
	}
	return gs, nil
}

func (r vmReconciler) plan(pc *planContext) []*Action {
	var out []*Action
	for _, s := range specsOf[*VMSpec](pc.d, KindVirtualMachine) {
		out = append(out, planGuestHA(pc, planGuestFirewall(pc, planGuestPool(pc, r.planOne(pc, s), &s.Meta, s.Pool), s.Firewall), s.HA, "qemu"))
	}
	out = append(out, pruneGuests(pc, KindVirtualMachine, "qemu", func(g *Guest) bool { return !g.Template })...)
	return out
}

// baseAction fills what every action of a declared resource carries.
func baseAction(m Meta, node string, vmid int) *Action {
	sync := m.Sync
	if !sync.Valid() { // not set
		sync = vocab.SyncAuto
	}
	return &Action{Kind: m.Kind, Name: m.Name, Node: node, VMID: vmid, Action: vocab.ActionNone, Sync: sync, File: m.File, paths: m.paths, declaredNode: m.Node}
}

func observedSummary(g *Guest) map[string]any {
	if g == nil {
		return nil
	}
	cfg := map[string]any{}
	for k, v := range g.Effective {
		if k == "digest" || k == "cipassword" {
			continue
		}
		cfg[k] = v
	}
	obs := map[string]any{"config": cfg, "status": g.Status, "node": g.Node, "vmid": g.VMID}
	if len(g.Pending) > 0 {
		obs["pending"] = g.Pending
	}
	return obs
}

// unfinished reports a guest whose create or clone has not ended.
// Proxmox writes a config holding only "lock: create" (or "lock: clone")
// before the task starts and the whole config, tags included, at its end
// (qemu-server API2/Qemu.pm create_vm and clone_vm, pve-container
// API2/LXC.pm): until then nobody can tell whose guest it is. A failed
// task removes the guest; a node that crashed meanwhile leaves it locked.
func unfinished(a *Action, g *Guest) bool {
	if g.Lock != "create" && g.Lock != "clone" {
		return false
	}
	a.Status = vocab.StatusProgressing
	a.Reason = fmt.Sprintf("VMID %d is locked (%s) by an unfinished task; looked at again next pass (if no task runs for it, its node stopped it: remove the guest by hand)", g.VMID, g.Lock)
	return true
}

func (r vmReconciler) planOne(pc *planContext, s *VMSpec) *Action {
	node := nodeFor(pc, s.Node)
	a := baseAction(s.Meta, node, s.VMID)
	g, done := guestGates(pc, a, KindVirtualMachine, s.Meta, findVM(pc, s))
	if done != nil {
		return done
	}
	if s.Invalid != "" {
		a.refuse(s.Invalid)
		return a
	}
	// a.Node is the guest's own node once it exists (placeOn): its
	// cloud-init seed goes to a storage that node can read.
	gs, err := vmGuestSpec(pc, s, a.Node)
	if err != nil {
		a.refuse(err.Error())
		if g == nil {
			a.Action = vocab.ActionCreate
		}
		return a
	}
	a.DependsOn = append(a.DependsOn, s.needs(KindIso)...)
	a.DependsOn = append(a.DependsOn, bridgeNeeds(pc, &s.Meta, a.Node)...)
	uo := updateOptions{state: s.State, rebootIfNeeded: s.ApplyMode == "reboot", shutdownTimeout: s.ShutdownTimeout}
	if g == nil {
		return pc.planProvision(r.planCreate(pc, s, gs, a, uo), s.Provision, nil, s.State, false)
	}
	a.Observed = observedSummary(g)
	markHA(a, g)
	a.Owned = true
	a.wantRunning = s.State == "running"
	if !g.Read {
		a.Status, a.Reason = vocab.StatusUnknown, fmt.Sprintf("configuration could not be read: %v", g.ReadErr)
		return a
	}
	d := diffGuest(gs, g)
	notes := adoptDiff(a, d)
	planUpdate(a, g, d, uo)
	finishAdopt(a, notes)
	if reason := diffRefusal(pc.snap, g.Node, d); reason != "" && a.Action != vocab.ActionNone {
		if a.Adopt {
			// Failed, but the adoption's tag-only step stays: the guest is
			// adopted and its changes are refused by the next pass.
			a.Status, a.Reason = vocab.StatusFailed, reason
			return a
		}
		a.refuse(reason)
		return a
	}
	if a.Action != vocab.ActionNone {
		a.claim = claim{nodes: []string{g.Node}, storages: diffStorages(pc, g, gs, d)}
		a.run = func(ctx context.Context, x *execCtx) error {
			return x.applyDiff(ctx, gs, g, d, uo)
		}
	}
	return pc.planProvision(a, s.Provision, g, s.State, a.Action == vocab.ActionReboot || a.NeedsReboot && uo.rebootIfNeeded)
}

// planUpdate fills an action from a diff of an existing VM.
func planUpdate(a *Action, g *Guest, d *pvefields.Diff, uo updateOptions) {
	planGuestUpdate(a, g, d, d.NeedsReboot(), uo, guestWords{it: "the VM", restart: "reboot", restarts: "reboots"})
}

func uniqStrings(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// diffStorages names the storages an update touches.
func diffStorages(pc *planContext, g *Guest, gs *pvefields.GuestSpec, d *pvefields.Diff) []string {
	node := g.Node
	var out []string
	for _, c := range d.Config {
		if c.Async {
			out = append(out, claimStorage(pc.snap, node, pvefields.StorageOf(c.Value)))
		}
	}
	for _, r := range d.Resizes {
		out = append(out, claimStorage(pc.snap, node, pvefields.StorageOf(pvefields.ParseDisk(g.Effective[r.Slot]).File)))
	}
	if d.Cidata != nil {
		out = append(out, claimStorage(pc.snap, node, gs.CidataStorage))
	}
	return out
}

// createChanges previews a new guest from pvefields' qemu table. importFrom is the
// boot disk's import source.
func createChanges(gs *pvefields.GuestSpec, source, importFrom string, clone bool) []vocab.Change {
	ch := []vocab.Change{}
	if gs.VMID > 0 {
		ch = append(ch, vocab.Change{Field: "vmid", To: strconv.Itoa(gs.VMID)})
	}
	ch = append(ch, vocab.Change{Field: "source", To: source})
	for _, c := range pvefields.QemuPreview(gs, importFrom) {
		// A clone without declared disks boots from the template's disk, and
		// may have the template's cloud-init drive: they show once it exists.
		if clone && (c.Field == "boot" && (len(gs.Disks) == 0 || gs.Disks[0].Slot == "") || c.Field == "cloudinit drive") {
			continue
		}
		ch = append(ch, c)
	}
	return ch
}

func (r vmReconciler) planCreate(pc *planContext, s *VMSpec, gs *pvefields.GuestSpec, a *Action, uo updateOptions) *Action {
	a.Action, a.Status = vocab.ActionCreate, vocab.StatusOutOfSync
	if s.VMID > 0 {
		if kind, ok := pc.declared[s.VMID]; ok && kind != vocab.Key(KindVirtualMachine, s.Name) {
			a.refuse(fmt.Sprintf("VMID %d is also declared by %s", s.VMID, kind))
			return a
		}
	}
	if s.FromTemplate == nil {
		if reason := guestSpecRefusal(pc.snap, gs, a.Node, false); reason != "" {
			a.refuse(reason)
			return a
		}
	}
	switch {
	case s.FromTemplate != nil:
		return r.planClone(pc, s, gs, a, uo)
	case s.Image != nil:
		img, err := resolveImage(pc.snap, a.Node, s.Image)
		if err != nil {
			a.refuse(err.Error())
			return a
		}
		src := img.volid
		if img.url != "" && !img.present {
			src = img.url + " (downloaded to " + img.volid + ")"
		}
		a.Reason = "the VM does not exist"
		a.Changes = createChanges(gs, src, img.volid, false)
		storages := []string{claimStorage(pc.snap, a.Node, img.storage)}
		for _, d := range gs.Disks {
			storages = append(storages, claimStorage(pc.snap, a.Node, d.Storage))
		}
		a.claim = claim{nodes: []string{a.Node}, storages: storages}
		node := a.Node
		a.run = func(ctx context.Context, x *execCtx) error {
			if err := x.ensureImage(ctx, node, img); err != nil {
				return err
			}
			vmid, err := x.allocateVMID(ctx, s.VMID)
			if err != nil {
				return err
			}
			if err := x.task(ctx, fmt.Sprintf("creating VM %d from %s", vmid, img.volid), func() (string, error) {
				return x.e.client.QemuCreate(ctx, node, vmid, createParams(gs, vmid, img.volid))
			}); err != nil {
				return err
			}
			return x.converge(ctx, gs, node, vmid, uo)
		}
		return a
	default:
		a.Reason = "the VM does not exist"
		a.Changes = createChanges(gs, "blank disks", "", false)
		storages := []string{}
		for _, d := range gs.Disks {
			storages = append(storages, claimStorage(pc.snap, a.Node, d.Storage))
		}
		a.claim = claim{nodes: []string{a.Node}, storages: storages}
		node := a.Node
		a.run = func(ctx context.Context, x *execCtx) error {
			vmid, err := x.allocateVMID(ctx, s.VMID)
			if err != nil {
				return err
			}
			if err := x.task(ctx, fmt.Sprintf("creating VM %d", vmid), func() (string, error) { return x.e.client.QemuCreate(ctx, node, vmid, createParams(gs, vmid, "")) }); err != nil {
				return err
			}
			return x.converge(ctx, gs, node, vmid, uo)
		}
		return a
	}
}

func (r vmReconciler) planClone(pc *planContext, s *VMSpec, gs *pvefields.GuestSpec, a *Action, uo updateOptions) *Action {
	ref := s.FromTemplate
	tplNode, tplVMID := "", 0
	a.DependsOn = append(a.DependsOn, s.needs(KindTemplate)...)
	if tpl, ok := pc.tpls[ref.Name]; ok {
		tplNode, tplVMID = nodeFor(pc, tpl.Node), tpl.VMID
		if g := pc.snap.Guest(tpl.VMID); g != nil {
			tplNode = g.Node
		}
	} else if g := pc.snap.TemplateByName(ref.Name); g != nil {
		tplNode, tplVMID = g.Node, g.VMID
	} else {
		a.refuse(fmt.Sprintf("template %q is neither declared nor on the cluster", ref.Name))
		return a
	}
	if tplVMID == 0 {
		a.refuse(fmt.Sprintf("template %q has no VMID", ref.Name))
		return a
	}
	if reason := r.cloneRefusal(pc, ref, gs, tplNode, tplVMID, a.Node); reason != "" {
		a.refuse(reason)
		return a
	}
	kind := "full"
	if ref.Linked {
		kind = "linked"
	}
	a.Reason = "the VM does not exist"
	a.Changes = createChanges(gs, fmt.Sprintf("%s clone of template %s (%d)", kind, ref.Name, tplVMID), "", true)
	node := a.Node
	storages := []string{}
	if len(gs.Disks) > 0 && !ref.Linked {
		storages = append(storages, claimStorage(pc.snap, node, gs.Disks[0].Storage))
	}
	a.claim = claim{nodes: []string{tplNode, node}, storages: storages}
	desc := cloneDescription(pc, ref.Name, tplVMID, gs.Description)
	a.run = func(ctx context.Context, x *execCtx) error {
		vmid, err := x.allocateVMID(ctx, s.VMID)
		if err != nil {
			return err
		}
		full := !ref.Linked
		o := pve.CloneOptions{NewID: vmid, Name: s.Name, Full: &full, Description: desc, Pool: gs.Pool}
		if full && len(gs.Disks) > 0 && gs.Disks[0].Storage != "" {
			o.Storage = gs.Disks[0].Storage
		}
		if node != tplNode {
			o.Target = node
		}
		if err := x.task(ctx, fmt.Sprintf("cloning template %s (%d) to VM %d", ref.Name, tplVMID, vmid), func() (string, error) { return x.e.client.QemuClone(ctx, tplNode, tplVMID, o) }); err != nil {
			return err
		}
		// Own the clone with its first configuration write: a template
		// proxmops did not build carries no ownership tag, and a clone
		// without it would be a Conflict.
		own := pve.NewParams().Set("tags", strings.Join(gs.WantTags(), ";"))
		if desc == "" {
			// Nothing to give the clone in its clone call: the template's
			// description, if any, is only proxmops' records of the template.
			own.Set("delete", "description")
		}
		uo.own = own
		return x.converge(ctx, gs, node, vmid, uo)
	}
	return a
}

// cloneDescription is the description a clone starts with: the
// manifest's, else the template's own text without proxmops' record
// lines (qemu-server API2/Qemu.pm clone_vm copies the source's
// description unless one is given, and the template's records, such as
// its provisioning run or its adoption, are not true of the clone).
func cloneDescription(pc *planContext, tplName string, tplVMID int, want string) string {
	if want != "" {
		return want
	}
	if g := pc.snap.Guest(tplVMID); g != nil && g.Read {
		return g.Effective["description"] // records split off at observation
	}
	if tpl, ok := pc.tpls[tplName]; ok {
		return tpl.Description
	}
	return ""
}

// cloneSource finds a template's node and VMID: declared, else on the
// cluster by name (0 when neither).
func cloneSource(pc *planContext, name string) (string, int) {
	if tpl, ok := pc.tpls[name]; ok {
		node := nodeFor(pc, tpl.Node)
		if g := pc.snap.Guest(tpl.VMID); g != nil {
			node = g.Node
		}
		return node, tpl.VMID
	}
	if g := pc.snap.TemplateByName(name); g != nil {
		return g.Node, g.VMID
	}
	return "", 0
}

// cloneRefusal foresees Proxmox's refusal of a clone (see refusal.go).
func (vmReconciler) cloneRefusal(pc *planContext, ref *TemplateRef, gs *pvefields.GuestSpec, tplNode string, tplVMID int, node string) string {
	if reason := guestSpecRefusal(pc.snap, gs, node, true); reason != "" {
		return reason
	}
	storage := ""
	if !ref.Linked && len(gs.Disks) > 0 {
		storage = gs.Disks[0].Storage
	}
	var volumes []string
	if g := pc.snap.Guest(tplVMID); g != nil && g.Read {
		volumes = guestVolumeIDs(g.Effective)
	} else if tpl, ok := pc.tpls[ref.Name]; ok && g == nil {
		volumes = specVolumes(templateGuestSpec(tpl, tplNode))
	}
	return cloneRefusal(pc.snap, tplNode, node, storage, volumes)
}

// allocateVMID returns the declared VMID, or asks the cluster for one.
func (x *execCtx) allocateVMID(ctx context.Context, declared int) (int, error) {
	if declared > 0 {
		return declared, nil
	}
	id, err := x.e.client.NextID(ctx)
	if err != nil {
		return 0, fmt.Errorf("allocating a VMID: %w", err)
	}
	return id, nil
}

// converge re-reads a guest just created or cloned and applies what still
// differs (disk growth, cloud-init, seed, power state), with uo.own in its
// first write.
func (x *execCtx) converge(ctx context.Context, gs *pvefields.GuestSpec, node string, vmid int, uo updateOptions) error {
	g, err := x.rereadGuest(ctx, node, vmid, false)
	if err != nil {
		if uo.own != nil && !pve.IsUnknownOutcome(err) {
			if oerr := x.e.client.QemuSetConfig(ctx, node, vmid, uo.own); oerr != nil {
				x.e.log.Warn("could not tag the guest as owned", "vmid", vmid, "error", oerr)
			}
		}
		return err
	}
	if uo.own != nil {
		g.assume(uo.own)
	}
	d := diffGuest(gs, g)
	return x.applyDiff(ctx, gs, g, d, uo)
}

// VMSpec is a desired VirtualMachine.
type VMSpec struct {
	Meta
	VMID int
	QemuHW
	Description  string
	Pool         string            // resource pool ("" leaves the guest's pool alone)
	HA           *manifest.GuestHA // nil leaves the guest's HA resource alone
	OnBoot       *bool
	Startup      string
	Agent        *bool
	Balloon      *int
	Image        *ImageSpec
	FromTemplate *TemplateRef
	Disks        []DiskSpec
	NICs         []NICSpec
	CloudInit    *CloudInitSpec
	UserData     string
	// Iso names a declared Iso resource (or a volume id) attached as cdrom.
	Iso             string
	ApplyMode       string // "" or "reboot"
	State           string // "", "running", "stopped"
	ShutdownTimeout time.Duration
	// Provision is spec.provision (nil when absent).
	Provision *ProvisionSpec
	Snapshots *SnapshotPolicy // nil: no snapshots before changes
	// AgentHealthCheck is spec.healthCheck.agent: the daemon asks the
	// guest agent (agent/ping), which takes a privilege of its own.
	AgentHealthCheck bool
	Firewall         *GuestFirewallSpec // nil leaves the guest's firewall alone
}

func vmFromManifest(v *manifest.VirtualMachine, secrets SecretReader) *VMSpec {
	sp := v.Spec
	s := &VMSpec{Meta: metaOf(v), VMID: sp.VMID, QemuHW: qemuHW(sp.QemuHardware),
		Description: sp.Description, Pool: sp.Pool, HA: sp.HA, OnBoot: sp.OnBoot, Agent: sp.Agent, Balloon: sp.Balloon,
		Image: imageFromManifest(sp.Image), Disks: disksFromManifest(sp.Disks), NICs: nicsFromManifest(sp.Net),
		UserData: sp.UserData, Iso: sp.ISO, State: string(sp.State),
		AgentHealthCheck: sp.HealthCheck != nil && sp.HealthCheck.Agent}
	s.Firewall = guestFirewallFromManifest(sp.Firewall, nicFirewalls(sp.Net, func(n manifest.NIC) bool { return n.Firewall }), s.Meta)
	if sp.Startup != nil {
		s.Startup = sp.Startup.String()
	}
	if sp.FromTemplate != nil {
		s.FromTemplate = &TemplateRef{Name: sp.FromTemplate.Name, Linked: sp.FromTemplate.Linked}
		// The loader numbers an unslotted first disk scsi0 (and leaves no trace
		// of whether the manifest wrote it); on a clone the first disk means
		// "the template's boot disk", matched through the boot order, which
		// is scsi0 itself whenever the template boots from scsi0.
		if len(s.Disks) > 0 && s.Disks[0].Slot == "scsi0" {
			s.Disks[0].Slot = ""
		}
	}
	if sp.ApplyMode == manifest.ApplyReboot {
		s.ApplyMode = "reboot"
	}
	s.Snapshots = snapshotPolicy(sp.Snapshots)
	if s.State == "" {
		s.State = string(manifest.StateRunning)
	}
	ci, err := cloudInitFromManifest(sp.CloudInit, secrets)
	s.CloudInit = ci
	if err != nil {
		s.Invalid = err.Error()
	}
	if s.Provision, err = provisionFromManifest(v, sp.Provision); err != nil && s.Invalid == "" {
		s.Invalid = err.Error()
	}
	return s
}
