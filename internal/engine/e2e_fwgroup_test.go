package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

const fwWebGroupYAML = `apiVersion: proxmops.dev/v1
kind: FirewallGroup
metadata:
  name: webserver
spec:
  comment: public web
  rules:
    - { type: in, action: ACCEPT, proto: tcp, dport: "80,443", comment: web }
    - { type: in, action: ACCEPT, macro: ssh, source: +admins, log: info }
    - { type: out, action: DROP, dest: 192.168.0.0/16, enable: false }
`

// groupRules reads a group's rules as lines "type action|macro fields".
func groupRules(t *testing.T, c *pve.Client, group string) string {
	t.Helper()
	var out []string
	for _, r := range fwList(t, c, "cluster/firewall/groups/"+group) {
		var parts []string
		for _, k := range []string{"type", "action", "macro", "proto", "dport", "source", "dest", "log", "enable", "comment"} {
			if v, ok := r[k]; ok {
				parts = append(parts, k+"="+fmt.Sprint(v))
			}
		}
		out = append(out, strings.Join(parts, " "))
	}
	return strings.Join(out, "\n")
}

func addRule(t *testing.T, c *pve.Client, path string, kv ...string) {
	t.Helper()
	p := pve.NewParams()
	for i := 0; i < len(kv); i += 2 {
		p.Set(kv[i], kv[i+1])
	}
	if err := c.Post(context.Background(), path, p, nil); err != nil {
		t.Fatal(err)
	}
}

// A security group is created after the IP set its rules name, with the
// mark in its comment and its rules in order (the macro in Proxmox's
// spelling, the disabled rule disabled); it is in sync on the next plan;
// rules changed, added and reordered by hand are found position by
// position with the rule on one line, and put back.
func TestFirewallGroupCreatedInSyncDriftFixedByPosition(t *testing.T) {
	e, eng := withManifests(t, engine.Options{},
		"fw/admins.yaml", fwAdminsYAML,
		"fw/lan.yaml", fwAliasYAML("lan", "192.168.1.0/24", "home LAN"),
		"fw/web.yaml", fwWebGroupYAML,
	)
	g := e.plan(eng).Find(engine.KindFirewallGroup, "webserver")
	if g.Action != vocab.ActionCreate || strings.Join(g.DependsOn, " ") != "FirewallIPSet/admins" {
		t.Fatalf("group planned %s, depends on %v", g.Action, g.DependsOn)
	}
	if got := fwChangePaths(g); got != "comment@spec.comment rules[0]@spec.rules[0] rules[1]@spec.rules[1] rules[2]@spec.rules[2]" {
		t.Fatalf("changes %s", got)
	}
	e.converge(eng)
	groups := fwList(t, e.client, "cluster/firewall/groups")
	if len(groups) != 1 || groups[0]["comment"] != "public web (managed-by-proxmops)" {
		t.Fatalf("groups: %v", groups)
	}
	want := "type=in action=ACCEPT proto=tcp dport=80,443 enable=1 comment=web\n" +
		"type=in action=ACCEPT macro=SSH source=+admins log=info enable=1\n" +
		"type=out action=DROP dest=192.168.0.0/16 enable=0"
	if got := groupRules(t, e.client, "webserver"); got != want {
		t.Fatalf("rules:\n%s\nwant:\n%s", got, want)
	}
	e.assertInSync(eng)

	// By hand: a rule put first, the SSH rule's source changed.
	ctx := context.Background()
	addRule(t, e.client, "cluster/firewall/groups/webserver", "type", "in", "action", "ACCEPT", "proto", "udp", "dport", "53", "enable", "1")
	if err := e.client.Put(ctx, "cluster/firewall/groups/webserver/2", pve.NewParams().Set("source", "dc/lan"), nil); err != nil {
		t.Fatal(err)
	}
	g = e.plan(eng).Find(engine.KindFirewallGroup, "webserver")
	var lines []string
	for _, c := range g.Changes {
		lines = append(lines, c.Path+": "+c.From+" => "+c.To)
	}
	wantChanges := "spec.rules[0]: in ACCEPT -p udp -dport 53 => in ACCEPT -p tcp -dport 80,443 # web\n" +
		"spec.rules[1]: in ACCEPT -p tcp -dport 80,443 # web => in SSH(ACCEPT) -source +admins -log info\n" +
		"spec.rules[2]: in SSH(ACCEPT) -source dc/lan -log info => disabled: out DROP -dest 192.168.0.0/16\n" +
		"spec.rules[3]: disabled: out DROP -dest 192.168.0.0/16 => "
	if got := strings.Join(lines, "\n"); g.Action != vocab.ActionUpdate || got != wantChanges {
		t.Fatalf("drift %s:\n%s\nwant:\n%s", g.Action, got, wantChanges)
	}
	// The detail shows the cluster's list beside the manifest's, in the
	// manifest's form and the cluster's order.
	observed, _ := json.Marshal(g.Observed["rules"])
	wantObserved := `[{"type":"in","action":"ACCEPT","proto":"udp","dport":"53"},` +
		`{"type":"in","action":"ACCEPT","proto":"tcp","dport":"80,443","comment":"web"},` +
		`{"type":"in","action":"ACCEPT","macro":"SSH","source":"dc/lan","log":"info"},` +
		`{"type":"out","action":"DROP","dest":"192.168.0.0/16","enable":false}]`
	if string(observed) != wantObserved {
		t.Fatalf("observed rules:\n%s\nwant:\n%s", observed, wantObserved)
	}
	e.converge(eng)
	if got := groupRules(t, e.client, "webserver"); got != want {
		t.Fatalf("rules after the fix:\n%s\nwant:\n%s", got, want)
	}
	e.assertInSync(eng)
}

// A group made by hand is left alone, prune on or not; a manifest naming
// it is a Conflict until annotated for adoption, which marks its comment
// and makes its rules the manifest's.
func TestFirewallGroupMadeByHandLeftAloneThenAdopted(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, g := range []string{"legacy", "webserver"} {
		if err := e.client.Post(ctx, "cluster/firewall/groups", pve.NewParams().Set("group", g).Set("comment", "by hand"), nil); err != nil {
			t.Fatal(err)
		}
		addRule(t, e.client, "cluster/firewall/groups/"+g, "type", "in", "action", "DROP", "proto", "tcp", "dport", "23", "enable", "1")
	}
	e.write("fw/admins.yaml", fwAdminsYAML)
	e.write("fw/lan.yaml", fwAliasYAML("lan", "192.168.1.0/24", "home LAN"))
	pruning := e.engine(engine.Options{Prune: true})
	e.converge(pruning)
	if a := e.plan(pruning).Find(engine.KindFirewallGroup, "legacy"); a != nil {
		t.Fatalf("a hand-made group is planned: %+v", a)
	}
	e.write("fw/web.yaml", fwWebGroupYAML)
	a := e.plan(pruning).Find(engine.KindFirewallGroup, "webserver")
	if !a.Conflicted() || a.Runnable() || !strings.Contains(a.Reason, "does not own") {
		t.Fatalf("declared hand-made group: %s %s", a.Status, a.Reason)
	}
	e.apply(pruning)
	if got := groupRules(t, e.client, "webserver"); got != "type=in action=DROP proto=tcp dport=23 enable=1" {
		t.Fatalf("a conflicting group was touched:\n%s", got)
	}
	e.write("fw/web.yaml", strings.Replace(fwWebGroupYAML, "  name: webserver\n", "  name: webserver\n  annotations: { proxmops.dev/adopt: \"true\" }\n", 1))
	a = e.plan(pruning).Find(engine.KindFirewallGroup, "webserver")
	if !a.Adopt || a.Action != vocab.ActionUpdate || !strings.Contains(fwChangePaths(a), "comment (ownership)") {
		t.Fatalf("adoption: %s %s %v", a.Action, a.Reason, fwChangePaths(a))
	}
	e.converge(pruning)
	if got := fwList(t, e.client, "cluster/firewall/groups"); got[1]["comment"] != "public web (managed-by-proxmops)" {
		t.Fatalf("groups after adoption: %v", got)
	}
	if got := groupRules(t, e.client, "legacy"); got != "type=in action=DROP proto=tcp dport=23 enable=1" {
		t.Fatalf("the hand-made group was touched:\n%s", got)
	}
	e.assertInSync(pruning)
}

// Pruning an owned group a guest's rule still applies is refused, naming
// the guest, and leaves the group and its rules whole (Proxmox would
// delete an emptied group and leave the guest's rule applying nothing);
// once no rule applies it, prune removes its rules and the group.
func TestFirewallGroupPruneRefusedWhileAGuestAppliesIt(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.write("fw/admins.yaml", fwAdminsYAML)
	e.write("fw/lan.yaml", fwAliasYAML("lan", "192.168.1.0/24", "home LAN"))
	e.write("fw/web.yaml", fwWebGroupYAML)
	pruning := e.engine(engine.Options{Prune: true})
	e.converge(pruning)
	if err := e.client.Post(ctx, "nodes/pve2/qemu", pve.NewParams().Set("vmid", "321").Set("name", "handmade"), nil); err != nil {
		t.Fatal(err)
	}
	addRule(t, e.client, "nodes/pve2/qemu/321/firewall/rules", "type", "group", "action", "webserver", "enable", "1")
	e.remove("fw/web.yaml")
	a := e.plan(pruning).Find(engine.KindFirewallGroup, "webserver")
	if a == nil || a.Action != vocab.ActionDelete {
		t.Fatalf("orphan group: %+v", a)
	}
	_, rep := e.apply(pruning)
	var res *engine.Result
	for i := range rep.Results {
		if rep.Results[i].Kind == engine.KindFirewallGroup {
			res = &rep.Results[i]
		}
	}
	// Terminal (Retry false): a person must remove the rule first, so the
	// daemon does not read every guest's rules again on each pass.
	if res == nil || res.Status != vocab.StatusFailed || res.Retry || !strings.Contains(res.Error, "still applied by VM 321's rules") {
		t.Fatalf("prune of a used group: %+v", res)
	}
	if got := groupRules(t, e.client, "webserver"); strings.Count(got, "\n") != 2 {
		t.Fatalf("the used group lost rules:\n%s", got)
	}
	if err := e.client.Delete(ctx, "nodes/pve2/qemu/321/firewall/rules/0", nil, nil); err != nil {
		t.Fatal(err)
	}
	e.converge(pruning)
	if got := fwList(t, e.client, "cluster/firewall/groups"); len(got) != 0 {
		t.Fatalf("groups after prune: %v", got)
	}
}
