package export

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
)

// backupJobKeys are the job keys a BackupJob manifest keeps; any other
// key a job holds is named in the export's notes.
var backupJobKeys = map[string]bool{"id": true, "type": true, "comment": true, "digest": true, "next-run": true,
	"schedule": true, "storage": true, "mode": true, "compress": true, "vmid": true, "all": true, "pool": true,
	"exclude": true, "prune-backups": true, "notes-template": true, "enabled": true, "repeat-missed": true,
	"mailto": true, "notification-mode": true}

// backupJobExport writes one job of /cluster/backup. An owned job is
// named as its manifest was; one made by hand is named by its ID (the
// adoption makes it again as proxmops-<ID>, Proxmox cannot rename it) or,
// at proxmops-<name> without the mark, by that name (adopted in place).
// Its guests are the exported guests' names where the export writes
// them, else their VMIDs.
func backupJobExport(it engine.CollectionItem, names map[int]string) (Exported, error) {
	v := it.Values
	name := it.Name
	if len(name) > 41 || !manifest.ValidFirewallName(strings.ToLower(name)) || strings.ToLower(name) != name || strings.Contains(name, "_") {
		return Exported{}, fmt.Errorf("BackupJob %s: its ID is not a manifest name of at most 41 characters (lower-case letters, digits and '-')", v["id"])
	}
	s := manifest.BackupJobSpec{Schedule: v["schedule"], Storage: v["storage"], Mode: v["mode"], Compress: v["compress"],
		NotesTemplate: v["notes-template"], NotificationMode: v["notification-mode"], Comment: it.Comment,
		RepeatMissed: pvefields.ParseBool(v["repeat-missed"]), Mailto: pve.SplitTags(v["mailto"])}
	if v["enabled"] == "0" {
		off := false
		s.Enabled = &off
	}
	guests := func(list string) []string {
		var out []string
		for _, id := range pve.SplitTags(list) {
			n, _ := strconv.Atoi(id)
			if g, ok := names[n]; ok {
				out = append(out, g)
			} else {
				out = append(out, id)
			}
		}
		return out
	}
	switch {
	case v["pool"] != "":
		s.Selector = &manifest.BackupSelector{Pool: v["pool"]}
	case v["vmid"] != "":
		s.Guests = guests(v["vmid"])
	case pvefields.ParseBool(v["all"]):
		s.All, s.Exclude = true, guests(v["exclude"])
	default:
		return Exported{}, fmt.Errorf("BackupJob %s: selects no guests (no vmid, pool or all)", v["id"])
	}
	if pb := v["prune-backups"]; pb != "" && pb != "keep-all=1" {
		s.Retention = &manifest.BackupRetention{}
		for _, kv := range strings.Split(pb, ",") {
			k, val, _ := strings.Cut(kv, "=")
			n, _ := strconv.Atoi(val)
			for _, kv := range s.Retention.Keeps() {
				if kv.Key == k {
					*kv.N = n
				}
			}
		}
	}
	m := manifest.Metadata{Name: name}
	var notes, dropped []string
	if !it.Owned {
		m.Annotations = map[string]string{manifest.AnnotationAdopt: "true"}
		if v["id"] == manifest.BackupJobID(name) {
			notes = append(notes, "proxmops did not make this job: the first sync adopts it (marks its comment "+engine.OwnerMark+")")
		} else {
			notes = append(notes, fmt.Sprintf("proxmops did not make this job: Proxmox cannot rename it, so the first sync makes it again as %s and deletes %s (keep metadata.name for that)", manifest.BackupJobID(name), v["id"]))
		}
	}
	for k := range v {
		if !backupJobKeys[k] {
			dropped = append(dropped, k+"="+v[k])
		}
	}
	if len(dropped) > 0 {
		sort.Strings(dropped)
		notes = append(notes, "options a BackupJob does not keep (not written, and not set on a job proxmops makes again): "+strings.Join(dropped, ", "))
	}
	return Exported{Dir: "backup", File: name + ".yaml", Notes: notes,
		Resource: &manifest.BackupJob{Object: manifest.Object{Metadata: m}, Spec: s}}, nil
}
