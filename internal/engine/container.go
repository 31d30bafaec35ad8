package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// containerReconciler plans Container resources (LXC): create from a vztmpl
// volume, drift correction of what Proxmox changes on a running container
// (hostname, cores, memory, swap, onboot, tags, description, NICs, new
// mount points), pending changes reported or applied by a reboot, rootfs
// and mount point growth, power state, and prune of owned containers.
type containerReconciler struct{}

// readLxc reads a container's current and pending configuration in one
// request.
func (e *Engine) readLxc(ctx context.Context, g *Guest) error {
	entries, err := e.client.LxcPending(ctx, g.Node, g.VMID)
	if err != nil {
		var api *pve.APIError
		if errors.As(err, &api) && api.StatusCode == 501 {
			cfg, cerr := e.client.LxcConfig(ctx, g.Node, g.VMID)
			if cerr != nil {
				return fmt.Errorf("reading configuration of container %d: %w", g.VMID, cerr)
			}
			g.setConfig(cfg)
			return nil
		}
		return fmt.Errorf("reading configuration of container %d: %w", g.VMID, err)
	}
	g.setPending(entries)
	return nil
}

func (containerReconciler) scope(pc *planContext, sc *scope) {
	for _, s := range specsOf[*ContainerSpec](pc.d, KindContainer) {
		if s.Sync == vocab.SyncDisabled {
			continue
		}
		sc.declaredGuest(s.VMID, s.Firewall)
		if g := pc.snap.Guest(s.VMID); g != nil {
			sc.confirmPower(g, s.State)
			continue
		}
		node := nodeFor(pc, s.Node)
		switch {
		case declaredCTemplate(pc, s.Template):
		case strings.Contains(s.Template, ":"):
			sc.storage(node, pvefields.StorageOf(s.Template))
		default:
			for _, st := range pc.snap.StoragesOn(node) {
				if st.Accepts("vztmpl") {
					sc.storage(node, st.Storage)
				}
			}
		}
	}
}

func declaredCTemplate(pc *planContext, name string) bool {
	for _, t := range specsOf[*CTemplateSpec](pc.d, KindContainerTemplate) {
		if t.Name == name {
			return true
		}
	}
	return false
}

func (r containerReconciler) plan(pc *planContext) []*Action {
	var out []*Action
	for _, s := range specsOf[*ContainerSpec](pc.d, KindContainer) {
		out = append(out, planGuestHA(pc, planGuestFirewall(pc, planGuestPool(pc, r.planOne(pc, s), &s.Meta, s.Pool), s.Firewall), s.HA, "lxc"))
	}
	return append(out, pruneGuests(pc, KindContainer, "lxc", func(g *Guest) bool { return !g.Template })...)
}

// rootOnly lists what of the spec an API token cannot set.
func (s *ContainerSpec) rootOnly() []string {
	var out []string
	for _, m := range s.Mounts {
		if m.Bind != "" {
			out = append(out, fmt.Sprintf("bind mount %s (%s on %s)", m.Slot, m.Bind, m.Path))
		}
	}
	if s.Features != nil {
		if extra := nonNestingFeatures(*s.Features); len(extra) > 0 {
			out = append(out, "features "+strings.Join(extra, ", "))
		}
	}
	return out
}

// nonNestingFeatures lists the enabled features other than nesting.
func nonNestingFeatures(v string) []string {
	var out []string
	ps := pve.ParsePropertyString(v, "")
	for _, k := range ps.Keys {
		val := ps.Values[k]
		if k == "nesting" || val == "" || val == "0" {
			continue
		}
		if k == "mount" {
			out = append(out, "mount="+val)
			continue
		}
		out = append(out, k)
	}
	return out
}

func (r containerReconciler) planOne(pc *planContext, s *ContainerSpec) *Action {
	node := nodeFor(pc, s.Node)
	a := baseAction(s.Meta, node, s.VMID)
	g, done := guestGates(pc, a, KindContainer, s.Meta, pc.snap.Guest(s.VMID))
	if done != nil {
		return done
	}
	if s.Invalid != "" {
		a.refuse(s.Invalid)
		return a
	}
	r.dependencies(pc, s, a, a.Node) // the guest's own node once it exists
	uo := updateOptions{state: s.State, rebootIfNeeded: s.ApplyMode == "reboot", shutdownTimeout: s.ShutdownTimeout}
	if g == nil {
		return pc.planProvision(r.planCreate(pc, s, a, node, uo), s.Provision, nil, s.State, false)
	}
	a.Observed = observedSummary(g)
	markHA(a, g)
	if !g.Read {
		a.Status, a.Reason = vocab.StatusUnknown, "configuration not read"
		if g.ReadErr != nil {
			a.Reason = fmt.Sprintf("configuration could not be read: %v", g.ReadErr)
		}
		return a
	}
	d := diffContainer(s, g)
	notes := adoptDiff(a, d.Diff)
	planGuestUpdate(a, g, d.Diff, d.needsReboot(), uo, guestWords{it: "the container", restart: "restart", restarts: "restarts"})
	finishAdopt(a, notes)
	if a.Action != vocab.ActionNone {
		a.claim = claim{nodes: []string{g.Node}, storages: ctDiffStorages(pc, g, d)}
		a.run = func(ctx context.Context, x *execCtx) error { return x.applyCTDiff(ctx, g, d, uo) }
	}
	return pc.planProvision(a, s.Provision, g, s.State, a.Action == vocab.ActionReboot)
}

// dependencies orders a container after the networks and SDN vnets it
// uses as bridges.
func (containerReconciler) dependencies(pc *planContext, s *ContainerSpec, a *Action, node string) {
	a.DependsOn = append(a.DependsOn, bridgeNeeds(pc, &s.Meta, node)...)
}

// ctDiff is everything that differs between a ContainerSpec and a
// container: a pvefields.Diff whose restart matters only while it runs.
type ctDiff struct {
	*pvefields.Diff
	running bool
}

func (d *ctDiff) needsReboot() bool {
	return d.running && d.Diff.NeedsReboot()
}

// diffContainer compares s with the container's effective configuration.
func diffContainer(s *ContainerSpec, g *Guest) *ctDiff {
	return &ctDiff{Diff: pvefields.DiffCT(&s.ContainerConfig, s.Tags, g.observed()), running: g.Running()}
}

func orStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ctDiffStorages names the storages an update touches.
func ctDiffStorages(pc *planContext, g *Guest, d *ctDiff) []string {
	var out []string
	for _, c := range d.Config {
		if c.Async {
			out = append(out, claimStorage(pc.snap, g.Node, pvefields.StorageOf(c.Value)))
		}
	}
	for _, r := range d.Resizes {
		vol := pve.ParsePropertyString(g.Effective[r.Slot], "volume").Values["volume"]
		out = append(out, claimStorage(pc.snap, g.Node, pvefields.StorageOf(vol)))
	}
	return out
}

// ctCreateParams renders a ContainerSpec as the parameters of POST /lxc,
// from pvefields' container table.
func ctCreateParams(s *ContainerSpec, ostemplate string) *pve.Params {
	p := pve.NewParams()
	p.Set("ostemplate", ostemplate)
	pvefields.CTCreateParams(&s.ContainerConfig, s.Tags, s.VMID, p)
	if s.Pool != "" {
		p.Set("pool", s.Pool)
	}
	return p
}

func (r containerReconciler) planCreate(pc *planContext, s *ContainerSpec, a *Action, node string, uo updateOptions) *Action {
	a.Action, a.Status = vocab.ActionCreate, vocab.StatusOutOfSync
	if kind, ok := pc.declared[s.VMID]; ok && kind != vocab.Key(KindContainer, s.Name) {
		a.refuse(fmt.Sprintf("VMID %d is also declared by %s", s.VMID, kind))
		return a
	}
	if ro := s.rootOnly(); len(ro) > 0 {
		a.refuse(fmt.Sprintf("the container cannot be created with %s: %s", strings.Join(ro, " and "), pvefields.RootOnlyNote))
		return a
	}
	if s.RootFS.Storage == "" {
		a.refuse("rootfs.storage is missing")
		return a
	}
	reasons := []string{nodeRefusal(pc.snap, node), storageRefusal(pc.snap, node, s.RootFS.Storage, "rootdir")}
	for _, m := range s.Mounts {
		reasons = append(reasons, storageRefusal(pc.snap, node, m.Storage, "rootdir"))
	}
	if strings.Contains(s.Template, ":") {
		reasons = append(reasons, storageRefusal(pc.snap, node, pvefields.StorageOf(s.Template), ""))
	}
	if reason := firstRefusal(reasons...); reason != "" {
		a.refuse(reason)
		return a
	}
	volid, err := ctemplateVolume(pc, node, s.Template)
	if err != nil {
		a.refuse(err.Error())
		return a
	}
	a.DependsOn = append(a.DependsOn, s.needs(KindContainerTemplate)...)
	a.Reason = "the container does not exist"
	ch := []vocab.Change{{Field: "vmid", To: strconv.Itoa(s.VMID)}, {Field: "template", Path: "spec.template", To: volid}}
	ch = append(ch, pvefields.CTPreview(&s.ContainerConfig, s.Tags, s.VMID)...)
	if s.State != "" {
		ch = append(ch, vocab.Change{Field: "state", Path: "spec.state", To: s.State})
	}
	a.Changes = ch
	storages := []string{claimStorage(pc.snap, node, s.RootFS.Storage)}
	for _, m := range s.Mounts {
		if m.Storage != "" {
			storages = append(storages, claimStorage(pc.snap, node, m.Storage))
		}
	}
	a.claim = claim{nodes: []string{node}, storages: storages}
	a.run = func(ctx context.Context, x *execCtx) error {
		params := ctCreateParams(s, volid)
		if err := x.ctProvisionKey(ctx, params, s); err != nil {
			return err
		}
		if err := x.task(ctx, fmt.Sprintf("creating container %d from %s", s.VMID, volid), func() (string, error) {
			return x.e.client.LxcCreate(ctx, node, s.VMID, params)
		}); err != nil {
			return err
		}
		g, err := x.rereadContainer(ctx, node, s.VMID)
		if err != nil {
			return err
		}
		return x.applyCTDiff(ctx, g, diffContainer(s, g), uo)
	}
	return a
}

// rereadContainer reads a container's configuration again after a
// create. It is stopped: pve-container starts a new container only when
// asked to (create_vm's start=1, which proxmops never sends).
func (x *execCtx) rereadContainer(ctx context.Context, node string, vmid int) (*Guest, error) {
	g := &Guest{VMID: vmid, Type: "lxc", Node: node, fresh: true, Status: "stopped"}
	if err := x.e.readLxc(ctx, g); err != nil {
		return nil, err
	}
	g.nameFromConfig()
	g.ownTags()
	return g, nil
}

// applyCTDiff carries out a ctDiff on a container.
func (x *execCtx) applyCTDiff(ctx context.Context, g *Guest, d *ctDiff, uo updateOptions) error {
	node, vmid := g.Node, g.VMID
	c := x.e.client
	params := pve.NewParams()
	var deletes []string
	for _, ch := range d.Config {
		switch {
		case ch.Key == "":
		case ch.Del:
			deletes = append(deletes, ch.Key)
		default:
			params.Set(ch.Key, ch.Value)
		}
	}
	if len(deletes) > 0 {
		params.Set("delete", strings.Join(deletes, ","))
	}
	if params.Len() > 0 {
		x.progress("updating configuration", "", -1)
		if err := c.LxcSetConfig(ctx, node, vmid, params); err != nil {
			return fmt.Errorf("updating configuration of container %d: %w", vmid, err)
		}
	}
	for _, r := range d.Resizes {
		if err := x.task(ctx, fmt.Sprintf("growing %s to %s", r.Slot, pvefields.FormatSize(r.To)), func() (string, error) {
			return c.LxcResize(ctx, node, vmid, r.Slot, pvefields.FormatSize(r.To))
		}); err != nil {
			return err
		}
	}
	return x.convergePower(ctx, uo, g.Running(), g.fresh, d.needsReboot(), d.Refused,
		x.power(ctx, lxcCalls(c), node, vmid, g, uo.shutdownTimeout))
}

// destroyContainer stops an owned container and deletes it, checking
// ownership again on the cluster first.
func (x *execCtx) destroyContainer(ctx context.Context, node string, vmid int) error {
	_, err := x.destroyOwned(ctx, node, vmid, lxcCalls(x.e.client))
	return err
}

// ContainerSpec is a desired LXC container.
type ContainerSpec struct {
	Meta
	VMID     int
	Pool     string            // resource pool ("" leaves the container's pool alone)
	HA       *manifest.GuestHA // nil leaves the container's HA resource alone
	Template string            // a ContainerTemplate's name, a volume id or an appliance name
	// ContainerConfig is what the field table reads (hostname, cores,
	// volumes, NICs, ...).
	pvefields.ContainerConfig
	State     string
	ApplyMode string
	// Provision is spec.provision (nil when absent).
	Provision       *ProvisionSpec
	ShutdownTimeout time.Duration
	Snapshots       *SnapshotPolicy    // nil: no snapshots before changes
	Firewall        *GuestFirewallSpec // nil leaves the container's firewall alone
}

func containerFromManifest(c *manifest.Container, secrets SecretReader) *ContainerSpec {
	sp := c.Spec
	s := &ContainerSpec{Meta: metaOf(c), VMID: sp.VMID, Template: sp.Template, Pool: sp.Pool, HA: sp.HA, State: string(sp.State),
		ContainerConfig: pvefields.ContainerConfig{Hostname: sp.Hostname,
			OSType: sp.OSType, Arch: sp.Arch, Cores: sp.Cores, Memory: sp.Memory, Swap: sp.Swap,
			Nameserver: strings.Join(strings.Fields(sp.Nameserver), " "), SearchDomain: strings.Join(strings.Fields(sp.SearchDomain), " "),
			SSHKeys: sp.SSHKeys, OnBoot: sp.OnBoot, Description: sp.Description, Timezone: sp.Timezone,
			Unprivileged: sp.Unprivileged == nil || *sp.Unprivileged}}
	s.Firewall = guestFirewallFromManifest(sp.Firewall, nicFirewalls(sp.Net, func(n manifest.ContainerNIC) bool { return n.Firewall }), s.Meta)
	if s.Hostname == "" {
		s.Hostname = s.Name
	}
	if s.State == "" {
		s.State = string(manifest.StateRunning)
	}
	if sp.ApplyMode == manifest.ApplyReboot {
		s.ApplyMode = "reboot"
	}
	s.Snapshots = snapshotPolicy(sp.Snapshots)
	if sp.CPULimit > 0 {
		s.CPULimit = strconv.FormatFloat(sp.CPULimit, 'f', -1, 64)
	}
	if sp.Startup != nil {
		s.Startup = sp.Startup.String()
	}
	if sp.RootFS != nil {
		r := sp.RootFS
		s.RootFS = MountSpec{Slot: "rootfs", Storage: r.Storage, Size: r.Size.Bytes, MountOptions: r.MountOptions, ACL: r.ACL, Quota: r.Quota}
	}
	for _, m := range sp.Mountpoints {
		s.Mounts = append(s.Mounts, MountSpec{Slot: m.Slot, Path: m.Path, Storage: m.Storage, Size: m.Size.Bytes,
			Bind: m.Bind, ReadOnly: m.ReadOnly, Backup: m.Backup, Shared: m.Shared, MountOptions: m.MountOptions,
			ACL: m.ACL, Quota: m.Quota})
	}
	for _, n := range sp.Net {
		nic := CTNICSpec{Slot: n.Slot, Name: n.Name, Bridge: n.Bridge, IP: n.IP, Gw: n.Gw, IP6: n.IP6, Gw6: n.Gw6,
			Tag: n.Tag, Firewall: n.Firewall, HWAddr: strings.ToUpper(n.HWAddr), MTU: n.MTU}
		if nic.Name == "" {
			nic.Name = "eth" + strings.TrimPrefix(n.Slot, "net")
		}
		if n.Rate > 0 {
			nic.Rate = strconv.FormatFloat(n.Rate, 'f', -1, 64)
		}
		s.NICs = append(s.NICs, nic)
	}
	if sp.Features != nil {
		f := sp.Features.String()
		s.Features = &f
	}
	if prov, err := provisionFromManifest(c, sp.Provision); err != nil {
		s.Invalid = err.Error()
	} else {
		s.Provision = prov
	}
	if sp.PasswordFrom != nil {
		pw, err := secrets(sp.PasswordFrom)
		if err != nil {
			s.Invalid = "passwordFrom: " + err.Error()
		} else {
			s.Password, s.PasswordSet = pw, true
		}
	}
	return s
}
