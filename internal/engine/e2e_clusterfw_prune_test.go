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
// orphans: prune off reports them and leaves them; prune on removes them
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
	before := "in ACCEPT macro=HTTPS # managed-by-proxmops\n" +
		"in ACCEPT macro=Ping # by hand\n" +
		"in ACCEPT proto=tcp dport=8080 # app (managed-by-proxmops)"
	if got := clusterRuleLines(t, e.client); got != before {
		t.Fatalf("rules:\n%s\nwant:\n%s", got, before)
	}
	e.remove("fw/cluster.yaml")

	a := e.plan(keeping).Find(engine.KindClusterFirewall, "cluster")
	if a == nil || a.Action != vocab.ActionNone || a.Status != vocab.StatusOutOfSync || !a.Owned ||
		!strings.Contains(a.Reason, "the rules at 0, 2 of the cluster's rule list carry proxmops' mark") || !strings.Contains(a.Reason, "prune is off") {
		t.Fatalf("prune off planned %+v", a)
	}
	e.apply(keeping)
	if got := clusterRuleLines(t, e.client); got != before {
		t.Fatalf("prune off changed the rules:\n%s", got)
	}

	a = e.plan(pruning).Find(engine.KindClusterFirewall, "cluster")
	want := "rules[0]: in HTTPS(ACCEPT) -> \n" +
		"rules[2]: in ACCEPT -p tcp -dport 8080 # app -> "
	if a == nil || a.Action != vocab.ActionDelete || !a.Runnable() || removedRules(a) != want ||
		!strings.Contains(a.Reason, "the firewall's options stay as they are") {
		t.Fatalf("prune planned %+v\nchanges:\n%s\nwant:\n%s", a, removedRules(a), want)
	}
	e.converge(pruning)
	if got := clusterRuleLines(t, e.client); got != "in ACCEPT macro=Ping # by hand" {
		t.Fatalf("rules after prune:\n%s", got)
	}
	if o := clusterOptions(t, e.client); o["policy_out"] != "REJECT" {
		t.Fatalf("prune changed the options: %v", o)
	}
	if a := e.assertInSync(pruning).Find(engine.KindClusterFirewall, "cluster"); a != nil {
		t.Fatalf("nothing left to prune, yet planned %+v", a)
	}
}
