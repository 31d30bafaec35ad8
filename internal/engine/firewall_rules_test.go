package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/pvesim"
)

// ruleSim is a simulator with one empty security group "web", and a client.
func ruleSim(t *testing.T) *pve.Client {
	t.Helper()
	sim := simtest.Start(t, pvesim.Options{Nodes: 1, TokenID: "root@pam!rules", TokenSecret: "s", Seed: 1})
	c, err := pve.New(pve.Config{Endpoint: sim.APIURL(), TokenID: "root@pam!rules", TokenSecret: "s", RetryBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.Post(context.Background(), "cluster/firewall/groups", pve.NewParams().Set("group", "web"), nil); err != nil {
		t.Fatal(err)
	}
	return c
}

// handRules puts rules into a list through the API, in this order.
func handRules(t *testing.T, c *pve.Client, path string, rules ...map[string]string) {
	t.Helper()
	for i := len(rules) - 1; i >= 0; i-- {
		p := pve.NewParams().Set("enable", "1")
		for k, v := range rules[i] {
			p.Set(k, v)
		}
		if err := c.Post(context.Background(), path, p, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func listRules(t *testing.T, c *pve.Client, path string) []collItem {
	t.Helper()
	var got []map[string]any
	if err := c.Get(context.Background(), path, nil, &got); err != nil {
		t.Fatal(err)
	}
	var out []collItem
	for _, m := range got {
		out = append(out, stringValues(m))
	}
	return out
}

func ruleLines(rules []collItem) string {
	var out []string
	for _, r := range rules {
		out = append(out, ruleLine(r))
	}
	return strings.Join(out, "\n")
}

var (
	ruleWeb   = manifest.FirewallRule{Type: "in", Action: "ACCEPT", Proto: "tcp", Dport: "80,443"}
	ruleSSH   = manifest.FirewallRule{Type: "in", Action: "ACCEPT", Macro: "SSH", Source: "10.0.0.0/8", Comment: "admins"}
	rulePing  = manifest.FirewallRule{Type: "in", Action: "ACCEPT", Proto: "icmp", ICMPType: "echo-request", Log: "info"}
	ruleDropO = manifest.FirewallRule{Type: "out", Action: "DROP", Dest: "192.168.0.0/16", Enable: new(bool)}
)

// A rule list is compared by position, one change per differing position
// with each rule on one line, and applied over the API until the list is
// the wanted one, whatever it held: empty, reordered, with rules to
// change, to clear fields of, to add and to remove.
func TestRuleListBecomesTheWantedOneByPosition(t *testing.T) {
	const path = "cluster/firewall/groups/web"
	tests := []struct {
		name    string
		have    []map[string]string
		want    []manifest.FirewallRule
		changes string
	}{
		{"from empty", nil, []manifest.FirewallRule{ruleWeb, ruleSSH, rulePing},
			"spec.rules[0]:  -> in ACCEPT -p tcp -dport 80,443|spec.rules[1]:  -> in SSH(ACCEPT) -source 10.0.0.0/8 # admins|spec.rules[2]:  -> in ACCEPT -p icmp -log info -icmp-type echo-request"},
		{"swapped, one cleared", []map[string]string{{"type": "in", "action": "ACCEPT", "macro": "SSH", "source": "10.0.0.0/8", "comment": "admins"},
			{"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "80", "macro": "HTTP"}}, []manifest.FirewallRule{ruleWeb, ruleSSH},
			"spec.rules[0]: in SSH(ACCEPT) -source 10.0.0.0/8 # admins -> in ACCEPT -p tcp -dport 80,443|spec.rules[1]: in HTTP(ACCEPT) -p tcp -dport 80 -> in SSH(ACCEPT) -source 10.0.0.0/8 # admins"},
		{"extra rules removed", []map[string]string{{"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "80,443"},
			{"type": "in", "action": "DROP", "proto": "udp"}, {"type": "out", "action": "ACCEPT"}}, []manifest.FirewallRule{ruleWeb},
			"spec.rules[1]: in DROP -p udp -> |spec.rules[2]: out ACCEPT -> "},
		{"disabled and added", []map[string]string{{"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "80,443"},
			{"type": "out", "action": "DROP", "dest": "192.168.0.0/16"}}, []manifest.FirewallRule{ruleWeb, ruleDropO, rulePing},
			"spec.rules[1]: out DROP -dest 192.168.0.0/16 -> disabled: out DROP -dest 192.168.0.0/16|spec.rules[2]:  -> in ACCEPT -p icmp -log info -icmp-type echo-request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ruleSim(t)
			handRules(t, c, path, tt.have...)
			l := ruleList{path: path, field: "spec.rules"}
			changes, plan := l.diffRules(listRules(t, c, path), tt.want)
			var got []string
			for _, ch := range changes {
				if "spec."+ch.Field != ch.Path {
					t.Errorf("change field %s, path %s", ch.Field, ch.Path)
				}
				got = append(got, ch.Path+": "+ch.From+" -> "+ch.To)
			}
			if strings.Join(got, "|") != tt.changes {
				t.Fatalf("changes\n%s\nwant\n%s", strings.Join(got, "|"), tt.changes)
			}
			if err := plan.apply(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			var want []collItem
			for _, w := range tt.want {
				want = append(want, ruleFields(w))
			}
			after := listRules(t, c, path)
			if ruleLines(after) != ruleLines(want) {
				t.Fatalf("list after apply:\n%s\nwant:\n%s", ruleLines(after), ruleLines(want))
			}
			if ch, p := l.diffRules(after, tt.want); ch != nil || p != nil {
				t.Fatalf("not in sync after apply: %v", ch)
			}
		})
	}
}

// In a list shared with people, only the rules carrying the ownership mark
// are proxmops': they are changed, removed and added in their order, new
// ones after proxmops' last, and every other rule keeps its place and
// content.
func TestSharedRuleListTouchesOnlyMarkedRules(t *testing.T) {
	const path = "cluster/firewall/rules"
	c := ruleSim(t)
	handRules(t, c, path,
		map[string]string{"type": "in", "action": "ACCEPT", "macro": "SSH", "comment": "by hand"},
		map[string]string{"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "8006", "comment": markOwned("gui")},
		map[string]string{"type": "in", "action": "DROP", "proto": "udp", "comment": "by hand too"},
		map[string]string{"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "22", "comment": markOwned("")},
		map[string]string{"type": "out", "action": "ACCEPT", "comment": markOwned("old")},
		map[string]string{"type": "in", "action": "REJECT", "comment": "last by hand"})
	gui := manifest.FirewallRule{Type: "in", Action: "ACCEPT", Proto: "tcp", Dport: "8006", Comment: "gui"}
	ssh := manifest.FirewallRule{Type: "in", Action: "ACCEPT", Proto: "tcp", Dport: "22", Source: "10.0.0.0/8"}
	l := ruleList{path: path, field: "spec.rules", shared: true}
	changes, plan := l.diffRules(listRules(t, c, path), []manifest.FirewallRule{gui, ssh, rulePing, ruleWeb})
	var got []string
	for _, ch := range changes {
		got = append(got, ch.Field)
	}
	if strings.Join(got, " ") != "rules[1] rules[2] rules[3]" {
		t.Fatalf("changes %v", changes)
	}
	if err := plan.apply(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"in SSH(ACCEPT) # by hand",
		"in ACCEPT -p tcp -dport 8006 # gui (managed-by-proxmops)",
		"in DROP -p udp # by hand too",
		"in ACCEPT -source 10.0.0.0/8 -p tcp -dport 22 # managed-by-proxmops",
		"in ACCEPT -p icmp -log info -icmp-type echo-request # managed-by-proxmops",
		"in ACCEPT -p tcp -dport 80,443 # managed-by-proxmops",
		"in REJECT # last by hand"}, "\n")
	if got := ruleLines(listRules(t, c, path)); got != want {
		t.Fatalf("cluster rules:\n%s\nwant:\n%s", got, want)
	}
}

// A list changed by someone else after the plan read it is not
// clobbered: the apply fails before its first change and asks for a new
// plan.
func TestRuleListChangedSincePlanFailsTheApply(t *testing.T) {
	const path = "cluster/firewall/groups/web"
	c := ruleSim(t)
	handRules(t, c, path, map[string]string{"type": "in", "action": "DROP", "proto": "udp"})
	_, plan := ruleList{path: path, field: "spec.rules"}.diffRules(listRules(t, c, path), []manifest.FirewallRule{ruleWeb})
	handRules(t, c, path, map[string]string{"type": "in", "action": "ACCEPT", "macro": "SSH", "comment": "just added"})
	err := plan.apply(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "changed since the plan") {
		t.Fatalf("apply over a changed list: %v", err)
	}
	if got := ruleLines(listRules(t, c, path)); got != "in SSH(ACCEPT) # just added\nin DROP -p udp" {
		t.Fatalf("list touched:\n%s", got)
	}
}

// What the manifest's rule checks accept, the simulator's verify_rule
// accepts in a security group, and what they refuse it refuses too (an
// IP set the rules name exists; the cases are the manifest's own kinds
// of mistakes).
func TestManifestRuleChecksAgreeWithVerifyRule(t *testing.T) {
	const path = "cluster/firewall/groups/web"
	c := ruleSim(t)
	if err := c.Post(context.Background(), "cluster/firewall/ipset", pve.NewParams().Set("name", "admins"), nil); err != nil {
		t.Fatal(err)
	}
	rules := []manifest.FirewallRule{
		ruleWeb, ruleSSH, rulePing, ruleDropO,
		{Type: "in", Action: "ACCEPT", Macro: "ssh", Source: "+admins"},
		{Type: "forward", Action: "DROP", Proto: "udp", Sport: "53", Dport: "1024:65535"},
		{Type: "in", Action: "ACCEPT", Proto: "icmp", Dport: "echo-request"},
		{Type: "in", Action: "ACCEPT", Source: "10.0.0.1-10.0.0.9", Dest: "fd00::/64"},
		{Type: "in", Action: "ACCEPT", Macro: "SSH", Proto: "udp"},
		{Type: "in", Action: "ACCEPT", Proto: "tcp", Dport: "90:80"},
		{Type: "in", Action: "ACCEPT", Dport: "22"},
		{Type: "in", Action: "ACCEPT", Proto: "icmp", ICMPType: "neighbor-solicitation"},
		{Type: "in", Action: "ACCEPT", Source: "10.1.2.3/16"},
		{Type: "in", Action: "ACCEPT", Source: "10.0.0.1,fd00::1"},
		{Type: "forward", Action: "REJECT"},
		{Type: "group", Action: "other"},
		{Type: "in", Action: "ACCEPT", Iface: "net0"},
		{Type: "in", Action: "ACCEPT", Proto: "tcp", Dport: "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15:16"},
	}
	for _, r := range rules {
		manifestOK := len(manifest.FirewallRuleErrors(manifest.FirewallRulesGroup, &r)) == 0
		err := c.Post(context.Background(), path, ruleParams(ruleFields(r), false), nil)
		if manifestOK != (err == nil) {
			t.Errorf("%s: the manifest says valid=%v, Proxmox says %v", ruleLine(ruleFields(r)), manifestOK, err)
		}
	}
}
