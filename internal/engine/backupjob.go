package engine

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Backup jobs (pve-manager PVE/API2/Backup.pm over jobs.cfg's vzdump
// sections): a row of the collections table (collection.go). A job is
// proxmops' when its ID is "proxmops-<name>" and its comment carries the
// ownership mark; any other job is never changed nor removed. Listing
// needs Sys.Audit on /, a change Sys.Modify on / and Datastore.Allocate on
// the job's storage (assert_param_permission_create and _update; "local"
// when it names none), a pool selection VM.Backup on the pool.

const KindBackupJob = string(manifest.KindBackupJob)

// BackupJobSpec is a desired backup job; which guests it backs up is one
// of Guests (declared names), SelectTags, Pool or All (less Exclude).
type BackupJobSpec struct {
	Meta
	Schedule, Storage, Mode, Compress string
	Guests, SelectTags, Exclude       []string
	Pool                              string
	All                               bool
	PruneBackups                      string // Proxmox's form, "" to leave it unset
	NotesTemplate                     string
	Enabled, RepeatMissed             bool
	Mailto                            []string
	NotificationMode                  string
	Comment                           string

	// vmids and excluded are the guests resolved by the plan.
	vmids, excluded []int
}

func backupJobFromManifest(j *manifest.BackupJob, _ SecretReader) *BackupJobSpec {
	s := j.Spec
	out := &BackupJobSpec{Meta: metaOf(j), Schedule: strings.TrimSpace(s.Schedule), Storage: s.Storage, Mode: s.Mode,
		Compress: s.Compress, Guests: s.Guests, Exclude: s.Exclude, All: s.All, PruneBackups: s.Retention.PruneBackups(),
		NotesTemplate: s.NotesTemplate, Enabled: s.Enabled == nil || *s.Enabled, RepeatMissed: s.RepeatMissed,
		Mailto: s.Mailto, NotificationMode: s.NotificationMode, Comment: strings.TrimSpace(s.Comment)}
	if s.Selector != nil {
		out.SelectTags, out.Pool = s.Selector.Tags, s.Selector.Pool
	}
	return out
}

// backupJobs is the collections row of /cluster/backup.
var backupJobs = &collection{
	kind: KindBackupJob, noun: "backup job", plural: "backup jobs", list: "cluster/backup", key: "id",
	privPath: "/", read: "Sys.Audit", write: "Sys.Modify",
	id: manifest.BackupJobID,
	nameOf: func(id string) (string, bool) {
		name, ok := strings.CutPrefix(id, manifest.BackupJobIDPrefix)
		return name, ok && name != ""
	},
	// An exported job made by hand is named by its ID.
	adoptKey: func(name string) string { return name },
	fields:   backupJobFields,
	comment:  func(sp Spec) string { return sp.(*BackupJobSpec).Comment },
	create: func(sp Spec, marked string) collReq {
		p := pve.NewParams().Set("id", manifest.BackupJobID(sp.meta().Name))
		for _, f := range backupJobFields(sp) {
			if f.want != "" {
				p.Set(f.key, f.want)
			}
		}
		return collReq{method: "POST", path: "cluster/backup", params: p.Set("comment", marked)}
	},
	update: func(id string, sp Spec, marked string, have collItem) collReq {
		// update_job merges: what is unset in the manifest but set on
		// the job is deleted.
		p := pve.NewParams()
		var del []string
		for _, f := range backupJobFields(sp) {
			switch {
			case f.want != "":
				p.Set(f.key, f.want)
			case have[f.key] != "":
				del = append(del, f.key)
			}
		}
		if len(del) > 0 {
			p.Set("delete", strings.Join(del, ","))
		}
		return collReq{method: "PUT", path: "cluster/backup/" + pve.PathEscape(id), params: p.Set("comment", marked)}
	},
	remove: func(id string) collReq {
		return collReq{method: "DELETE", path: "cluster/backup/" + pve.PathEscape(id)}
	},
	resolve:   resolveBackupJob,
	dependsOn: backupJobGuests,
	needs:     backupJobNeeds,
}

// backupJobFields are the job's managed keys in Proxmox's read-back form.
func backupJobFields(sp Spec) []collField {
	s := sp.(*BackupJobSpec)
	sel := "spec.guests"
	if len(s.SelectTags) > 0 {
		sel = "spec.selector.tags"
	}
	return []collField{
		{key: "schedule", path: "spec.schedule", want: s.Schedule},
		{key: "storage", path: "spec.storage", want: s.Storage},
		{key: "mode", path: "spec.mode", want: s.Mode},
		{key: "compress", path: "spec.compress", want: s.Compress},
		{key: "vmid", path: sel, want: joinVMIDs(s.vmids), same: sameVMIDs},
		{key: "all", path: "spec.all", want: flag(s.All), same: sameFlag},
		{key: "pool", path: "spec.selector.pool", want: s.Pool},
		{key: "exclude", path: "spec.exclude", want: joinVMIDs(s.excluded), same: sameVMIDs},
		{key: "prune-backups", path: "spec.retention", want: s.PruneBackups},
		{key: "notes-template", path: "spec.notesTemplate", want: s.NotesTemplate},
		{key: "enabled", path: "spec.enabled", want: boolParam(s.Enabled),
			// Proxmox reads a job without the key back as enabled.
			same: func(have, want string) bool { return cmp.Or(have, "1") == want }},
		{key: "repeat-missed", path: "spec.repeatMissed", want: flag(s.RepeatMissed), same: sameFlag},
		{key: "mailto", path: "spec.mailto", want: strings.Join(s.Mailto, ","), same: sameList},
		{key: "notification-mode", path: "spec.notificationMode", want: s.NotificationMode},
	}
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return ""
}

func sameFlag(have, want string) bool { return cmp.Or(have, "0") == cmp.Or(want, "0") }

// sameList compares Proxmox lists (split_list: commas, semicolons or
// spaces, as SplitTags splits) in order.
func sameList(have, want string) bool {
	return slices.Equal(pve.SplitTags(have), pve.SplitTags(want))
}

// sameVMIDs compares VMID lists as sets.
func sameVMIDs(have, want string) bool {
	h, w := pve.SplitTags(have), pve.SplitTags(want)
	sort.Strings(h)
	sort.Strings(w)
	return slices.Equal(h, w)
}

func joinVMIDs(ids []int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	return strings.Join(parts, ",")
}

// guestVMID is the VMID of a job's guest entry: a VMID as it is; a
// declared guest's from its manifest, else the guest of its name on the
// cluster; 0 while it does not exist.
func guestVMID(pc *planContext, name string) int {
	if id, ok := manifest.BackupGuestVMID(name); ok {
		return id
	}
	for _, k := range manifest.GuestKinds() {
		for _, s := range pc.d.Specs(string(k)) {
			if s.meta().Name != name {
				continue
			}
			if id := declaredVMID(pc, vocab.Key(string(k), name)); id > 0 {
				return id
			}
			for _, g := range pc.snap.Guests {
				if g.Name == name && g.Type == k.Info().PVEType {
					return g.VMID
				}
			}
		}
	}
	return 0
}

// declaredVMID is the VMID a declared guest claims, 0 for none.
func declaredVMID(pc *planContext, key string) int {
	for id, k := range pc.declared {
		if k == key {
			return id
		}
	}
	return 0
}

// hasTags reports whether tags hold every wanted tag (Proxmox compares
// tags case-insensitively by default).
func hasTags(tags, wanted []string) bool {
	for _, w := range wanted {
		if !slices.ContainsFunc(tags, func(t string) bool { return strings.EqualFold(t, w) }) {
			return false
		}
	}
	return true
}

// backupJobGuests are the declared guests the job names or its tags take
// in (manifest references): the job is made after them.
func backupJobGuests(_ *Desired, sp Spec) []string { return sp.meta().Needs }

// resolveBackupJob turns a job's guests into VMIDs for this pass: the
// declared guests it names, or every guest carrying its tags (on the
// cluster, or declared with a VMID and about to be made), less exclude.
// Proxmox keeps no job without guests: an empty selection is refused.
func resolveBackupJob(pc *planContext, sp Spec) (Spec, error) {
	s := *sp.(*BackupJobSpec)
	for _, n := range s.Exclude {
		if id := guestVMID(pc, n); id > 0 {
			s.excluded = append(s.excluded, id)
		}
	}
	ids := map[int]bool{}
	switch {
	case len(s.Guests) > 0:
		for _, n := range s.Guests {
			if id := guestVMID(pc, n); id > 0 {
				ids[id] = true
			}
		}
	case len(s.SelectTags) > 0:
		for _, g := range pc.snap.Guests {
			if hasTags(g.Tags, s.SelectTags) {
				ids[g.VMID] = true
			}
		}
		for _, k := range manifest.GuestKinds() {
			for _, g := range pc.d.Specs(string(k)) {
				if id := declaredVMID(pc, vocab.Key(string(k), g.meta().Name)); id > 0 && hasTags(g.meta().Tags, s.SelectTags) {
					ids[id] = true
				}
			}
		}
		// With tags, exclude is proxmops' to apply.
		for _, id := range s.excluded {
			delete(ids, id)
		}
		s.excluded = nil
	default:
		if !s.All {
			s.excluded = nil
		}
		return &s, nil
	}
	s.vmids = slices.Sorted(maps.Keys(ids))
	if len(s.vmids) == 0 {
		what := "none of the guests it names exists yet"
		if len(s.SelectTags) > 0 {
			what = "no guest carries the tags " + strings.Join(s.SelectTags, ", ")
		}
		return nil, fmt.Errorf("backup job %s has no guest to back up: %s, and Proxmox keeps no job without guests; it is left as it is until one does", manifest.BackupJobID(s.Name), what)
	}
	return &s, nil
}

// backupJobNeeds: Datastore.Allocate on the storage written to (and on
// the one a change leaves), VM.Backup on a selected pool.
func backupJobNeeds(a *Action, sp Spec) []privNeed {
	s, ok := sp.(*BackupJobSpec)
	if !ok || a.Action == vocab.ActionDelete {
		return nil
	}
	stores := []string{cmp.Or(s.Storage, "local")}
	if job, ok := a.Observed["backup job"].(map[string]string); ok && a.Action == vocab.ActionUpdate {
		if old := cmp.Or(job["storage"], "local"); old != stores[0] {
			stores = append(stores, old)
		}
	}
	var out []privNeed
	for _, st := range stores {
		out = append(out, needAll("write backups to storage "+st, "/storage/"+st, "Datastore.Allocate"))
	}
	if s.Pool != "" {
		out = append(out, needAll("back up the guests of pool "+s.Pool, "/pool/"+s.Pool, "VM.Backup"))
	}
	return out
}
