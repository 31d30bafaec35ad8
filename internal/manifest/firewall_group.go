package manifest

// KindFirewallGroup is a cluster security group
// (/cluster/firewall/groups/{group}).
const KindFirewallGroup Kind = "FirewallGroup"

// FirewallGroup is a security group: a named rule list guests (rule type
// group) and the cluster's rules apply.
type FirewallGroup struct {
	Object
	Spec FirewallGroupSpec
}

// FirewallGroupSpec is the group; metadata.name is the group name.
type FirewallGroupSpec struct {
	Comment string         `json:"comment,omitempty" pm:"format=fw-comment" doc:"Comment; proxmops adds its ownership marker."`
	Rules   []FirewallRule `json:"rules,omitempty" doc:"The group's rules, in order: the whole list, compared by position (in, out or forward rules; no interface)."`
}

// Kind returns KindFirewallGroup.
func (*FirewallGroup) Kind() Kind { return KindFirewallGroup }

// Summary is the card's line: how many rules the group holds.
func (g *FirewallGroup) Summary() string { return countWord(len(g.Spec.Rules), "rule", "rules") }

// MarshalJSON gives back the manifest shape.
func (g *FirewallGroup) MarshalJSON() ([]byte, error) {
	return marshalManifest(g.Kind(), &g.Object, &g.Spec)
}

// checkFirewallGroup checks the rules (the name is the kind row's rule).
func (g *FirewallGroup) check(c *checker) {
	checkFirewallRules(g, FirewallRulesGroup, "spec.rules", g.Spec.Rules, c)
}

// ValidFirewallGroupName reports whether name can be a FirewallGroup
// manifest's metadata.name.
func ValidFirewallGroupName(name string) bool {
	return ValidFirewallName(name) && len(name) <= MaxFirewallGroupName
}
