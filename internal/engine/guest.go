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

// GuestSpec is the configuration VirtualMachine and Template share.
type GuestSpec struct {
	Kind, Name    string
	VMID          int
	Node          string
	Tags          []string
	QemuHW        // VirtualMachine and Template alike
	Description   string
	OnBoot        *bool
	Startup       string
	Agent         *bool
	Balloon       *int
	Disks         []DiskSpec
	NICs          []NICSpec
	CloudInit     *CloudInitSpec
	UserData      string
	ISOVolume     string // volume id attached as cdrom
	CidataStorage string // storage for the CIDATA seed
	Pool          string // resource pool the guest is created in
}

func (gs *GuestSpec) WantTags() []string {
	return pvefields.AppendTags(gs.Tags, OwnerTag)
}

func (gs *GuestSpec) Seed() cloudinit.Seed {
	return cloudinit.Seed{UserData: gs.UserData, Hostname: gs.Name}
}

// CidataVolume is the volume id the CIDATA seed gets for vmid.
func (gs *GuestSpec) CidataVolume(vmid int) string {
	return gs.CidataStorage + ":iso/" + cloudinit.FileName(vmid, gs.Seed())
}

// ConfigChange is one key to set or delete.
type ConfigChange struct {
	vocab.Change
	Key    string
	Value  string
	Del    bool
	Reboot bool // waits for a reboot on a running VM
	Async  bool // allocates a volume: POST .../config
	Last   bool // sent alone after every other change (the boot order names devices they add)
	CI     bool // cloud-init: the guest sees it at its next boot
}

type Resize struct {
	Slot, Path string
	From, To   int64
}

// Diff is everything that differs between a guestSpec and a guest.
type Diff struct {
	Config       []ConfigChange
	Resizes      []Resize
	Refused      []string       // shrinking, root-only settings: reported and failed
	CreationOnly []vocab.Change // cannot change on an existing guest: reported
	Shrinks      []Shrink       // the refusals that are shrinks (an adopted guest only notes them)
	Grown        []string       // disks of an adopted guest grown beyond their size at adoption: reported
	GrownChanges []vocab.Change
	AsIs         []string       // what only an adoption notes: creation-time choices it accepts (a disk's storage)
	Pending      []vocab.Change // managed keys whose desired value already waits for a reboot
	Cidata       *CidataChange
	managed      map[string]*param
}

type CidataChange struct {
	Slot, OldVolume, NewVolume string
}

func (d *Diff) Empty() bool {
	return len(d.Config) == 0 && len(d.Resizes) == 0 && len(d.Refused) == 0 && d.Cidata == nil
}

// Changes lists the field Changes for display.
func (d *Diff) Changes() []vocab.Change {
	var out []vocab.Change
	for _, c := range d.Config {
		out = append(out, c.Change)
	}
	for _, r := range d.Resizes {
		out = append(out, vocab.Change{Field: r.Slot + ".size", Path: r.Path, From: pvefields.FormatSize(r.From), To: pvefields.FormatSize(r.To)})
	}
	if d.Cidata != nil {
		out = append(out, vocab.Change{Field: "userData", Path: "spec.userData", From: cidataHash(d.Cidata.OldVolume), To: cidataHash(d.Cidata.NewVolume)})
	}
	for _, c := range d.CreationOnly {
		out = append(out, vocab.Change{Field: c.Field, Path: c.Path, From: c.From, To: c.To, Hold: vocab.HoldCreationOnly})
	}
	return append(out, d.GrownChanges...)
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

// NeedsReboot reports whether a running guest must reboot for the diff (and
// already pending changes) to take effect.
func (d *Diff) NeedsReboot() bool {
	if len(d.Pending) > 0 || d.Cidata != nil {
		return true
	}
	for _, c := range d.Config {
		if c.Reboot || c.CI {
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
func planGuestUpdate(a *Action, g *Guest, d *Diff, needsReboot bool, uo updateOptions, w guestWords) {
	a.Changes = d.Changes()
	var reasons []string
	if len(d.Config) > 0 || len(d.Resizes) > 0 || d.Cidata != nil {
		var fields []string
		for _, c := range d.Config {
			fields = append(fields, strings.SplitN(c.Field, ".", 2)[0])
		}
		for _, r := range d.Resizes {
			fields = append(fields, r.Slot)
		}
		if d.Cidata != nil {
			fields = append(fields, "userData")
		}
		reasons = append(reasons, fmt.Sprintf("%s differ from the manifest", strings.Join(uniqStrings(fields), ", ")))
	}
	reasons = append(reasons, d.Refused...)
	reasons = append(reasons, d.Grown...)
	if len(d.CreationOnly) > 0 {
		reasons = append(reasons, fmt.Sprintf("%s can only be set when %s is created: the change is not applied (recreate %s to get it)", fieldNames(d.CreationOnly, ", "), w.it, w.it))
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
	for _, p := range d.Pending {
		a.Changes = append(a.Changes, vocab.Change{Field: p.Field, Path: p.Path, From: p.From, To: p.To, Pending: true})
	}
	if len(d.Pending) > 0 {
		fields := make([]string, 0, len(d.Pending))
		for _, p := range d.Pending {
			fields = append(fields, p.Field)
		}
		reasons = append(reasons, fmt.Sprintf("%s pending until %s %s", strings.Join(fields, ", "), w.it, w.restarts))
	}
	switch {
	case !d.Empty() || power != "":
		a.Action, a.Status = vocab.ActionUpdate, vocab.StatusOutOfSync
	case reboot && uo.rebootIfNeeded:
		a.Action, a.Status = vocab.ActionReboot, vocab.StatusOutOfSync
	case reboot || len(d.CreationOnly) > 0 || len(d.Grown) > 0:
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
func diffGuest(gs *GuestSpec, g *Guest) *Diff {
	d := &Diff{managed: map[string]*param{}}
	x := &diffCtx{eff: g.Effective, hp: hotplug(g.Effective), gate: true}
	diffTable(qemuFields, gs, &fieldCtx{eff: g.Effective, vmid: g.VMID, adopted: g.Owned && g.Adopted, adoptLine: g.adoptionLine(), tagCase: g.tagCase}, x, d)
	d.Pending = pendingOf(g, d)
	return d
}
