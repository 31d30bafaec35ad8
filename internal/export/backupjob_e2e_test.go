package export_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/export"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Backup jobs are exported with their settings: one made by hand named by
// its ID and annotated for adoption, proxmops' own under its name without
// the mark, an ID no manifest name can keep refused, options a BackupJob
// does not keep named. Applying the export takes the hand-made job over:
// it is made again as proxmops-<ID> with the same settings and the old
// one deleted, and the next plan is in sync.
func TestExportBackupJobsAndTakeOverAHandMadeOne(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	c.call("POST", "/cluster/backup", "id", "backup-ab12cd34-5678", "schedule", "sat 02:00", "storage", "local", "vmid", "100,101",
		"prune-backups", "keep-last=2,keep-weekly=4", "notes-template", "{{guestname}}", "mode", "stop", "comment", "weekend", "bwlimit", "1000")
	c.call("POST", "/cluster/backup", "id", "proxmops-nightly", "schedule", "02:30", "all", "1", "exclude", "105", "enabled", "0",
		"comment", "nightly ("+engine.OwnerMark+")")
	c.call("POST", "/cluster/backup", "id", "Odd_ID", "schedule", "daily", "all", "1")
	res := export1(t, c, export.Options{Kinds: []string{"backupjob"}})
	wantFiles(t, res, "backup/backup-ab12cd34-5678.yaml backup/nightly.yaml")
	if len(res.Refused) != 1 || !strings.Contains(res.Refused[0], "Odd_ID") {
		t.Fatalf("refused: %v", res.Refused)
	}
	hand, own := file(t, res, "backup/backup-ab12cd34-5678.yaml"), file(t, res, "backup/nightly.yaml")
	for _, want := range []string{"kind: BackupJob", "name: backup-ab12cd34-5678", "proxmops.dev/adopt: \"true\"", "schedule: sat 02:00",
		"storage: local", "mode: stop", "- \"100\"", "- \"101\"", "keepLast: 2", "keepWeekly: 4", "notesTemplate: '{{guestname}}'", "comment: weekend",
		"bwlimit=1000", "makes it again as proxmops-backup-ab12cd34-5678"} {
		if !strings.Contains(hand, want) {
			t.Errorf("hand-made job lacks %q:\n%s", want, hand)
		}
	}
	for _, want := range []string{"name: nightly", "all: true", "- \"105\"", "enabled: false", "comment: nightly\n"} {
		if !strings.Contains(own, want) || strings.Contains(own, "proxmops.dev/adopt") {
			t.Errorf("owned job lacks %q or is annotated:\n%s", want, own)
		}
	}
	c.checkClean(res)

	// The takeover.
	set, err := res.Load()
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(c.client, engine.Options{})
	first, err := eng.Plan(ctx, engine.DesiredFromSet(set, nil), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Converge(ctx, engine.DesiredFromSet(set, nil), first, nil, engine.ConvergeOptions{}); err != nil {
		t.Fatal(err)
	}
	jobs := map[string]map[string]any{}
	var list []map[string]any
	if err := c.client.Get(ctx, "cluster/backup", nil, &list); err != nil {
		t.Fatal(err)
	}
	for _, j := range list {
		jobs[j["id"].(string)] = j
	}
	if _, ok := jobs["backup-ab12cd34-5678"]; ok {
		t.Fatalf("the hand-made job is still there: %v", jobs)
	}
	j := jobs["proxmops-backup-ab12cd34-5678"]
	if j == nil || j["schedule"] != "sat 02:00" || j["vmid"] != "100,101" || j["mode"] != "stop" || j["comment"] != "weekend ("+engine.OwnerMark+")" ||
		fmt.Sprint(j["prune-backups"]) != "map[keep-last:2 keep-weekly:4]" {
		t.Fatalf("the job made again: %v", j)
	}
	p, err := eng.Plan(ctx, engine.DesiredFromSet(set, nil), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range p.Actions {
		if a.Kind == engine.KindBackupJob && a.Status != vocab.StatusSynced {
			t.Errorf("%s after the takeover: %s %s", a.Name, a.Status, a.Reason)
		}
	}
}
