package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

func fwAliasYAML(name, cidr, comment string) string {
	return "apiVersion: proxmops.dev/v1\nkind: FirewallAlias\nmetadata:\n  name: " + name + "\nspec:\n  cidr: " + cidr + "\n  comment: " + comment + "\n"
}

const fwAdminsYAML = `apiVersion: proxmops.dev/v1
kind: FirewallIPSet
metadata:
  name: admins
spec:
  comment: admin workstations
  entries:
    - cidr: 192.168.1.10/32
    - { cidr: 192.168.1.11, comment: laptop }
    - { cidr: 10.9.8.7/16, nomatch: true }
    - { cidr: lan, comment: the whole LAN }
`

// fwList reads a firewall listing through the API.
func fwList(t *testing.T, c *pve.Client, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	if err := c.Get(context.Background(), path, nil, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// listItem reads the list at path and returns its item whose key is value,
// or nil when there is none.
func listItem(t *testing.T, c *pve.Client, path, key, value string) map[string]any {
	t.Helper()
	for _, it := range fwList(t, c, path) {
		if it[key] == value {
			return it
		}
	}
	return nil
}

func fwChangePaths(a *engine.Action) string {
	var out []string
	for _, c := range a.Changes {
		out = append(out, c.Field+"@"+c.Path)
	}
	return strings.Join(out, " ")
}

// An alias and an IP set (whose entry names the alias) are created with
// proxmops' mark in their comments, in sync on the next plan, and drift
// made through the API (an alias's address and comment, an entry removed,
// one added by hand, one's comment changed) is found field by field with
// its manifest path and fixed.
func TestFirewallAliasAndIPSetCreatedInSyncDriftFixed(t *testing.T) {
	e, eng := withManifests(t, engine.Options{},
		"fw/lan.yaml", fwAliasYAML("lan", "192.168.1.0/24", "home LAN"),
		"fw/admins.yaml", fwAdminsYAML,
	)
	ctx := context.Background()
	p := e.plan(eng)
	set := p.Find(engine.KindFirewallIPSet, "admins")
	if set.Action != vocab.ActionCreate || !strings.Contains(strings.Join(set.DependsOn, " "), "FirewallAlias/lan") {
		t.Fatalf("IP set planned %s, depends on %v", set.Action, set.DependsOn)
	}
	e.converge(eng)
	aliases := fwList(t, e.client, "cluster/firewall/aliases")
	if len(aliases) != 1 || aliases[0]["comment"] != "home LAN (managed-by-proxmops)" || aliases[0]["cidr"] != "192.168.1.0/24" {
		t.Fatalf("aliases: %v", aliases)
	}
	entries := fwList(t, e.client, "cluster/firewall/ipset/admins")
	var cidrs []string
	for _, en := range entries {
		cidrs = append(cidrs, en["cidr"].(string))
	}
	if got := strings.Join(cidrs, " "); got != "10.9.0.0/16 192.168.1.10 192.168.1.11 lan" {
		t.Fatalf("entries as Proxmox keeps them: %s", got)
	}
	e.assertInSync(eng)

	// Drift, made as a person would.
	digest := aliases[0]["digest"].(string)
	if err := e.client.Put(ctx, "cluster/firewall/aliases/lan", pve.NewParams().Set("cidr", "192.168.2.0/24").Set("comment", "edited (managed-by-proxmops)").Set("digest", digest), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Delete(ctx, "cluster/firewall/ipset/admins/"+pve.PathEscape("192.168.1.11"), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Post(ctx, "cluster/firewall/ipset/admins", pve.NewParams().Set("cidr", "172.16.0.1"), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Put(ctx, "cluster/firewall/ipset/admins/"+pve.PathEscape("10.9.0.0/16"), pve.NewParams().Set("comment", "hand"), nil); err != nil {
		t.Fatal(err)
	}
	p = e.plan(eng)
	a := p.Find(engine.KindFirewallAlias, "lan")
	if a.Action != vocab.ActionUpdate || fwChangePaths(a) != "cidr@spec.cidr comment@spec.comment" {
		t.Fatalf("alias drift: %s %s", a.Action, fwChangePaths(a))
	}
	s := p.Find(engine.KindFirewallIPSet, "admins")
	const wantObservedEntries = `[{"cidr":"10.9.0.0/16","comment":"hand"},{"cidr":"172.16.0.1"},{"cidr":"192.168.1.10"},{"cidr":"lan","comment":"the whole LAN"}]`
	want := "entries[172.16.0.1]@spec.entries entries[10.9.0.0/16].nomatch@spec.entries[2].nomatch entries[10.9.0.0/16].comment@spec.entries[2].comment entries[192.168.1.11]@spec.entries[1]"
	if s.Action != vocab.ActionUpdate || fwChangePaths(s) != want {
		t.Fatalf("IP set drift: %s\n got %s\nwant %s", s.Action, fwChangePaths(s), want)
	}
	// The detail shows the cluster's entries in the manifest's form, as
	// Proxmox lists them.
	if got, _ := json.Marshal(s.Observed["entries"]); string(got) != wantObservedEntries {
		t.Fatalf("observed entries:\n%s\nwant:\n%s", got, wantObservedEntries)
	}
	e.converge(eng)
	e.assertInSync(eng)
	if got := fwList(t, e.client, "cluster/firewall/ipset/admins"); len(got) != 4 {
		t.Fatalf("entries after the fix: %v", got)
	}
}

// Aliases and IP sets made by hand are left alone, also with prune on; a
// declared name held by one is a Conflict and never changed; proxmops'
// own, no longer declared, are pruned only with prune on; adoption marks
// the comment and applies the differences.
func TestFirewallHandMadeLeftAloneConflictPruneAdopt(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, n := range []string{"theirs", "Other"} {
		if err := e.client.Post(ctx, "cluster/firewall/aliases", pve.NewParams().Set("name", n).Set("cidr", "10.0.0.1").Set("comment", "by hand"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.client.Post(ctx, "cluster/firewall/ipset", pve.NewParams().Set("name", "handset"), nil); err != nil {
		t.Fatal(err)
	}
	e.write("fw/mine.yaml", fwAliasYAML("mine", "10.1.1.1", "mine"))
	e.write("fw/other.yaml", fwAliasYAML("other", "10.2.2.2", "declared"))
	pruning := e.engine(engine.Options{Prune: true})
	p := e.plan(pruning)
	if a := p.Find(engine.KindFirewallAlias, "other"); a.Status != vocab.StatusConflict || a.Action != vocab.ActionNone || !a.Conflicted() {
		t.Fatalf("a declared name held by hand: %s %s %s", a.Status, a.Action, a.Reason)
	}
	for _, k := range []string{"FirewallAlias/theirs", "FirewallIPSet/handset"} {
		kind, name, _ := strings.Cut(k, "/")
		if a := p.Find(kind, name); a != nil {
			t.Fatalf("%s made by hand is in the plan: %s %s", k, a.Action, a.Reason)
		}
	}
	e.converge(pruning)
	if a := fwAlias(t, e.client, "Other"); a["cidr"] != "10.0.0.1" || a["comment"] != "by hand" {
		t.Fatalf("the conflicting alias was changed: %v", a)
	}

	// No longer declared: kept with prune off, deleted with it on.
	e.remove("fw/mine.yaml")
	assertPlanned(t, e.plan(e.engine(engine.Options{})), engine.KindFirewallAlias, "mine", vocab.ActionNone, "prune is off")
	p = e.plan(pruning)
	if a := p.Find(engine.KindFirewallAlias, "mine"); a.Action != vocab.ActionDelete {
		t.Fatalf("mine with prune on: %s %s", a.Action, a.Reason)
	}
	e.converge(pruning)
	if fwAlias(t, e.client, "mine") != nil || fwAlias(t, e.client, "theirs") == nil {
		t.Fatal("prune removed the wrong aliases")
	}

	// Adoption: the hand-made alias becomes proxmops', the manifest wins.
	e.write("fw/other.yaml", strings.Replace(fwAliasYAML("other", "10.2.2.2", "declared"), "  name: other\n", "  name: other\n  annotations: {proxmops.dev/adopt: \"true\"}\n", 1))
	p = e.plan(pruning)
	assertPlanned(t, p, engine.KindFirewallAlias, "other", vocab.ActionUpdate, "adopting alias Other")
	e.converge(pruning)
	if a := fwAlias(t, e.client, "other"); a["cidr"] != "10.2.2.2" || a["comment"] != "declared (managed-by-proxmops)" {
		t.Fatalf("adopted alias: %v", a)
	}
	e.assertInSync(pruning)

	// Delete on request: the owned one goes, a hand-made one is refused.
	e.assertDeleteOnRequest(pruning, engine.KindFirewallAlias, "other", "other", "theirs",
		func(id string) bool { return fwAlias(t, e.client, id) != nil })
}

func fwAlias(t *testing.T, c *pve.Client, name string) map[string]any {
	t.Helper()
	for _, a := range fwList(t, c, "cluster/firewall/aliases") {
		if strings.EqualFold(a["name"].(string), name) {
			return a
		}
	}
	return nil
}

// A token without Sys.Modify on /: plan names it on the alias and the IP
// set and apply calls nothing; without Sys.Audit the listing's refusal
// is named.
func TestFirewallPlanNamesMissingSysModify(t *testing.T) {
	e := newEnvWith(t, func(o *pvesim.Options) { o.TokenPrivileges = allPrivilegesBut("Sys.Modify") })
	e.write("fw/lan.yaml", fwAliasYAML("lan", "192.168.1.0/24", "home LAN"))
	e.write("fw/admins.yaml", strings.Replace(fwAdminsYAML, "    - { cidr: lan, comment: the whole LAN }\n", "", 1))
	eng := e.engine(engine.Options{})
	p := e.plan(eng)
	for _, k := range []string{engine.KindFirewallAlias + "/lan", engine.KindFirewallIPSet + "/admins"} {
		kind, name, _ := strings.Cut(k, "/")
		a := p.Find(kind, name)
		if a == nil || a.Status != vocab.StatusFailed || a.Runnable() || !strings.Contains(a.Reason, "the API token lacks Sys.Modify on /") {
			t.Fatalf("%s planned %+v", k, a)
		}
	}
	e.applySendingNone(eng, p, [][2]string{{"POST", "/cluster/firewall/aliases"}, {"POST", "/cluster/firewall/ipset"}})

	e.sim.SetTokenPrivileges(allPrivilegesBut("Sys.Audit"))
	a := e.plan(eng).Find(engine.KindFirewallAlias, "lan")
	if a.Status != vocab.StatusUnknown || !strings.Contains(a.Reason, "lacks privilege Sys.Audit on /") {
		t.Fatalf("without Sys.Audit: %s %s", a.Status, a.Reason)
	}
}

// Each pass lists every collection with one request; an IP set's entries
// are read again only when the listing shows it changed (its comment),
// after proxmops changed it, or once the drift-check period has passed,
// when a change made by hand is found and fixed.
func TestFirewallRequestsPerPass(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.write("fw/lan.yaml", fwAliasYAML("lan", "192.168.1.0/24", "home LAN"))
	e.write("fw/admins.yaml", fwAdminsYAML)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	reads := engine.NewReadCache(time.Hour, func() time.Time { return now })
	eng := e.engine(engine.Options{Reads: reads})
	e.converge(eng)
	e.assertInSync(eng)

	counts := func() (aliases, sets, entries int64) {
		return e.sim.RequestCountFor("GET", "/cluster/firewall/aliases"), e.sim.RequestCountFor("GET", "/cluster/firewall/ipset"),
			e.sim.RequestCountFor("GET", "/cluster/firewall/ipset/{name}")
	}
	e.sim.ResetRequests()
	e.plan(eng)
	if a, s, n := counts(); a != 1 || s != 1 || n != 0 {
		t.Fatalf("a pass read aliases %d, IP sets %d, entries %d times; want 1, 1, 0", a, s, n)
	}

	// A hand edit of an entry: not seen within the period, found after it.
	if err := e.client.Delete(ctx, "cluster/firewall/ipset/admins/"+pve.PathEscape("192.168.1.11"), nil, nil); err != nil {
		t.Fatal(err)
	}
	if a := e.plan(eng).Find(engine.KindFirewallIPSet, "admins"); a.Status != vocab.StatusSynced {
		t.Fatalf("within the period: %s %s", a.Status, a.Reason)
	}
	now = now.Add(time.Hour)
	e.sim.ResetRequests()
	if a := e.plan(eng).Find(engine.KindFirewallIPSet, "admins"); a.Action != vocab.ActionUpdate {
		t.Fatalf("after the period: %s %s", a.Action, a.Reason)
	}
	if _, _, n := counts(); n != 1 {
		t.Fatalf("entries read %d times after the period, want 1", n)
	}
	e.converge(eng)
	e.assertInSync(eng)

	// A comment changed by hand shows in the listing: entries read at once.
	digest := fwList(t, e.client, "cluster/firewall/ipset")[0]["digest"].(string)
	if err := e.client.Post(ctx, "cluster/firewall/ipset", pve.NewParams().Set("name", "admins").Set("rename", "admins").Set("comment", "x (managed-by-proxmops)").Set("digest", digest), nil); err != nil {
		t.Fatal(err)
	}
	e.sim.ResetRequests()
	if a := e.plan(eng).Find(engine.KindFirewallIPSet, "admins"); a.Action != vocab.ActionUpdate || fwChangePaths(a) != "comment@spec.comment" {
		t.Fatalf("comment drift: %s %s", a.Action, fwChangePaths(a))
	}
	if _, _, n := counts(); n != 1 {
		t.Fatalf("entries read %d times after the listing changed, want 1", n)
	}
}
