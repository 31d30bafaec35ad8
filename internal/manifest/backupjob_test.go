package manifest

import (
	"strings"
	"testing"
)

// A BackupJob's schedule follows Proxmox's calendar event grammar (with
// its parser's error text), its guests are declared guests, and exactly
// one of guests, selector and all says which are backed up.
func TestBackupJobValidation(t *testing.T) {
	job := func(meta, spec string) string { return flowDoc(KindBackupJob, meta, spec) }
	ct := "apiVersion: proxmops.dev/v1\nkind: Container\nmetadata: {name: db, node: pve1}\nspec: {vmid: 200, template: local:vztmpl/debian.tar.zst, rootfs: {storage: local-lvm, size: 8G}}\n"
	vm := vmHead + "  vmid: 100\n  image: {source: https://example.com/x.img}\n  disks: [{slot: scsi0, storage: local-lvm, size: 10G}]\n"
	tests := []validationCase{
		{"by names", job("name: nightly", "schedule: \"02:30\", storage: local, guests: [vm-a, db], retention: {keepLast: 3, keepDaily: 7}, notesTemplate: \"{{guestname}}\""), ""},
		{"by tags with exclude", job("name: nightly", "schedule: \"mon..fri 22:00\", selector: {tags: [prod]}, exclude: [vm-a]"), ""},
		{"by pool", job("name: nightly", "schedule: daily, selector: {pool: prod}"), ""},
		{"all", job("name: weekly", "schedule: \"sat 03:00\", all: true, mode: stop, compress: zstd, mailto: [root@pam, admin@example.com], notificationMode: auto"), ""},
		{"schedule out of range", job("name: n", "schedule: \"61:00\", all: true"),
			`invalid calendar event '61:00' - unable to parse calendar event at '61:00' - Context("date or time specification")`},
		{"schedule with an unknown day", job("name: n", "schedule: \"foo 02:30\", all: true"),
			`unable to parse calendar event at 'foo' - Context("weekday")`},
		{"schedule missing", job("name: n", "all: true"), "schedule"},
		{"no guests said", job("name: n", "schedule: daily"), "guests, selector or all"},
		{"two ways", job("name: n", "schedule: daily, all: true, guests: [vm-a]"), "exclude one another"},
		{"selector with tags and pool", job("name: n", "schedule: daily, selector: {tags: [a], pool: p}"), "either tags or pool"},
		{"exclude with names", job("name: n", "schedule: daily, guests: [vm-a], exclude: [db]"), "exclude applies to all or to a tag selector"},
		{"by VMIDs of guests on the cluster", job("name: n", "schedule: daily, guests: [\"105\", vm-a]"), ""},
		{"a VMID too small", job("name: n", "schedule: daily, guests: [\"99\"]"), "VMID 99 is not 100-999999999"},
		{"undeclared guest", job("name: n", "schedule: daily, guests: [nope]"), "no VirtualMachine, Container or Template nope is declared"},
		{"notes without storage", job("name: n", "schedule: daily, all: true, notesTemplate: x"), "notesTemplate needs storage"},
		{"notes with an unknown variable", job("name: n", "schedule: daily, all: true, storage: local, notesTemplate: \"{{host}}\""), "found unknown: variable 'host'"},
		{"bad mailto", job("name: n", "schedule: daily, all: true, mailto: [\"a b\"]"), "valid email address or user name"},
		{"retention of zero", job("name: n", "schedule: daily, all: true, retention: {keepLast: 0, keepDaily: -1}"), "keepDaily"},
		{"name too long", job("name: "+strings.Repeat("a", 42), "schedule: daily, all: true"), "at most 41 characters"},
		{"tags", job("name: n, tags: [a]", "schedule: daily, all: true"), "BackupJob has no Proxmox tags"},
		{"node", job("name: n, node: pve1", "schedule: daily, all: true"), "cluster-wide"},
	}
	checkValidation(t, tests, map[string]string{"vm.yaml": vm, "ct.yaml": ct})
}

// A job names its guests as dependencies, so the graph links it to them.
func TestBackupJobDependsOnItsGuests(t *testing.T) {
	set := loadSet(t, map[string]string{
		"vm.yaml":  vmHead + "  vmid: 100\n  image: {source: https://example.com/x.img}\n  disks: [{slot: scsi0, storage: local-lvm, size: 10G}]\n",
		"job.yaml": "apiVersion: proxmops.dev/v1\nkind: BackupJob\nmetadata: {name: nightly}\nspec: {schedule: daily, guests: [vm-a]}\n",
	})
	deps := Dependencies(set.Get(KindBackupJob, "nightly"))
	if len(deps) != 1 || deps[0].Key() != "VirtualMachine/vm-a" || deps[0].Path != "spec.guests[0]" || deps[0].Relation != RelationBacksUp {
		t.Fatalf("dependencies %+v", deps)
	}
}

// A tag selector links the job to the declared guests carrying every tag
// (less exclude).
func TestBackupJobDependsOnTheGuestsItsTagsSelect(t *testing.T) {
	guest := func(name, vmid, tags string) string {
		return "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: " + name + ", node: pve1, tags: [" + tags + "]}\nspec: {vmid: " + vmid + "}\n"
	}
	set := loadSet(t, map[string]string{
		"a.yaml":   guest("a", "100", "prod, db"),
		"b.yaml":   guest("b", "101", "Prod"),
		"c.yaml":   guest("c", "102", "lab"),
		"d.yaml":   guest("d", "103", "prod"),
		"job.yaml": "apiVersion: proxmops.dev/v1\nkind: BackupJob\nmetadata: {name: nightly}\nspec: {schedule: daily, selector: {tags: [prod]}, exclude: [d]}\n",
	})
	var keys []string
	for _, e := range Dependencies(set.Get(KindBackupJob, "nightly")) {
		keys = append(keys, string(e.Relation)+":"+e.Key()+"@"+e.Path)
	}
	if got := strings.Join(keys, " "); got != "backsUp:VirtualMachine/a@spec.selector.tags backsUp:VirtualMachine/b@spec.selector.tags excludes:VirtualMachine/d@spec.exclude[0]" {
		t.Fatalf("dependencies: %s", got)
	}
}

func TestBackupRetentionIsProxmoxsPruneBackups(t *testing.T) {
	for _, c := range []struct {
		r    *BackupRetention
		want string
	}{
		{nil, ""},
		{&BackupRetention{}, "keep-all=1"},
		{&BackupRetention{KeepLast: 3, KeepDaily: 7, KeepYearly: 1}, "keep-daily=7,keep-last=3,keep-yearly=1"},
	} {
		if got := c.r.PruneBackups(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.r, got, c.want)
		}
	}
}

// The card's line of a tagless kind says what the manifest declares.
func TestClusterKindsSummariseTheirManifest(t *testing.T) {
	off, on := false, true
	for _, c := range []struct {
		r    Resource
		want string
	}{
		{&BackupJob{Spec: BackupJobSpec{Schedule: "02:30", Storage: "pbs", Guests: []string{"web", "db"}}}, "02:30 · 2 guests · to pbs"},
		{&BackupJob{Spec: BackupJobSpec{Schedule: "daily", Guests: []string{"web"}, Enabled: &off}}, "daily · 1 guest · disabled"},
		{&BackupJob{Spec: BackupJobSpec{Schedule: "sat 03:00", Selector: &BackupSelector{Tags: []string{"prod", "db"}}, Exclude: []string{"x"}}}, "sat 03:00 · tagged prod, db less 1"},
		{&BackupJob{Spec: BackupJobSpec{Schedule: "daily", Selector: &BackupSelector{Pool: "prod"}}}, "daily · pool prod"},
		{&BackupJob{Spec: BackupJobSpec{Schedule: "daily", All: true}}, "daily · all guests"},
		{&FirewallAlias{Spec: FirewallAliasSpec{CIDR: "192.168.1.0/24"}}, "192.168.1.0/24"},
		{&FirewallIPSet{Spec: FirewallIPSetSpec{Entries: []FirewallIPSetEntry{{CIDR: "10.0.0.1"}, {CIDR: "10.0.0.2"}}}}, "2 entries"},
		{&Pool{Spec: PoolSpec{Comment: "Production"}}, "Production"},
		{&Storage{Spec: StorageSpec{Type: "nfs", Content: []string{"iso", "vztmpl"}}}, "nfs · iso, vztmpl"},
		{&HARule{Spec: HARuleSpec{Type: "node-affinity", Nodes: []HARuleNode{{Node: "pve1", Priority: 2}, {Node: "pve2"}}, Strict: true}}, "on pve1 (2), pve2 · strict"},
		{&HARule{Spec: HARuleSpec{Type: "resource-affinity", Affinity: "negative", Enabled: &off}}, "apart · disabled"},
		{&FirewallGroup{Spec: FirewallGroupSpec{Rules: []FirewallRule{{Type: "in", Action: "ACCEPT"}}}}, "1 rule"},
		{&ClusterFirewall{Spec: ClusterFirewallSpec{Enabled: &on, PolicyIn: "DROP", Rules: []FirewallRule{{}, {}}}}, "enabled · in DROP · 2 own rules"},
		{&ClusterFirewall{}, "0 own rules"},
		{&VirtualMachine{}, ""},
	} {
		if got := Summary(c.r); got != c.want {
			t.Errorf("%s: Summary = %q, want %q", c.r.Kind(), got, c.want)
		}
	}
}
