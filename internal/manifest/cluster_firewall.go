package manifest

import (
	"fmt"
	"strings"
)

// KindClusterFirewall is the cluster firewall: its options
// (/cluster/firewall/options) and proxmops' rules in the cluster's rule
// list (/cluster/firewall/rules).
const KindClusterFirewall Kind = "ClusterFirewall"

// ClusterFirewallName is the singleton's metadata.name.
const ClusterFirewallName = "cluster"

// ClusterFirewall is the cluster firewall singleton.
type ClusterFirewall struct {
	Object
	Spec ClusterFirewallSpec
}

// ClusterFirewallSpec is what proxmops manages of the cluster firewall:
// the options it declares, and its own rules of the cluster's list.
type ClusterFirewallSpec struct {
	Enabled   *bool          `json:"enabled,omitempty" doc:"Turn the cluster firewall on or off (Proxmox's enable); unmanaged when absent."`
	PolicyIn  string         `json:"policyIn,omitempty" pm:"enum=ACCEPT|REJECT|DROP" doc:"Input policy (Proxmox's default DROP); unmanaged when absent."`
	PolicyOut string         `json:"policyOut,omitempty" pm:"enum=ACCEPT|REJECT|DROP" doc:"Output policy (Proxmox's default ACCEPT); unmanaged when absent."`
	Rules     []FirewallRule `json:"rules,omitempty" doc:"proxmops' rules of the cluster's rule list, in order (the fields of a FirewallGroup's spec.rules[]); the list's other rules are never touched."`
}

// Kind returns KindClusterFirewall.
func (*ClusterFirewall) Kind() Kind { return KindClusterFirewall }

// Summary is the card's line: on or off and the policies as declared,
// and how many rules of the cluster's list are proxmops'.
func (f *ClusterFirewall) Summary() string {
	var parts []string
	if f.Spec.Enabled != nil {
		parts = append(parts, map[bool]string{true: "enabled", false: "disabled"}[*f.Spec.Enabled])
	}
	if f.Spec.PolicyIn != "" {
		parts = append(parts, "in "+f.Spec.PolicyIn)
	}
	if f.Spec.PolicyOut != "" {
		parts = append(parts, "out "+f.Spec.PolicyOut)
	}
	return strings.Join(append(parts, countWord(len(f.Spec.Rules), "own rule", "own rules")), " · ")
}

// MarshalJSON gives back the manifest shape.
func (f *ClusterFirewall) MarshalJSON() ([]byte, error) {
	return marshalManifest(f.Kind(), &f.Object, &f.Spec)
}

// clusterFirewallName: the singleton is named "cluster".
var clusterFirewallName = &NameRule{Pattern: "^" + ClusterFirewallName + "$", check: func(n string) error {
	if n != ClusterFirewallName {
		return fmt.Errorf("the cluster firewall is one object named %q, not %q", ClusterFirewallName, n)
	}
	return nil
}}

func (f *ClusterFirewall) check(c *checker) {
	checkFirewallRules(f, FirewallRulesCluster, "spec.rules", f.Spec.Rules, c)
}
