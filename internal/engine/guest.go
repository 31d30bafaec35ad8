package engine

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/cloudinit"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// guestSpec is the configuration VirtualMachine and Template share.
type guestSpec struct {
	kind, name string
	vmid       int
	node       string
	tags       []string
	QemuHW     // VirtualMachine and Template alike
	desc       string
	onboot     *bool
	startup    string
	agent      *bool
	balloon    *int
	disks      []DiskSpec
	nics       []NICSpec
	ci         *CloudInitSpec
	userData   string
	isoVolume  string // volume id attached as cdrom
	cidataStor string // storage for the CIDATA seed
	pool       string // resource pool the guest is created in
}

func (gs *guestSpec) wantTags() []string {
	return pvefields.AppendTags(gs.tags, OwnerTag)
}

func (gs *guestSpec) seed() cloudinit.Seed {
	return cloudinit.Seed{UserData: gs.userData, Hostname: gs.name}
}

// cidataVolume is the volume id the CIDATA seed gets for vmid.
func (gs *guestSpec) cidataVolume(vmid int) string {
	return gs.cidataStor + ":iso/" + cloudinit.FileName(vmid, gs.seed())
}

// configChange is one key to set or delete.
type configChange struct {
	vocab.Change
	key    string
	value  string
	del    bool
	reboot bool // waits for a reboot on a running VM
	async  bool // allocates a volume: POST .../config
	last   bool // sent alone after every other change (the boot order names devices they add)
	ci     bool // cloud-init: the guest sees it at its next boot
}

type resize struct {
	slot, path string
	from, to   int64
}

// guestDiff is everything that differs between a guestSpec and a guest.
type guestDiff struct {
	config       []configChange
	resizes      []resize
	refused      []string       // shrinking, root-only settings: reported and failed
	creationOnly []vocab.Change // cannot change on an existing guest: reported
	shrinks      []shrink       // the refusals that are shrinks (an adopted guest only notes them)
	grown        []string       // disks of an adopted guest grown beyond their size at adoption: reported
	grownChanges []vocab.Change
	asIs         []string       // what only an adoption notes: creation-time choices it accepts (a disk's storage)
	pending      []vocab.Change // managed keys whose desired value already waits for a reboot
	cidata       *cidataChange
	managed      map[string]*param
}

type cidataChange struct {
	slot, oldVolume, newVolume string
}

func (d *guestDiff) empty() bool {
	return len(d.config) == 0 && len(d.resizes) == 0 && len(d.refused) == 0 && d.cidata == nil
}

// changes lists the field changes for display.
func (d *guestDiff) changes() []vocab.Change {
	var out []vocab.Change
	for _, c := range d.config {
		out = append(out, c.Change)
	}
	for _, r := range d.resizes {
		out = append(out, vocab.Change{Field: r.slot + ".size", Path: r.path, From: pvefields.FormatSize(r.from), To: pvefields.FormatSize(r.to)})
	}
	if d.cidata != nil {
		out = append(out, vocab.Change{Field: "userData", Path: "spec.userData", From: cidataHash(d.cidata.oldVolume), To: cidataHash(d.cidata.newVolume)})
	}
	for _, c := range d.creationOnly {
		out = append(out, vocab.Change{Field: c.Field, Path: c.Path, From: c.From, To: c.To, Hold: vocab.HoldCreationOnly})
	}
	return append(out, d.grownChanges...)
}

func cidataHash(volid string) string {
	if volid == "" {
		return ""
	}
	_, file, _ := strings.Cut(volid, "/")
	if _, h, ok := cloudinit.ParseFileName(file); ok {
		return "seed " + h
	}
	return volid
}

// needsReboot reports whether a running guest must reboot for the diff (and
// already pending changes) to take effect.
func (d *guestDiff) needsReboot() bool {
	if len(d.pending) > 0 || d.cidata != nil {
		return true
	}
	for _, c := range d.config {
		if c.reboot || c.ci {
			return true
		}
	}
	return false
}

// guestWords name a guest kind in a plan's reasons.
type guestWords struct{ it, restart, restarts string }

// planGuestUpdate fills an action from the diff of an existing guest and
// its power state. needsReboot says whether the diff waits for a restart
// of the running guest.
func planGuestUpdate(a *Action, g *Guest, d *guestDiff, needsReboot bool, uo updateOptions, w guestWords) {
	a.Changes = d.changes()
	var reasons []string
	if len(d.config) > 0 || len(d.resizes) > 0 || d.cidata != nil {
		var fields []string
		for _, c := range d.config {
			fields = append(fields, strings.SplitN(c.Field, ".", 2)[0])
		}
		for _, r := range d.resizes {
			fields = append(fields, r.slot)
		}
		if d.cidata != nil {
			fields = append(fields, "userData")
		}
		reasons = append(reasons, fmt.Sprintf("%s differ from the manifest", strings.Join(uniqStrings(fields), ", ")))
	}
	reasons = append(reasons, d.refused...)
	reasons = append(reasons, d.grown...)
	if len(d.creationOnly) > 0 {
		reasons = append(reasons, fmt.Sprintf("%s can only be set when %s is created: the change is not applied (recreate %s to get it)", fieldNames(d.creationOnly, ", "), w.it, w.it))
	}
	power := ""
	running := g.Running()
	switch {
	case uo.state == "running" && !running:
		power = "start"
		a.Changes = append(a.Changes, vocab.Change{Field: "state", From: g.Status, To: "running"})
		reasons = append(reasons, w.it+" is "+g.Status+", the manifest wants it running")
	case uo.state == "stopped" && running:
		power = "stop"
		a.Changes = append(a.Changes, vocab.Change{Field: "state", From: "running", To: "stopped"})
		reasons = append(reasons, w.it+" runs, the manifest wants it stopped")
	}
	if power != "" && g.HAManaged() {
		reasons = append(reasons, haPowerNote(g, power))
	}
	reboot := running && power == "" && needsReboot
	if reboot {
		a.NeedsReboot = true
		if uo.rebootIfNeeded {
			reasons = append(reasons, "applied by a reboot (applyMode: reboot)")
		} else {
			reasons = append(reasons, fmt.Sprintf("takes effect after a %s (set applyMode: reboot to %s automatically)", w.restart, w.restart))
		}
	}
	for _, p := range d.pending {
		a.Changes = append(a.Changes, vocab.Change{Field: p.Field, Path: p.Path, From: p.From, To: p.To, Pending: true})
	}
	if len(d.pending) > 0 {
		fields := make([]string, 0, len(d.pending))
		for _, p := range d.pending {
			fields = append(fields, p.Field)
		}
		reasons = append(reasons, fmt.Sprintf("%s pending until %s %s", strings.Join(fields, ", "), w.it, w.restarts))
	}
	switch {
	case !d.empty() || power != "":
		a.Action, a.Status = vocab.ActionUpdate, vocab.StatusOutOfSync
	case reboot && uo.rebootIfNeeded:
		a.Action, a.Status = vocab.ActionReboot, vocab.StatusOutOfSync
	case reboot || len(d.creationOnly) > 0 || len(d.grown) > 0:
		a.Status = vocab.StatusOutOfSync
	default:
		a.Status, a.Reason = vocab.StatusSynced, "in sync"
		return
	}
	a.Reason = joinReasons(reasons)
}

// hotplug reads the VM's hotplug setting.
func hotplug(cfg map[string]string) map[string]bool {
	v, ok := cfg["hotplug"]
	if !ok {
		v = "network,disk,usb"
	}
	switch v {
	case "0":
		return map[string]bool{}
	case "1":
		v = "network,disk,usb"
	}
	out := map[string]bool{}
	for _, p := range strings.Split(v, ",") {
		out[strings.TrimSpace(p)] = true
	}
	return out
}

// resolveDiskSlots fills in the slot of a first disk declared without one
// (the boot disk of whatever the guest already has, else scsi0).
func resolveDiskSlots(disks []DiskSpec, cfg map[string]string) []DiskSpec {
	out := append([]DiskSpec(nil), disks...)
	if len(out) > 0 && out[0].Slot == "" {
		slot := ""
		if cfg != nil {
			slot = pvefields.BootDiskSlot(cfg)
		}
		if slot == "" {
			slot = "scsi0"
		}
		out[0].Slot = slot
	}
	used := map[string]bool{}
	for _, d := range out {
		used[d.Slot] = true
	}
	next := 1
	for i := range out {
		if out[i].Slot != "" {
			continue
		}
		for used["scsi"+strconv.Itoa(next)] || cfg != nil && cfg["scsi"+strconv.Itoa(next)] != "" && !declaredSlot(disks, "scsi"+strconv.Itoa(next)) {
			next++
		}
		out[i].Slot = "scsi" + strconv.Itoa(next)
		used[out[i].Slot] = true
	}
	return out
}

func declaredSlot(disks []DiskSpec, slot string) bool {
	for _, d := range disks {
		if d.Slot == slot {
			return true
		}
	}
	return false
}

// nicValue renders a NIC for a create or a change, keeping the MAC of an
// existing one unless a MAC is declared.
func nicValue(n NICSpec, existing *pvefields.NIC) string {
	model := n.Model
	if model == "" {
		model = "virtio"
		if existing != nil && existing.Model != "" {
			model = existing.Model
		}
	}
	mac := n.MAC
	if mac == "" && existing != nil {
		mac = existing.MAC
	}
	first := model
	if mac != "" {
		first = model + "=" + strings.ToUpper(mac)
	}
	props := pve.PropertyString{}
	if existing != nil {
		for _, k := range existing.Props.Keys {
			if pvefields.IsNICModel(k) || k == "model" || k == "macaddr" {
				continue
			}
			props.Set(k, existing.Props.Values[k])
		}
	}
	if n.Bridge != "" {
		props.Set("bridge", n.Bridge)
	}
	if n.Tag != nil {
		if *n.Tag > 0 {
			props.Set("tag", strconv.Itoa(*n.Tag))
		} else {
			props.Del("tag")
		}
	}
	if n.Firewall != nil {
		// firewall=0 is Proxmox's default: write the key only to turn it on.
		if *n.Firewall {
			props.Set("firewall", "1")
		} else {
			props.Del("firewall")
		}
	}
	if n.MTU != nil {
		props.Set("mtu", strconv.Itoa(*n.MTU))
	}
	if n.Rate != "" {
		props.Set("rate", n.Rate)
	}
	for _, k := range slices.Sorted(maps.Keys(n.Extra)) {
		props.Set(k, n.Extra[k])
	}
	rest := props.String("")
	if rest == "" {
		return first
	}
	return first + "," + rest
}

// diskOptions renders extra property-string keys in a stable order.
func diskOptions(opts map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		b.WriteString("," + k + "=" + opts[k])
	}
	return b.String()
}

// gibCeil is a size in whole GiB, rounded up (new disks are allocated in GiB).
func gibCeil(b int64) int64 {
	return (b + pvefields.GiB - 1) / pvefields.GiB
}

// diffGuest compares gs with the guest's effective configuration, row by
// row of qemuFields.
func diffGuest(gs *guestSpec, g *Guest) *guestDiff {
	d := &guestDiff{managed: map[string]*param{}}
	x := &diffCtx{eff: g.Effective, hp: hotplug(g.Effective), gate: true}
	diffTable(qemuFields, gs, &fieldCtx{eff: g.Effective, vmid: g.VMID, adopted: g.Owned && g.Adopted, adoptLine: g.adoptionLine(), tagCase: g.tagCase}, x, d)
	d.pending = pendingOf(g, d)
	return d
}
