package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

const (
	fwVM = webVM + `  cores: 1
  memory: 512
  net:
    - bridge: vmbr0
      firewall: true
  firewall:
    enabled: true
    policyIn: DROP
    policyOut: ACCEPT
    macfilter: false
    logLevelIn: info
`
	fwCT = dnsCT + `  template: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
  rootfs: { storage: local-lvm, size: 2G }
  net:
    - bridge: vmbr0
      ip: dhcp
      firewall: true
  firewall:
    enabled: true
    policyIn: REJECT
    ipfilter: true
    ndp: false
`
)

// guestFWOptions reads a guest's firewall options as Proxmox returns them.
func guestFWOptions(t *testing.T, c *pve.Client, typ string, vmid int) map[string]string {
	t.Helper()
	var raw map[string]any
	if err := c.Get(context.Background(), fmt.Sprintf("nodes/pve1/%s/%d/firewall/options", typ, vmid), nil, &raw); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range raw {
		if k != "digest" {
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}

func setGuestFW(t *testing.T, c *pve.Client, typ string, vmid int, kv ...string) {
	t.Helper()
	p := pve.NewParams()
	for i := 0; i < len(kv); i += 2 {
		p.Set(kv[i], kv[i+1])
	}
	if err := c.Put(context.Background(), fmt.Sprintf("nodes/pve1/%s/%d/firewall/options", typ, vmid), p, nil); err != nil {
		t.Fatal(err)
	}
}

func fwChanges(a *engine.Action) map[string]vocab.Change {
	out := map[string]vocab.Change{}
	for _, c := range a.Changes {
		if strings.HasPrefix(c.Path, "spec.firewall") {
			out[c.Path] = c
		}
	}
	return out
}

func addDebianTemplate(t *testing.T, e *env) {
	t.Helper()
	if err := e.sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
}

// A VM's and a container's declared firewall options are set when they
// are created, in sync on the next plan; options changed or removed by
// hand are found by field and put back with their manifest paths, and an
// option the manifest leaves out stays as a person set it.
func TestGuestFirewallOptionsCreatedInSyncAndDriftFixed(t *testing.T) {
	e := newEnv(t)
	addDebianTemplate(t, e)
	e.write("vms/web.yaml", fwVM)
	e.write("ct/dns.yaml", fwCT)
	eng := e.engine(engine.Options{})
	p := e.plan(eng)
	web, dns := p.Find(engine.KindVirtualMachine, "web"), p.Find(engine.KindContainer, "dns")
	if c := fwChanges(web); web.Action != vocab.ActionCreate || c["spec.firewall.enabled"].To != "1" || c["spec.firewall.policyIn"].To != "DROP" || len(c) != 5 {
		t.Fatalf("web: %s %+v", web.Action, web.Changes)
	}
	if c := fwChanges(dns); dns.Action != vocab.ActionCreate || c["spec.firewall.ndp"].To != "0" || len(c) != 4 {
		t.Fatalf("dns: %s %+v", dns.Action, dns.Changes)
	}
	e.converge(eng)
	want := map[string]string{"enable": "1", "policy_in": "DROP", "policy_out": "ACCEPT", "macfilter": "0", "log_level_in": "info"}
	if got := guestFWOptions(t, e.client, "qemu", 150); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("web's firewall options: %v, want %v", got, want)
	}
	wantCT := map[string]string{"enable": "1", "policy_in": "REJECT", "ipfilter": "1", "ndp": "0"}
	if got := guestFWOptions(t, e.client, "lxc", 250); fmt.Sprint(got) != fmt.Sprint(wantCT) {
		t.Fatalf("dns's firewall options: %v, want %v", got, wantCT)
	}
	e.assertInSync(eng)

	// Changed and removed by hand; an undeclared option set by hand.
	setGuestFW(t, e.client, "qemu", 150, "enable", "0", "delete", "policy_in", "dhcp", "1")
	setGuestFW(t, e.client, "lxc", 250, "policy_in", "ACCEPT")
	p = e.plan(eng)
	web, dns = p.Find(engine.KindVirtualMachine, "web"), p.Find(engine.KindContainer, "dns")
	c := fwChanges(web)
	if web.Action != vocab.ActionUpdate || len(c) != 2 || c["spec.firewall.enabled"].From != "0" || c["spec.firewall.policyIn"] != (vocab.Change{Field: "firewall.policy_in", Path: "spec.firewall.policyIn", To: "DROP"}) {
		t.Fatalf("web's drift: %s %+v", web.Action, web.Changes)
	}
	if c := fwChanges(dns); dns.Action != vocab.ActionUpdate || len(c) != 1 || c["spec.firewall.policyIn"].From != "ACCEPT" {
		t.Fatalf("dns's drift: %s %+v", dns.Action, dns.Changes)
	}
	e.converge(eng)
	want["dhcp"] = "1"
	if got := guestFWOptions(t, e.client, "qemu", 150); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("web's firewall options after the fix: %v, want %v", got, want)
	}
	e.assertInSync(eng)
}

const fwOptionsPath = "/nodes/{node}/qemu/{vmid}/firewall/options"

// A guest whose manifest has no spec.firewall keeps the firewall a person
// gave it, and its options are never read; one whose manifest declares no
// option keeps its options too.
func TestGuestWithoutSpecFirewallLeftAlone(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{Prune: true}, "vms/web.yaml", strings.Split(fwVM, "  firewall:\n")[0])
	setGuestFW(t, e.client, "qemu", 150, "enable", "1", "policy_in", "ACCEPT")
	before := e.sim.RequestCountFor("GET", fwOptionsPath)
	e.assertInSync(eng)
	if n := e.sim.RequestCountFor("GET", fwOptionsPath) - before; n != 0 {
		t.Errorf("a plan of a guest without spec.firewall read its firewall options %d times", n)
	}
	e.write("vms/web.yaml", strings.Split(fwVM, "  firewall:\n")[0]+"  firewall: {}\n")
	e.converge(eng)
	e.assertInSync(eng)
	if got := guestFWOptions(t, e.client, "qemu", 150); fmt.Sprint(got) != fmt.Sprint(map[string]string{"enable": "1", "policy_in": "ACCEPT"}) {
		t.Fatalf("options changed: %v", got)
	}
}

// With a read cache, a guest's firewall is read with its configuration,
// never on a pass that serves the guest from the cache, and a change by
// hand is found within the cache's period, which the firewall's read
// stretches: each guest's read costs two requests (configuration and
// options), so the 10-minute budget reads every guest in 20 minutes.
func TestGuestFirewallReadAtTheDriftCheckCadence(t *testing.T) {
	const n, every, interval = 20, 10 * time.Minute, time.Minute
	e, eng, cache, clock, fleet := cachedFleet(t, n, every)
	desired := withFirewalls(fleet, func(int) *engine.GuestFirewallSpec {
		return &engine.GuestFirewallSpec{Options: []engine.GuestFirewallOption{{Key: "enable", Path: "spec.firewall.enabled", Value: "1"}}}
	})
	if _, err := eng.Apply(context.Background(), planOK(t, eng, desired()), nil); err != nil {
		t.Fatal(err)
	}
	for id := 1000; id < 1000+n; id++ {
		if got := guestFWOptions(t, e.client, "qemu", id)["enable"]; got != "1" {
			t.Fatalf("guest %d: enable %q", id, got)
		}
	}
	clock.Advance(time.Second)
	planOK(t, eng, desired()) // reads what the apply changed
	setGuestFW(t, e.client, "qemu", 1003, "enable", "0")
	var found time.Duration
	period := cache.Period()
	if period != 2*every {
		t.Fatalf("Period %s, want %s (two requests a guest)", period, 2*every)
	}
	start := e.sim.RequestCountFor("GET", fwOptionsPath)
	for pass := 1; pass <= int(period/interval)+1 && found == 0; pass++ {
		clock.Advance(interval)
		before := e.sim.RequestCountFor("GET", fwOptionsPath)
		p := planOK(t, eng, desired())
		if reads := e.sim.RequestCountFor("GET", fwOptionsPath) - before; reads != int64(p.Stats.ConfigsRead) || reads >= n/2 {
			t.Errorf("pass %d read %d firewalls and %d configurations of %d guests", pass, reads, p.Stats.ConfigsRead, n)
		}
		for _, a := range p.Actions {
			if a.Action == vocab.ActionNone {
				continue
			}
			if c := fwChanges(a)["spec.firewall.enabled"]; a.VMID != 1003 || c.From != "0" || len(a.Changes) != 1 {
				t.Fatalf("pass %d: %s %s %+v", pass, a.Key(), a.Action, a.Changes)
			}
			found = time.Duration(pass) * interval
		}
	}
	// Each guest once in the period, and 1003 again for its plan.
	if total := e.sim.RequestCountFor("GET", fwOptionsPath) - start; total > n+1 {
		t.Errorf("%d passes read %d firewalls of %d guests", found/interval, total, n)
	}
	if found == 0 || found > period+interval {
		t.Errorf("the hand change was found after %s, want within %s", found, period+interval)
	}
}

// A token without VM.Config.Network on the guest cannot set its firewall:
// the plan names the privilege before anything is done, and the options
// stay as they are.
func TestGuestFirewallChangeNeedsVMConfigNetwork(t *testing.T) {
	e := newEnvWith(t, func(o *pvesim.Options) { o.TokenPrivileges = allPrivilegesBut() })
	e.write("vms/web.yaml", fwVM)
	eng := e.engine(engine.Options{})
	e.converge(eng)
	setGuestFW(t, e.client, "qemu", 150, "enable", "0")
	e.sim.SetTokenPrivileges(allPrivilegesBut("VM.Config.Network"))
	a := e.plan(eng).Find(engine.KindVirtualMachine, "web")
	want := "the API token lacks VM.Config.Network on /vms/150, needed to set the guest's firewall"
	if a.Status != vocab.StatusFailed || a.Runnable() || !strings.Contains(a.Reason, want) {
		t.Fatalf("planned %s %s: %s, want %q", a.Action, a.Status, a.Reason, want)
	}
	if _, err := eng.Apply(context.Background(), e.plan(eng), nil); err != nil {
		t.Fatal(err)
	}
	if got := guestFWOptions(t, e.client, "qemu", 150)["enable"]; got != "0" {
		t.Fatalf("enable %q after a refused plan", got)
	}
}

// A firewall enabled on a guest none of whose declared network devices
// has firewall: true filters nothing: the plan says so, and still sets it.
func TestGuestFirewallWithoutFilteredNICIsNoted(t *testing.T) {
	e, eng := withManifests(t, engine.Options{}, "vms/web.yaml", strings.Replace(fwVM, "      firewall: true\n", "", 1))
	note := "no network device has firewall: true, so Proxmox filters none of the guest's traffic"
	if a := e.plan(eng).Find(engine.KindVirtualMachine, "web"); !strings.Contains(a.Reason, note) {
		t.Fatalf("create: %q", a.Reason)
	}
	e.converge(eng)
	setGuestFW(t, e.client, "qemu", 150, "enable", "0")
	assertPlanned(t, e.plan(eng), engine.KindVirtualMachine, "web", vocab.ActionUpdate, note)
	e.write("vms/web.yaml", fwVM)
	setGuestFW(t, e.client, "qemu", 150, "enable", "0")
	if a := e.plan(eng).Find(engine.KindVirtualMachine, "web"); strings.Contains(a.Reason, note) {
		t.Fatalf("with a filtered NIC: %q", a.Reason)
	}
}

const fwRules = `    rules:
      - { type: group, action: webserver, iface: net0 }
      - { type: in, action: ACCEPT, macro: SSH, source: 192.168.1.0/24, comment: admins }
      - { type: in, action: ACCEPT, proto: tcp, dport: "8080", log: info }
`

// guestRuleLines lists a guest's rules by position, one line each.
func guestRuleLines(t *testing.T, c *pve.Client, typ string, vmid int) []string {
	t.Helper()
	var list []map[string]any
	if err := c.Get(context.Background(), fmt.Sprintf("nodes/pve1/%s/%d/firewall/rules", typ, vmid), nil, &list); err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, r := range list {
		if fmt.Sprint(r["pos"]) != fmt.Sprint(i) {
			t.Fatalf("rule %d has pos %v", i, r["pos"])
		}
		line := ""
		for _, k := range []string{"type", "action", "macro", "iface", "source", "proto", "dport", "log", "enable", "comment"} {
			if v, ok := r[k]; ok {
				line += fmt.Sprintf("%s=%v ", k, v)
			}
		}
		out = append(out, strings.TrimSpace(line))
	}
	return out
}

var wantFWRuleLines = []string{
	"type=group action=webserver iface=net0 enable=1",
	"type=in action=ACCEPT macro=SSH source=192.168.1.0/24 enable=1 comment=admins",
	"type=in action=ACCEPT proto=tcp dport=8080 log=info enable=1",
}

func postGuestRule(t *testing.T, c *pve.Client, vmid int, kv ...string) {
	t.Helper()
	p := pve.NewParams()
	for i := 0; i < len(kv); i += 2 {
		p.Set(kv[i], kv[i+1])
	}
	if err := c.Post(context.Background(), fmt.Sprintf("nodes/pve1/qemu/%d/firewall/rules", vmid), p, nil); err != nil {
		t.Fatal(err)
	}
}

// A guest's rules are the whole list, in order: created with the guest,
// in sync on the next plan; a rule added, changed or disabled by hand is
// found by position and the list put back; without rules in the manifest
// the list is left alone, and rules: [] empties it.
func TestGuestFirewallRulesAreTheWholeListByPosition(t *testing.T) {
	e := newEnv(t)
	if err := e.client.Post(context.Background(), "cluster/firewall/groups", pve.NewParams().Set("group", "webserver"), nil); err != nil {
		t.Fatal(err)
	}
	e.write("vms/web.yaml", fwVM+fwRules)
	eng := e.engine(engine.Options{})
	web := e.plan(eng).Find(engine.KindVirtualMachine, "web")
	if c := fwChanges(web)["spec.firewall.rules[1]"]; c.To != "in SSH(ACCEPT) -source 192.168.1.0/24 # admins" {
		t.Fatalf("create: %+v", web.Changes)
	}
	e.converge(eng)
	if got := guestRuleLines(t, e.client, "qemu", 150); fmt.Sprint(got) != fmt.Sprint(wantFWRuleLines) {
		t.Fatalf("rules after the create:\n%s", strings.Join(got, "\n"))
	}
	e.assertInSync(eng)

	// By hand: a rule added first, the last one's port changed, the SSH
	// rule (now at 2) disabled.
	postGuestRule(t, e.client, 150, "type", "out", "action", "DROP", "enable", "1")
	if err := e.client.Put(context.Background(), "nodes/pve1/qemu/150/firewall/rules/3", pve.NewParams().Set("dport", "8081"), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Put(context.Background(), "nodes/pve1/qemu/150/firewall/rules/2", pve.NewParams().Set("enable", "0"), nil); err != nil {
		t.Fatal(err)
	}
	web = e.plan(eng).Find(engine.KindVirtualMachine, "web")
	c := fwChanges(web)
	if web.Action != vocab.ActionUpdate || len(c) != 4 || c["spec.firewall.rules[0]"].From != "out DROP" || c["spec.firewall.rules[3]"].To != "" {
		t.Fatalf("drift: %s %+v", web.Action, web.Changes)
	}
	e.converge(eng)
	if got := guestRuleLines(t, e.client, "qemu", 150); fmt.Sprint(got) != fmt.Sprint(wantFWRuleLines) {
		t.Fatalf("rules after the fix:\n%s", strings.Join(got, "\n"))
	}
	e.assertInSync(eng)

	// Rules left out: the list is a person's again.
	e.write("vms/web.yaml", fwVM)
	postGuestRule(t, e.client, 150, "type", "in", "action", "ACCEPT", "macro", "HTTP")
	e.assertInSync(eng)
	if got := guestRuleLines(t, e.client, "qemu", 150); len(got) != 4 {
		t.Fatalf("rules left alone: %v", got)
	}
	e.write("vms/web.yaml", fwVM+"    rules: []\n")
	e.converge(eng)
	if got := guestRuleLines(t, e.client, "qemu", 150); len(got) != 0 {
		t.Fatalf("rules: [] left %v", got)
	}
	e.assertInSync(eng)
}

// A clone starts with its template's firewall (clone_vmfw_conf copies the
// file): the new guest's rules and options are brought to the manifest
// in the same apply.
func TestGuestFirewallOfACloneReplacesTheTemplates(t *testing.T) {
	e := newEnv(t)
	if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 9000, Node: "pve1", Config: map[string]string{"name": "base-tpl", "template": "1",
		"boot": "order=scsi0", "scsi0": "local-lvm:base-9000-disk-0,size=2G", "net0": "virtio=BC:24:11:00:90:00,bridge=vmbr0,firewall=1"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Post(context.Background(), "cluster/firewall/groups", pve.NewParams().Set("group", "webserver"), nil); err != nil {
		t.Fatal(err)
	}
	postGuestRule(t, e.client, 9000, "type", "in", "action", "DROP", "enable", "1", "comment", "from the template")
	setGuestFW(t, e.client, "qemu", 9000, "policy_in", "ACCEPT", "dhcp", "1")
	e.write("vms/web.yaml", strings.Replace(fwVM, "  cores: 1\n", "  fromTemplate: base-tpl\n  cores: 1\n", 1)+fwRules)
	eng := e.engine(engine.Options{})
	e.converge(eng)
	if got := guestRuleLines(t, e.client, "qemu", 150); fmt.Sprint(got) != fmt.Sprint(wantFWRuleLines) {
		t.Fatalf("the clone's rules:\n%s", strings.Join(got, "\n"))
	}
	want := map[string]string{"enable": "1", "policy_in": "DROP", "policy_out": "ACCEPT", "macfilter": "0", "log_level_in": "info", "dhcp": "1"}
	if got := guestFWOptions(t, e.client, "qemu", 150); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the clone's options: %v, want %v", got, want)
	}
	e.assertInSync(eng)
}

// A rule of type group naming a declared FirewallGroup makes the guest
// depend on it: the group is created first, then the guest's rules that
// apply it.
func TestGuestFirewallGroupRuleDependsOnTheDeclaredGroup(t *testing.T) {
	e := newEnv(t)
	e.write("fw/web.yaml", `apiVersion: proxmops.dev/v1
kind: FirewallGroup
metadata:
  name: webserver
spec:
  rules:
    - { type: in, action: ACCEPT, proto: tcp, dport: "80,443" }
`)
	e.write("vms/web.yaml", fwVM+fwRules)
	eng := e.engine(engine.Options{})
	web := e.plan(eng).Find(engine.KindVirtualMachine, "web")
	if !slices.Contains(web.DependsOn, "FirewallGroup/webserver") {
		t.Fatalf("web depends on %v", web.DependsOn)
	}
	e.converge(eng)
	if got := guestRuleLines(t, e.client, "qemu", 150); fmt.Sprint(got) != fmt.Sprint(wantFWRuleLines) {
		t.Fatalf("rules:\n%s", strings.Join(got, "\n"))
	}
	e.assertInSync(eng)
}
