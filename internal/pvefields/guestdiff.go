package pvefields

import (
	"fmt"
	"strings"

	"github.com/proxmops/proxmops/internal/cloudinit"
	"github.com/proxmops/proxmops/internal/vocab"
)

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

// Diff is everything that differs between a GuestSpec (or a container's
// configuration) and a guest: what the engine applies, reports and refuses.
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
		out = append(out, vocab.Change{Field: r.Slot + ".size", Path: r.Path, From: FormatSize(r.From), To: FormatSize(r.To)})
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

// RefuseShrink refuses to shrink slot (subject names it: "disk scsi0",
// "rootfs") from have to want: reported and failed (unsupported says
// why), or, on an adopted guest, noted up to its size at adoption and
// reported as drift beyond it (adoptDiff).
func (d *Diff) RefuseShrink(slot, subject string, have, want int64, unsupported string) {
	head := fmt.Sprintf("%s is %s on the cluster but %s in the manifest", subject, FormatSize(have), FormatSize(want))
	msg := head + ": " + unsupported + ", raise the size in the manifest"
	d.Refused = append(d.Refused, msg)
	d.Shrinks = append(d.Shrinks, Shrink{Refused: msg, Head: head, Slot: slot, Have: have, Want: want})
}

// Shrink is one refused shrink, which an adopted guest may accept.
type Shrink struct {
	Refused, Head string
	Slot          string
	Have, Want    int64
}

// Observed is the guest a table is compared with, as the engine read it.
type Observed struct {
	VMID int
	// Effective is the configuration with its pending values applied;
	// Current, Pending and PendingDelete are the parts it comes from.
	Effective, Current, Pending map[string]string
	PendingDelete               map[string]bool
	// Adopted: the guest carries AdoptedTag, or is being adopted.
	Adopted bool
	// AdoptLine is the guest's adoption record line, kept by a change of
	// the description ("" without a record).
	AdoptLine string
	// TagCase says whether the cluster's tags are case-sensitive (nil: no).
	TagCase func() bool
	// Running gates a container's restart: nothing of a stopped one waits
	// for it (a VM's reboot is decided from its state by the engine).
	Running bool
}

func (o *Observed) fieldCtx() *fieldCtx {
	return &fieldCtx{eff: o.Effective, vmid: o.VMID, adopted: o.Adopted, adoptLine: o.AdoptLine, tagCase: o.TagCase}
}
