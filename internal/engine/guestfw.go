package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// A guest's own firewall (spec.firewall of VirtualMachine and Container):
// /nodes/{node}/{qemu,lxc}/{vmid}/firewall/options (pve-firewall
// API2/Firewall/VM.pm get_options, set_options). It belongs to the guest:
// an owned guest's firewall is proxmops' without a mark of its own. It is
// read with the guest's configuration, only for guests that declare it,
// and kept by the ReadCache with the configuration, so it costs nothing on
// a pass that serves the guest from the cache. An unset spec.firewall
// leaves the guest's firewall alone, an unset option leaves that option
// alone. Planned with the guest (planGuestFirewall).

// GuestFirewallSpec is a guest's declared firewall.
type GuestFirewallSpec struct {
	// Options are the declared options, in the order of guestFWOptions.
	Options []GuestFirewallOption
	// NoFilteredNIC: the manifest declares network devices and none has
	// firewall: true, so Proxmox filters none of the guest's traffic.
	NoFilteredNIC bool
	// Rules are the guest's whole rule list, in order, when RulesSet (the
	// manifest has rules, maybe empty); else the list is left alone.
	Rules    []manifest.FirewallRule
	RulesSet bool
	// Needs are the keys of the declared security groups, IP sets and
	// aliases the rules use (manifest.Dependencies): the firewall is
	// written after them, as Proxmox refuses a rule naming one that does
	// not exist.
	Needs []string
}

// GuestFirewallOption is one declared option: its Proxmox key, its
// manifest path and its value as Proxmox reads it back (booleans 0 or 1).
type GuestFirewallOption struct {
	Key, Path, Value string
}

// GuestFirewall is a guest's firewall as read: the options Proxmox keeps
// (booleans as "0"/"1") and their digest, and its rules by position when
// they were read (RulesRead).
type GuestFirewall struct {
	Options   map[string]string
	Digest    string
	Rules     []collItem
	RulesRead bool
}

func (f *GuestFirewall) clone() *GuestFirewall {
	if f == nil {
		return nil
	}
	out := &GuestFirewall{Options: maps.Clone(f.Options), Digest: f.Digest, RulesRead: f.RulesRead}
	for _, r := range f.Rules {
		out.Rules = append(out.Rules, maps.Clone(r))
	}
	return out
}

// guestFWOptions maps the manifest's options to Proxmox's keys
// ($vm_option_properties of Firewall.pm), in the manifest's order: get
// reads the manifest's value (false when unset), set writes one read from
// Proxmox.
var guestFWOptions = []fwOptionRow{
	fwBoolOption("enable", "enabled", func(f *manifest.GuestFirewall) **bool { return &f.Enabled }),
	fwStrOption("policy_in", "policyIn", func(f *manifest.GuestFirewall) *string { return &f.PolicyIn }),
	fwStrOption("policy_out", "policyOut", func(f *manifest.GuestFirewall) *string { return &f.PolicyOut }),
	fwBoolOption("macfilter", "macfilter", func(f *manifest.GuestFirewall) **bool { return &f.Macfilter }),
	fwBoolOption("ipfilter", "ipfilter", func(f *manifest.GuestFirewall) **bool { return &f.Ipfilter }),
	fwBoolOption("dhcp", "dhcp", func(f *manifest.GuestFirewall) **bool { return &f.DHCP }),
	fwBoolOption("ndp", "ndp", func(f *manifest.GuestFirewall) **bool { return &f.NDP }),
	fwBoolOption("radv", "radv", func(f *manifest.GuestFirewall) **bool { return &f.RAdv }),
	fwStrOption("log_level_in", "logLevelIn", func(f *manifest.GuestFirewall) *string { return &f.LogLevelIn }),
	fwStrOption("log_level_out", "logLevelOut", func(f *manifest.GuestFirewall) *string { return &f.LogLevelOut }),
}

// fwOptionRow is one option: its Proxmox key, its manifest field, how to
// read it from a manifest and write it into one.
type fwOptionRow struct {
	key, field string
	get        func(*manifest.GuestFirewall) (string, bool)
	set        func(*manifest.GuestFirewall, string)
}

func fwBoolOption(key, field string, at func(*manifest.GuestFirewall) **bool) fwOptionRow {
	return fwOptionRow{key: key, field: field,
		get: func(f *manifest.GuestFirewall) (string, bool) { return fwBool(*at(f)) },
		set: func(f *manifest.GuestFirewall, v string) {
			b := v == "1"
			*at(f) = &b
		}}
}

func fwStrOption(key, field string, at func(*manifest.GuestFirewall) *string) fwOptionRow {
	return fwOptionRow{key: key, field: field,
		get: func(f *manifest.GuestFirewall) (string, bool) { return *at(f), *at(f) != "" },
		set: func(f *manifest.GuestFirewall, v string) { *at(f) = v }}
}

func fwBool(b *bool) (string, bool) {
	if b == nil {
		return "", false
	}
	if *b {
		return "1", true
	}
	return "0", true
}

// GuestFirewallManifest is the spec.firewall that declares the options and
// rules a guest's firewall has (nil when it has none the manifest can
// say): what an export writes, so the plan that follows finds them in sync.
func GuestFirewallManifest(fw *GuestFirewall) *manifest.GuestFirewall {
	if fw == nil {
		return nil
	}
	out, found := &manifest.GuestFirewall{}, false
	for _, o := range guestFWOptions {
		// parse_vmfw_option reads an empty log level as ""; the manifest
		// has no word for it.
		if v, ok := fw.Options[o.key]; ok && v != "" {
			o.set(out, v)
			found = true
		}
	}
	if len(fw.Rules) > 0 {
		out.Rules, found = make([]manifest.FirewallRule, 0, len(fw.Rules)), true
		for _, r := range fw.Rules {
			out.Rules = append(out.Rules, RuleAsDeclared(r))
		}
	}
	if !found {
		return nil
	}
	return out
}

// guestFirewallFromManifest converts spec.firewall; nics are the firewall
// flags of the declared network devices, m the guest's Meta.
func guestFirewallFromManifest(f *manifest.GuestFirewall, nics []bool, m Meta) *GuestFirewallSpec {
	if f == nil {
		return nil
	}
	out := &GuestFirewallSpec{NoFilteredNIC: len(nics) > 0 && !slices.Contains(nics, true),
		Rules: f.Rules, RulesSet: f.Rules != nil, Needs: m.needs(KindFirewallGroup, KindFirewallIPSet, KindFirewallAlias)}
	for _, o := range guestFWOptions {
		if v, ok := o.get(f); ok {
			out.Options = append(out.Options, GuestFirewallOption{Key: o.key, Path: "spec.firewall." + o.field, Value: v})
		}
	}
	return out
}

// nicFirewalls lists the firewall flags of a guest's declared devices.
func nicFirewalls[N any](nics []N, flag func(N) bool) []bool {
	out := make([]bool, len(nics))
	for i, n := range nics {
		out[i] = flag(n)
	}
	return out
}

// guestFWPath is the guest's firewall API path.
func guestFWPath(typ, node string, vmid int) string {
	return "nodes/" + pve.PathEscape(node) + "/" + typ + "/" + strconv.Itoa(vmid) + "/firewall"
}

// readGuestFirewall reads the guest's firewall options (get_options:
// copy_opject_with_digest of the file's [OPTIONS], booleans as integers).
func (e *Engine) readGuestFirewall(ctx context.Context, g *Guest) error {
	fw, err := readFirewallAt(ctx, e.client, guestFWPath(g.Type, g.Node, g.VMID), g.wantFWRules)
	if err != nil {
		if pve.IsNotFound(err) {
			return err
		}
		return fmt.Errorf("reading the firewall of guest %d: %w", g.VMID, err)
	}
	g.Firewall = fw
	return nil
}

// readFirewallAt reads the firewall options at base and, when asked, its
// rules (get_rules: the list by position, each rule with its digest).
func readFirewallAt(ctx context.Context, c *pve.Client, base string, rules bool) (*GuestFirewall, error) {
	var raw map[string]any
	if err := c.Get(ctx, base+"/options", nil, &raw); err != nil {
		return nil, err
	}
	fw := &GuestFirewall{Options: map[string]string{}}
	for k, v := range raw {
		if k == "digest" {
			fw.Digest = anyString(v)
			continue
		}
		fw.Options[k] = anyString(v)
	}
	if rules {
		var list []map[string]any
		if err := c.Get(ctx, base+"/rules", nil, &list); err != nil {
			return nil, err
		}
		fw.Rules, fw.RulesRead = make([]collItem, 0, len(list)), true
		for _, m := range list {
			fw.Rules = append(fw.Rules, stringValues(m))
		}
	}
	return fw, nil
}

// planGuestFirewall adds a guest's firewall (spec.firewall) to its action:
// a created guest gets its rules and options once it exists; an owned
// guest whose rules or options differ from the declared ones gets them
// back: the rules first (by position, ruleList), then the options, with
// the digest of the read the plan compared (set_options refuses a file
// changed since), so a DROP policy never comes before the rules that let
// traffic in.
func planGuestFirewall(pc *planContext, a *Action, want *GuestFirewallSpec) *Action {
	if want == nil || a.Status != vocab.StatusSynced && a.Status != vocab.StatusOutOfSync {
		return a
	}
	if a.Action == vocab.ActionCreate {
		typ := map[string]string{KindContainer: "lxc"}[a.Kind]
		if typ == "" {
			typ = "qemu"
		}
		base := guestFWPath(typ, a.Node, a.VMID)
		_, changes := guestFirewallSteps(base, want, &GuestFirewall{RulesRead: true})
		if len(changes) == 0 {
			return a
		}
		a.Changes = append(a.Changes, changes...)
		a.DependsOn = append(a.DependsOn, want.Needs...)
		a.Reason += unfilteredNote(want)
		// A clone has its template's firewall (clone_vmfw_conf): the new
		// guest's is read once it exists and brought to the manifest.
		chainStep(a, func(ctx context.Context, x *execCtx) error {
			have, err := readFirewallAt(ctx, x.e.client, base, want.RulesSet)
			if err != nil {
				return fmt.Errorf("reading the new guest's firewall: %w", err)
			}
			steps, _ := guestFirewallSteps(base, want, have)
			return steps(ctx, x)
		})
		return a
	}
	g := pc.snap.Guests[a.VMID]
	if g == nil || g.Firewall == nil || !a.Owned && !a.Adopt || a.Refused() {
		return a
	}
	steps, changes := guestFirewallSteps(guestFWPath(g.Type, g.Node, g.VMID), want, g.Firewall)
	if len(changes) == 0 {
		return a
	}
	a.Changes = append(a.Changes, changes...)
	a.DependsOn = append(a.DependsOn, want.Needs...)
	why := "firewall differs from the manifest" + unfilteredNote(want)
	a.guestChange(why, g.Node)
	chainStep(a, steps)
	return a
}

// guestFirewallSteps compares the wanted firewall with the one read (have)
// and returns the changes and the step that makes them (rules, then
// options), on the guest's firewall API path base.
func guestFirewallSteps(base string, want *GuestFirewallSpec, have *GuestFirewall) (stepFunc, []vocab.Change) {
	var changes []vocab.Change
	var rules *rulePlan
	if want.RulesSet && have.RulesRead {
		changes, rules = ruleList{path: base + "/rules", field: "spec.firewall.rules"}.diffRules(have.Rules, want.Rules)
	}
	params := pve.NewParams()
	set := false
	for _, o := range want.Options {
		if was := have.Options[o.Key]; was != o.Value {
			changes = append(changes, vocab.Change{Field: "firewall." + o.Key, Path: o.Path, From: was, To: o.Value})
			params.Set(o.Key, o.Value)
			set = true
		}
	}
	if set && have.Digest != "" {
		params.Set("digest", have.Digest)
	}
	return func(ctx context.Context, x *execCtx) error {
		if rules != nil {
			if err := rules.apply(ctx, x.e.client); err != nil {
				return err
			}
		}
		if !set {
			return nil
		}
		return x.e.client.Put(ctx, base+"/options", params, nil)
	}, changes
}

// unfilteredNote warns of a firewall enabled on a guest none of whose
// declared network devices Proxmox filters (it filters only a device
// with firewall=1).
func unfilteredNote(want *GuestFirewallSpec) string {
	if !want.NoFilteredNIC {
		return ""
	}
	for _, o := range want.Options {
		if o.Key == "enable" && o.Value == "1" {
			return " (note: no network device has firewall: true, so Proxmox filters none of the guest's traffic)"
		}
	}
	return ""
}

// guestFirewallNeeds: set_options and the rule calls take
// VM.Config.Network on the guest (VM.pm, Rules.pm GuestRules).
func guestFirewallNeeds(a *Action) []privNeed {
	for _, c := range a.Changes {
		if strings.HasPrefix(c.Path, "spec.firewall.") {
			return []privNeed{needAll("set the guest's firewall", vmPath(a.VMID), "VM.Config.Network")}
		}
	}
	return nil
}
