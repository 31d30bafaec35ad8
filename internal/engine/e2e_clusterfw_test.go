package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

func clusterFWYAML(spec string) string {
	return "apiVersion: proxmops.dev/v1\nkind: ClusterFirewall\nmetadata:\n  name: cluster\nspec:\n" + spec
}

// assertClusterRules fails unless the cluster's rule list reads as the
// lines want (as clusterRuleLines), in order; when says at which point.
func assertClusterRules(t *testing.T, c *pve.Client, when string, want ...string) {
	t.Helper()
	if got, w := clusterRuleLines(t, c), strings.Join(want, "\n"); got != w {
		t.Fatalf("rules %s:\n%s\nwant:\n%s", when, got, w)
	}
}

// clusterRuleLines reads the cluster's rule list, one "type action fields
// # comment" line per rule.
func clusterRuleLines(t *testing.T, c *pve.Client) string {
	t.Helper()
	var out []string
	for _, r := range fwList(t, c, "cluster/firewall/rules") {
		line := r["type"].(string) + " " + r["action"].(string)
		for _, k := range []string{"macro", "proto", "dport", "source"} {
			if v, ok := r[k].(string); ok {
				line += " " + k + "=" + v
			}
		}
		if c, ok := r["comment"].(string); ok {
			line += " # " + c
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

func clusterOptions(t *testing.T, c *pve.Client) map[string]any {
	t.Helper()
	var opts map[string]any
	if err := c.Get(context.Background(), "cluster/firewall/options", nil, &opts); err != nil {
		t.Fatal(err)
	}
	return opts
}

// The cluster firewall's declared options and proxmops' own rules are
// set (its first rules go first in the list); the rules people made in
// the cluster's list keep their order and content; drift of an option or of a marked rule is found and fixed, an
// undeclared option is never touched, and the rules go in before the
// firewall is turned on.
func TestClusterFirewallOptionsAndOwnRulesAmongHandMadeOnes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	addRule(t, e.client, "cluster/firewall/rules", "type", "in", "action", "ACCEPT", "macro", "Ping", "comment", "by hand", "enable", "1")
	if err := e.client.Put(ctx, "cluster/firewall/options", pve.NewParams().Set("policy_out", "REJECT"), nil); err != nil {
		t.Fatal(err)
	}
	e.write("fw/cluster.yaml", clusterFWYAML(`  enabled: true
  policyIn: DROP
  rules:
    - { type: in, action: ACCEPT, proto: tcp, dport: "8006,22", source: 127.0.0.1, comment: proxmops itself }
    - { type: in, action: ACCEPT, macro: HTTPS }
`))
	eng := e.engine(engine.Options{})
	a := e.plan(eng).Find(engine.KindClusterFirewall, "cluster")
	if a.Action != vocab.ActionUpdate || fwChangePaths(a) != "enable@spec.enabled rules[0]@spec.rules[0] rules[1]@spec.rules[1]" {
		t.Fatalf("planned %s %s: %s", a.Action, a.Reason, fwChangePaths(a))
	}
	e.converge(eng)
	want := []string{
		"in ACCEPT proto=tcp dport=8006,22 source=127.0.0.1 # proxmops itself (managed-by-proxmops)",
		"in ACCEPT macro=HTTPS # managed-by-proxmops",
		"in ACCEPT macro=Ping # by hand",
	}
	assertClusterRules(t, e.client, "after the create", want...)
	if o := clusterOptions(t, e.client); o["enable"] != float64(1) || o["policy_out"] != "REJECT" {
		t.Fatalf("options: %v", o)
	}
	e.assertInSync(eng)

	// By hand: the firewall turned off, a marked rule changed, a rule
	// added first.
	if err := e.client.Put(ctx, "cluster/firewall/options", pve.NewParams().Set("enable", "0"), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Put(ctx, "cluster/firewall/rules/1", pve.NewParams().Set("macro", "HTTP"), nil); err != nil {
		t.Fatal(err)
	}
	addRule(t, e.client, "cluster/firewall/rules", "type", "out", "action", "ACCEPT", "comment", "new by hand", "enable", "1")
	a = e.plan(eng).Find(engine.KindClusterFirewall, "cluster")
	if got := fwChangePaths(a); a.Action != vocab.ActionUpdate || got != "enable@spec.enabled rules[1]@spec.rules[1]" {
		t.Fatalf("drift %s: %s", a.Action, got)
	}
	e.converge(eng)
	assertClusterRules(t, e.client, "after the fix", append([]string{"out ACCEPT # new by hand"}, want...)...)
	e.assertInSync(eng)
}

// Never cut its own cord: turning the firewall on with a dropping input
// policy, or setting such a policy while it is on, is refused with the
// rule to add when nothing lets proxmops' own address (here the loopback
// address its connection to the API uses) or the management IP set reach
// ports 8006 and 22, or when a rule before the one that would drops them;
// nothing is changed. With the rule the plan goes through.
func TestClusterFirewallRefusesToCutProxmopsOff(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	eng := e.engine(engine.Options{})
	refused := func(spec, want string) {
		t.Helper()
		e.write("fw/cluster.yaml", clusterFWYAML(spec))
		before := clusterOptions(t, e.client)
		p, rep := e.apply(eng)
		a := p.Find(engine.KindClusterFirewall, "cluster")
		if a.Status != vocab.StatusFailed || a.Runnable() || !strings.Contains(a.Reason, want) {
			t.Fatalf("planned %s %s: %s\nwant a refusal with %q", a.Action, a.Status, a.Reason, want)
		}
		for _, r := range rep.Results {
			if r.Kind == engine.KindClusterFirewall && r.Status == vocab.StatusSynced {
				t.Fatalf("a refused action ran: %+v", r)
			}
		}
		if o := clusterOptions(t, e.client); o["digest"] != before["digest"] {
			t.Fatalf("a refused plan changed the options: %v, were %v", o, before)
		}
	}
	refused("  enabled: true\n",
		`TCP 8006 from proxmops' own address 127.0.0.1 is dropped by the input policy; TCP 22 from proxmops' own address 127.0.0.1 is dropped by the input policy. Add { type: in, action: ACCEPT, proto: tcp, dport: "8006,22", source: 127.0.0.1 } to spec.rules`)
	refused("  enabled: true\n  rules:\n    - { type: in, action: DROP, source: 127.0.0.0/8 }\n    - { type: in, action: ACCEPT, macro: SSH, source: 127.0.0.1 }\n    - { type: in, action: ACCEPT, proto: tcp, dport: \"8006\", source: 127.0.0.1 }\n",
		"TCP 8006 from proxmops' own address 127.0.0.1 is dropped by the cluster's rule 0 (in DROP -source 127.0.0.0/8 # managed-by-proxmops)")

	// The management IP set must keep its access too.
	if err := e.client.Post(ctx, "cluster/firewall/ipset", pve.NewParams().Set("name", "management"), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Post(ctx, "cluster/firewall/ipset/management", pve.NewParams().Set("cidr", "10.0.0.0/24"), nil); err != nil {
		t.Fatal(err)
	}
	addRule(t, e.client, "cluster/firewall/rules", "type", "in", "action", "DROP", "source", "10.0.0.0/8", "comment", "by hand", "enable", "1")
	own := "    - { type: in, action: ACCEPT, proto: tcp, dport: \"22,8006\", source: 127.0.0.1 }\n"
	refused("  enabled: true\n  rules:\n"+own,
		"TCP 8006 from the management IP set (10.0.0.0/24) is dropped by the cluster's rule 1 (in DROP -source 10.0.0.0/8 # by hand)")
	if err := e.client.Delete(ctx, "cluster/firewall/rules/0", nil, nil); err != nil {
		t.Fatal(err)
	}
	assertClusterRules(t, e.client, "after a refused plan")

	// With the rule, the firewall goes on; then a REJECT policy without
	// it is refused while the firewall is on.
	e.write("fw/cluster.yaml", clusterFWYAML("  enabled: true\n  policyIn: DROP\n  rules:\n"+own))
	e.converge(eng)
	if o := clusterOptions(t, e.client); o["enable"] != float64(1) {
		t.Fatalf("options: %v", o)
	}
	refused("  policyIn: REJECT\n", "input policy REJECT")
	if o := clusterOptions(t, e.client); o["policy_in"] == "REJECT" {
		t.Fatalf("the policy was changed: %v", o)
	}

	// Nor may the rule that lets proxmops in go while the firewall is on.
	refused("  rules:\n    - { type: in, action: ACCEPT, macro: HTTPS }\n", "TCP 8006 from proxmops' own address 127.0.0.1 is dropped by the input policy")
	if got := clusterRuleLines(t, e.client); !strings.Contains(got, "dport=22,8006 source=127.0.0.1") {
		t.Fatalf("a refused plan changed the rules:\n%s", got)
	}

	// In sync, a pass reads the options and the rules only.
	e.write("fw/cluster.yaml", clusterFWYAML("  enabled: true\n  policyIn: DROP\n  rules:\n"+own))
	e.sim.ResetRequests()
	e.assertInSync(eng)
	if n := e.sim.RequestCountFor("GET", "/cluster/firewall/ipset"); n != 0 {
		t.Fatalf("an in-sync pass read the IP sets %d times", n)
	}
}
