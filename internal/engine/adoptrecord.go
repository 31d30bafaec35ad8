package engine

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
)

// The adoption record: what an adoption accepted must be bounded by what
// the guest had then, so that a disk grown by hand after the adoption is
// reported as drift like any other change. The sizes are kept on the
// guest itself, as the last line of its description (where proxmops
// already keeps its provisioning record), so that every plan sees them:
// the daemon, each HA replica and `proxmops plan` in CI alike, without a
// store, and a restored database cannot lose them. The description is
// the only free text both kinds keep: qemu-server's `meta` is read-only
// (QemuServer.pm $confdesc meta), tags must match pve-tag and a tag per
// size would fill the cluster's tag list. Both kinds take a description
// of up to 8 KiB (QemuServer.pm and LXC/Config.pm $confdesc description,
// maxLength 1024 * 8) with VM.Config.Options, the privilege the
// ownership tag already needs; Proxmox stores it as comment lines of the
// configuration file, so it comes back line by line.

// AdoptedLinePrefix starts the description line recording the disk sizes
// a guest had when proxmops adopted it:
// "proxmops-adopted: scsi0=32G scsi1=8G" (rootfs and mpN for containers).
const AdoptedLinePrefix = "proxmops-adopted:"

// AdoptionRecord is the disk sizes, in bytes by slot, at adoption.
type AdoptionRecord struct {
	Sizes map[string]int64
}

// Line renders the record as its description line, slots sorted.
func (r AdoptionRecord) Line() string {
	var b strings.Builder
	b.WriteString(AdoptedLinePrefix)
	for _, slot := range slices.Sorted(maps.Keys(r.Sizes)) {
		b.WriteString(" " + slot + "=" + pvefields.FormatSize(r.Sizes[slot]))
	}
	return b.String()
}

// String lists the sizes for a reason ("scsi0=32G, scsi1=8G", "no disk").
func (r AdoptionRecord) String() string {
	if len(r.Sizes) == 0 {
		return "no disk"
	}
	return strings.ReplaceAll(strings.TrimSpace(strings.TrimPrefix(r.Line(), AdoptedLinePrefix)), " ", ", ")
}

// parseAdoptedLine reads a record line; an entry that does not parse is
// left out (the line is still the record: never part of the user's text).
func parseAdoptedLine(line string) (AdoptionRecord, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), AdoptedLinePrefix)
	if !ok {
		return AdoptionRecord{}, false
	}
	r := AdoptionRecord{Sizes: map[string]int64{}}
	for _, f := range strings.Fields(rest) {
		slot, size, _ := strings.Cut(f, "=")
		if n, err := pvefields.ParseSize(size); err == nil && slot != "" && n > 0 {
			r.Sizes[slot] = n
		}
	}
	return r, true
}

// splitAdoptionRecord separates a description into the rest (the user's
// text and any other record) and the adoption record (the last wins).
func splitAdoptionRecord(desc string) (rest string, rec *AdoptionRecord) {
	if !strings.Contains(desc, AdoptedLinePrefix) {
		return desc, nil
	}
	lines := strings.Split(desc, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if r, ok := parseAdoptedLine(l); ok {
			rec = &r
			continue
		}
		kept = append(kept, l)
	}
	return strings.TrimRight(strings.Join(kept, "\n"), " \n\r\t"), rec
}

// splitAdoptionRecord takes the adoption record out of the description
// read from the cluster, so that the description's diff sees only the
// user's text; the guest keeps the record.
func (g *Guest) splitAdoptionRecord() {
	for _, m := range []map[string]string{g.Current, g.Effective} {
		d, ok := m["description"]
		if !ok {
			continue
		}
		rest, rec := splitAdoptionRecord(d)
		if rec == nil {
			continue
		}
		g.AdoptionRecord = rec
		if rest == "" {
			delete(m, "description")
		} else {
			m["description"] = rest
		}
	}
}

// adoptionLine is the guest's record line, "" without a record.
func (g *Guest) adoptionLine() string {
	if g == nil || g.AdoptionRecord == nil {
		return ""
	}
	return g.AdoptionRecord.Line()
}

// diskSizes reads the sizes of a guest's disks by slot: a VM's disks
// other than CD-ROMs, cloud-init drives, EFI and TPM state; a container's
// root volume and volume mount points (not bind mounts).
func diskSizes(g *Guest) AdoptionRecord {
	r := AdoptionRecord{Sizes: map[string]int64{}}
	for k, v := range g.Effective {
		switch {
		case g.Type == "lxc" && (k == "rootfs" || isMountKey(k)):
			ps := pve.ParsePropertyString(v, "volume")
			if strings.HasPrefix(ps.Values["volume"], "/") {
				continue
			}
			if n, err := pvefields.ParseSize(ps.Values["size"]); err == nil && n > 0 {
				r.Sizes[k] = n
			}
		case g.Type != "lxc" && pvefields.IsDiskKey(k) && !strings.HasPrefix(k, "efidisk") && !strings.HasPrefix(k, "tpmstate"):
			if pd := pvefields.ParseDisk(v); !pd.IsCdrom() && !pd.IsCloudInit() && pd.Size > 0 {
				r.Sizes[k] = pd.Size
			}
		}
	}
	return r
}

// writeAdoptionRecord puts rec as the description's record line, keeping
// the rest of the description as it is on the cluster now.
func (x *execCtx) writeAdoptionRecord(ctx context.Context, typ, node string, vmid int, rec AdoptionRecord) error {
	return x.rewriteDescription(ctx, typ, node, vmid, "the disk sizes at adoption", func(desc string) (string, bool) {
		rest, old := splitAdoptionRecord(desc)
		return pvefields.WithAdoptionLine(rest, rec.Line()), old == nil || old.Line() != rec.Line()
	})
}
