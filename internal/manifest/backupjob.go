package manifest

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/calendarevent"
)

// KindBackupJob is a cluster backup job (/cluster/backup).
const KindBackupJob Kind = "BackupJob"

// BackupJob is a scheduled vzdump job of the cluster (/cluster/backup,
// pve-manager PVE/API2/Backup.pm), its options those of pve-guest-common
// PVE/VZDump/Common.pm. proxmops gives the job the ID
// BackupJobIDPrefix+metadata.name and marks its comment.
type BackupJob struct {
	Object
	Spec BackupJobSpec
}

// BackupJobIDPrefix starts the Proxmox ID of every job proxmops makes.
const BackupJobIDPrefix = "proxmops-"

// BackupJobID is the Proxmox job ID of a BackupJob manifest's name.
func BackupJobID(name string) string { return BackupJobIDPrefix + name }

// Summary is when the job runs, which guests and where to: "02:30 ·
// 2 guests · to pbs".
func (j *BackupJob) Summary() string {
	s := j.Spec
	parts := []string{s.Schedule}
	switch {
	case s.All:
		parts = append(parts, "all guests")
	case s.Selector != nil && len(s.Selector.Tags) > 0:
		parts = append(parts, "tagged "+strings.Join(s.Selector.Tags, ", "))
	case s.Selector != nil && s.Selector.Pool != "":
		parts = append(parts, "pool "+s.Selector.Pool)
	default:
		parts = append(parts, countWord(len(s.Guests), "guest", "guests"))
	}
	if len(s.Exclude) > 0 {
		parts[len(parts)-1] += " less " + strconv.Itoa(len(s.Exclude))
	}
	if s.Storage != "" {
		parts = append(parts, "to "+s.Storage)
	}
	if s.Enabled != nil && !*s.Enabled {
		parts = append(parts, "disabled")
	}
	return strings.Join(parts, " · ")
}

// BackupJobSpec is the desired job; which guests it backs up is one of
// guests, selector or all.
type BackupJobSpec struct {
	Schedule         string           `json:"schedule" pm:"required,format=calendar-event" doc:"When the job runs: a Proxmox calendar event (a subset of systemd's), e.g. \"02:30\", \"sat 03:00\", \"mon..fri 22:00\", \"*-*-01 04:00\"."`
	Storage          string           `json:"storage,omitempty" pm:"format=storage-id" doc:"Storage the backups are written to (Proxmox's default is local)."`
	Mode             string           `json:"mode,omitempty" pm:"enum=snapshot|suspend|stop" doc:"Backup mode (Proxmox's default is snapshot)."`
	Compress         string           `json:"compress,omitempty" pm:"enum=0|1|gzip|lzo|zstd" doc:"Compression (Proxmox's default 0 is none; ignored by Proxmox Backup Server storages)."`
	Guests           []string         `json:"guests,omitempty" doc:"Guests to back up: declared guests' names (VirtualMachine, Container or Template), resolved to their VMIDs, or VMIDs of guests on the cluster."`
	Selector         *BackupSelector  `json:"selector,omitempty" doc:"Select the guests by tags or by pool instead of naming them."`
	All              bool             `json:"all,omitempty" doc:"Back up every guest of the cluster (less exclude)."`
	Exclude          []string         `json:"exclude,omitempty" doc:"Guests left out of all or of a tag selector: declared guests' names or VMIDs."`
	Retention        *BackupRetention `json:"retention,omitempty" doc:"How many backups to keep (Proxmox's prune-backups); unset keeps the storage's own retention."`
	NotesTemplate    string           `json:"notesTemplate,omitempty" doc:"Notes of each backup, with {{cluster}}, {{guestname}}, {{node}} and {{vmid}} replaced; needs storage."`
	Enabled          *bool            `json:"enabled,omitempty" doc:"Whether the job runs on its schedule (default true)."`
	RepeatMissed     bool             `json:"repeatMissed,omitempty" doc:"Run a missed run as soon as possible when the scheduler was not running at the time."`
	Mailto           []string         `json:"mailto,omitempty" doc:"E-mail addresses or user names told of the job's runs."`
	NotificationMode string           `json:"notificationMode,omitempty" pm:"enum=auto|legacy-sendmail|notification-system" doc:"How the job's runs are notified (Proxmox's default is auto)."`
	Comment          string           `json:"comment,omitempty" doc:"Comment; proxmops adds its ownership marker."`
}

// BackupSelector picks a job's guests by tags or by pool.
type BackupSelector struct {
	Tags []string `json:"tags,omitempty" pm:"format=tag" doc:"Guests carrying every one of these Proxmox tags, read from the cluster on every pass: a guest tagged later is in the job's next run."`
	Pool string   `json:"pool,omitempty" pm:"format=pve-poolid" doc:"The guests of this pool (Proxmox's own pool selection)."`
}

// BackupRetention is prune-backups: unset keeps are not applied.
type BackupRetention struct {
	KeepLast    int `json:"keepLast,omitempty" pm:"min=1" doc:"Keep the last n backups."`
	KeepHourly  int `json:"keepHourly,omitempty" pm:"min=1" doc:"Keep backups of the last n hours (one per hour)."`
	KeepDaily   int `json:"keepDaily,omitempty" pm:"min=1" doc:"Keep backups of the last n days (one per day)."`
	KeepWeekly  int `json:"keepWeekly,omitempty" pm:"min=1" doc:"Keep backups of the last n weeks (one per week)."`
	KeepMonthly int `json:"keepMonthly,omitempty" pm:"min=1" doc:"Keep backups of the last n months (one per month)."`
	KeepYearly  int `json:"keepYearly,omitempty" pm:"min=1" doc:"Keep backups of the last n years (one per year)."`
}

// PruneBackups is the retention as Proxmox keeps it (jobs.cfg's
// prune-backups after validate_prune_backups: keys sorted, keep-all=1
// when nothing is kept).
func (r *BackupRetention) PruneBackups() string {
	if r == nil {
		return ""
	}
	var parts []string
	for _, kv := range r.Keeps() {
		if *kv.N > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", kv.Key, *kv.N))
		}
	}
	if len(parts) == 0 {
		return "keep-all=1"
	}
	return strings.Join(parts, ",")
}

// RetentionKeep is one prune-backups key and the field that holds its
// count.
type RetentionKeep struct {
	Key string
	N   *int
}

// Keeps lists r's prune-backups keys with their fields, in key order.
func (r *BackupRetention) Keeps() []RetentionKeep {
	return []RetentionKeep{{"keep-daily", &r.KeepDaily}, {"keep-hourly", &r.KeepHourly}, {"keep-last", &r.KeepLast},
		{"keep-monthly", &r.KeepMonthly}, {"keep-weekly", &r.KeepWeekly}, {"keep-yearly", &r.KeepYearly}}
}

// Kind returns KindBackupJob.
func (*BackupJob) Kind() Kind { return KindBackupJob }

// MarshalJSON gives back the manifest shape.
func (j *BackupJob) MarshalJSON() ([]byte, error) {
	return marshalManifest(j.Kind(), &j.Object, &j.Spec)
}

// backupJobNameMax: a name (a DNS label) after "proxmops-" makes a
// pve-configid (pve-common JSONSchema.pm pve_verify_configid) of at most
// 50 characters (the pve-backup-jobid standard option).
const backupJobNameMax = 50 - len(BackupJobIDPrefix)

var backupJobName = &NameRule{Pattern: "^.{1,41}$", MaxLength: backupJobNameMax, check: func(n string) error {
	if len(n) > backupJobNameMax {
		return fmt.Errorf("a backup job name is at most %d characters (its Proxmox ID is %s<name>, at most 50)", backupJobNameMax, BackupJobIDPrefix)
	}
	return nil
}}

var (
	// Backup.pm's email-or-username format.
	reBackupEmail = regexp.MustCompile(`^[\w+\-~]+(\.[\w+\-~]+)*@[a-zA-Z0-9\-]+(\.[a-zA-Z0-9\-]+)*$`)
	reBackupUser  = regexp.MustCompile(`^[\w+\-~]+(\.[\w+\-~]+)*$`)
	// VZDump.pm $verify_notes_template.
	reNotesEscape = regexp.MustCompile(`\\(.)`)
	reNotesVar    = regexp.MustCompile(`\{\{([^\s{}]+)\}\}`)
)

func init() {
	formats["calendar-event"] = format{pattern: `\S`, maxLen: 128, check: func(s string) error {
		if err := calendarevent.Verify(s); err != nil {
			return fmt.Errorf("%s", strings.TrimSpace(err.Error()))
		}
		return nil
	}}
}

func (j *BackupJob) check(c *checker) {
	s := &j.Spec
	ways := 0
	for _, set := range []bool{len(s.Guests) > 0, s.Selector != nil, s.All} {
		if set {
			ways++
		}
	}
	switch {
	case ways == 0:
		c.errorf("spec", "say which guests the job backs up: guests, selector or all")
	case ways > 1:
		c.errorf("spec", "guests, selector and all exclude one another: use one")
	}
	if sel := s.Selector; sel != nil && (len(sel.Tags) > 0) == (sel.Pool != "") {
		c.errorf("spec.selector", "a selector has either tags or pool")
	}
	if len(s.Exclude) > 0 && !s.All && (s.Selector == nil || len(s.Selector.Tags) == 0) {
		c.errorf("spec.exclude", "exclude applies to all or to a tag selector")
	}
	guestRefs(j, c, "spec.guests", s.Guests, RelationBacksUp)
	guestRefs(j, c, "spec.exclude", s.Exclude, RelationExcludes)
	if s.NotesTemplate != "" {
		if s.Storage == "" {
			c.errorf("spec.notesTemplate", "notesTemplate needs storage (Proxmox: notes-template requires storage)")
		}
		if err := checkNotesTemplate(s.NotesTemplate); err != nil {
			c.errorf("spec.notesTemplate", "%v", err)
		}
		if len(s.NotesTemplate) > 1024 {
			c.errorf("spec.notesTemplate", "longer than 1024 characters")
		}
	}
	for i, m := range s.Mailto {
		if !reBackupEmail.MatchString(m) && !reBackupUser.MatchString(m) {
			c.errorf(indexPath("spec.mailto", i), "%q does not look like a valid email address or user name", m)
		}
	}
	if strings.ContainsAny(s.Comment, "\r\n") {
		c.errorf("spec.comment", "a comment is one line")
	}
	if len(s.Comment) > 480 {
		c.errorf("spec.comment", "longer than 480 characters (Proxmox allows 512, proxmops' ownership mark takes the rest)")
	}
}

// guestRefs records each named guest as a reference that must be
// declared (a VirtualMachine, Container or Template of that name); a
// VMID names a guest on the cluster. rel is how r needs them.
func guestRefs(r Resource, c *checker, path string, names []string, rel Relation) {
	seen := map[string]bool{}
	for i, n := range names {
		p := indexPath(path, i)
		if seen[n] {
			c.errorf(p, "%s is listed twice", n)
			continue
		}
		seen[n] = true
		if id, ok := BackupGuestVMID(n); ok {
			if id < 100 || id > 999999999 {
				c.errorf(p, "VMID %s is not 100-999999999", n)
			}
			continue
		}
		addRef(r, anyGuest.ref(n, p, rel))
	}
}

// BackupGuestVMID reads a backup job's guest entry that is a VMID.
func BackupGuestVMID(entry string) (int, bool) {
	if entry == "" || len(entry) > 10 || strings.Trim(entry, "0123456789") != "" {
		return 0, false
	}
	id, err := strconv.Atoi(entry)
	return id, err == nil
}

// addTaggedGuests records the declared guests a tag selector takes in as
// references (the graph's edges, the apply order); guests tagged on the
// cluster are found by the engine on every pass.
func (j *BackupJob) addTaggedGuests(resources []Resource) {
	sel := j.Spec.Selector
	if sel == nil || len(sel.Tags) == 0 {
		return
	}
	for _, r := range resources {
		if !r.Kind().Info().Guest || slices.Contains(j.Spec.Exclude, r.Name()) {
			continue
		}
		has := func(w string) bool {
			return slices.ContainsFunc(r.Meta().Tags, func(t string) bool { return strings.EqualFold(t, w) })
		}
		if !slices.ContainsFunc(sel.Tags, func(w string) bool { return !has(w) }) {
			ref := anyGuest.ref(r.Name(), "spec.selector.tags", RelationBacksUp)
			ref.Kind = r.Kind()
			addRef(j, ref)
		}
	}
}

// checkNotesTemplate is VZDump.pm's $verify_notes_template.
func checkNotesTemplate(t string) error {
	if strings.Contains(t, "\n") {
		return fmt.Errorf("contains a line feed")
	}
	var problems []string
	for _, m := range reNotesEscape.FindAllStringSubmatchIndex(t, -1) {
		if ch := t[m[2]:m[3]]; ch != "n" && ch != "\\" {
			problems = append(problems, fmt.Sprintf("escape sequence '\\%s' at char %d", ch, m[1]-2))
		}
	}
	for _, m := range reNotesVar.FindAllStringSubmatchIndex(t, -1) {
		if v := t[m[2]:m[3]]; !slices.Contains([]string{"cluster", "guestname", "node", "vmid"}, v) {
			problems = append(problems, fmt.Sprintf("variable '%s' at char %d", v, m[1]-len(v)))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("found unknown: %s (known variables: {{cluster}}, {{guestname}}, {{node}}, {{vmid}})", strings.Join(problems, ", "))
	}
	return nil
}
