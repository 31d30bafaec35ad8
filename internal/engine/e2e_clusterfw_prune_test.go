package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// removedRules lists a prune action's changes: "rules[2]: in ACCEPT ...".
func removedRules(a *engine.Action) string {
	var out []string
	for _, c := range a.Changes {
		out = append(out, c.Field+": "+c.From+" -> "+c.To)
	}
	return strings.Join(out, "\n")
}

// With the ClusterFirewall manifest removed, proxmops' marked rules are
// orphans: prune off leaves them (unread); prune on removes them
// in one action that names each rule by its position in the cluster's
// list, and leaves the hand-made rules and the options as they are.
func TestClusterFirewallUndeclaredMarkedRulesPrunedHandMadeKept(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.write("fw/cluster.yaml", clusterFWYAML(`  policyOut: REJECT
  rules:
    - { type: in, action: ACCEPT, macro: HTTPS }
    - { type: in, action: ACCEPT, proto: tcp, dport: "8080", comment: app }
`))
	keeping, pruning := e.engine(engine.Options{}), e.engine(engine.Options{Prune: true})
	e.converge(keeping)
	addRule(t, e.client, "cluster/firewall/rules", "type", "in", "action", "ACCEPT", "macro", "Ping", "comment", "by hand", "enable", "1")
	if err := e.client.Put(ctx, "cluster/firewall/rules/0", pve.NewParams().Set("moveto", "2"), nil); err != nil {
		t.Fatal(err)
	}
	before := []string{
		"in ACCEPT macro=HTTPS # managed-by-proxmops",
		"in ACCEPT macro=Ping # by hand",
		"in ACCEPT proto=tcp dport=8080 # app (managed-by-proxmops)",
	}
	assertClusterRules(t, e.client, "before", before...)
	e.remove("fw/cluster.yaml")

	// Prune off: nothing of the cluster firewall is read or planned, as
	// for every cluster-wide collection with nothing declared.
	if a := e.plan(keeping).Find(engine.KindClusterFirewall, "cluster"); a != nil {
		t.Fatalf("prune off planned %+v", a)
	}
	e.apply(keeping)
	assertClusterRules(t, e.client, "with prune off", before...)

	a := e.plan(pruning).Find(engine.KindClusterFirewall, "cluster")
	want := "rules[0]: in HTTPS(ACCEPT) -> \n" +
		"rules[2]: in ACCEPT -p tcp -dport 8080 # app -> "
	if a == nil || a.Action != vocab.ActionDelete || !a.Runnable() || removedRules(a) != want ||
		!strings.Contains(a.Reason, "the firewall's options stay as they are") {
		t.Fatalf("prune planned %+v\nchanges:\n%s\nwant:\n%s", a, removedRules(a), want)
	}
	e.converge(pruning)
	assertClusterRules(t, e.client, "after prune", "in ACCEPT macro=Ping # by hand")
	if o := clusterOptions(t, e.client); o["policy_out"] != "REJECT" {
		t.Fatalf("prune changed the options: %v", o)
	}
	if a := e.assertInSync(pruning).Find(engine.KindClusterFirewall, "cluster"); a != nil {
		t.Fatalf("nothing left to prune, yet planned %+v", a)
	}
}

// Never cut its own cord, also when pruning: removing proxmops' own
// ACCEPT rule while the firewall is on with a dropping input policy is
// refused with the rule to add and nothing is removed; a hand-made rule
// that lets proxmops in, or the firewall turned off, lets the removal go.
func TestClusterFirewallPruneRefusesToCutProxmopsOff(t *testing.T) {
	e := newEnv(t)
	e.write("fw/cluster.yaml", clusterFWYAML(`  enabled: true
  policyIn: DROP
  rules:
    - { type: in, action: ACCEPT, proto: tcp, dport: "8006,22", source: 127.0.0.1, comment: proxmops itself }
`))
	pruning := e.engine(engine.Options{Prune: true})
	e.converge(pruning)
	e.remove("fw/cluster.yaml")
	options := clusterOptions(t, e.client)
	own := "in ACCEPT proto=tcp dport=8006,22 source=127.0.0.1 # proxmops itself (managed-by-proxmops)"

	p, rep := e.apply(pruning)
	a := p.Find(engine.KindClusterFirewall, "cluster")
	want := `TCP 8006 from proxmops' own address 127.0.0.1 is dropped by the input policy; TCP 22 from proxmops' own address 127.0.0.1 is dropped by the input policy. Add { type: in, action: ACCEPT, proto: tcp, dport: "8006,22", source: 127.0.0.1 } to the cluster's rule list`
	if a == nil || a.Action != vocab.ActionDelete || a.Status != vocab.StatusFailed || a.Runnable() || !strings.Contains(a.Reason, want) {
		t.Fatalf("planned %+v\nwant a refusal with %q", a, want)
	}
	for _, r := range rep.Results {
		if r.Kind == engine.KindClusterFirewall && r.Status == vocab.StatusSynced {
			t.Fatalf("a refused removal ran: %+v", r)
		}
	}
	assertClusterRules(t, e.client, "after a refused removal", own)

	// A rule made by hand lets proxmops in: its own rule may go.
	addRule(t, e.client, "cluster/firewall/rules", "type", "in", "action", "ACCEPT", "proto", "tcp", "dport", "8006,22", "source", "127.0.0.1", "comment", "by hand", "enable", "1")
	e.converge(pruning)
	assertClusterRules(t, e.client, "after prune", "in ACCEPT proto=tcp dport=8006,22 source=127.0.0.1 # by hand")
	if o := clusterOptions(t, e.client); o["enable"] != float64(1) || o["digest"] != options["digest"] {
		t.Fatalf("prune changed the options: %v", o)
	}
	e.assertInSync(pruning)
}

// With the firewall off, the guard has nothing to keep: the marked rules
// go. In sync, a pruning pass reads the rule list once, and not the
// options.
func TestClusterFirewallPruneWithTheFirewallOffReadsTheRulesOnce(t *testing.T) {
	e := newEnv(t)
	e.write("fw/cluster.yaml", clusterFWYAML("  rules:\n    - { type: in, action: DROP, source: 127.0.0.1 }\n"))
	pruning := e.engine(engine.Options{Prune: true})
	e.converge(pruning)
	e.remove("fw/cluster.yaml")
	e.converge(pruning)
	assertClusterRules(t, e.client, "after prune")
	e.sim.ResetRequests()
	e.assertInSync(pruning)
	if n := e.sim.RequestCountFor("GET", "/cluster/firewall/rules"); n != 1 {
		t.Fatalf("an in-sync pass read the cluster's rules %d times", n)
	}
	if n := e.sim.RequestCountFor("GET", "/cluster/firewall/options"); n != 0 {
		t.Fatalf("an in-sync pass read the options %d times", n)
	}
}
