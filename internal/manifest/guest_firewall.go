package manifest

// A guest's own firewall (spec.firewall of VirtualMachine and Container):
// the options of /nodes/{node}/{qemu,lxc}/{vmid}/firewall/options, named
// after pve-firewall's $vm_option_properties (Firewall.pm). The guest
// firewall belongs to the guest: an owned guest's is proxmops'. An unset
// spec.firewall leaves the guest's firewall alone, an unset option leaves
// that option alone.

// GuestFirewall is a guest's firewall options.
type GuestFirewall struct {
	Enabled     *bool  `json:"enabled,omitempty" doc:"Filter the guest's traffic (Proxmox option enable; Proxmox's default is off). Proxmox filters only the network devices with firewall: true, and only when the cluster firewall is enabled too."`
	PolicyIn    string `json:"policyIn,omitempty" pm:"enum=ACCEPT|REJECT|DROP" doc:"What happens to incoming traffic no rule matches (policy_in; Proxmox's default is DROP)."`
	PolicyOut   string `json:"policyOut,omitempty" pm:"enum=ACCEPT|REJECT|DROP" doc:"What happens to outgoing traffic no rule matches (policy_out; Proxmox's default is ACCEPT)."`
	Macfilter   *bool  `json:"macfilter,omitempty" doc:"Drop outgoing packets whose source MAC is not the device's (Proxmox's default is on)."`
	Ipfilter    *bool  `json:"ipfilter,omitempty" doc:"Drop outgoing packets from addresses other than the guest's (its ipfilter-net<N> IP sets, or the link-local and, for containers, configured addresses)."`
	DHCP        *bool  `json:"dhcp,omitempty" doc:"Allow DHCP (Proxmox's default is off)."`
	NDP         *bool  `json:"ndp,omitempty" doc:"Allow IPv6 neighbor discovery (Proxmox's default is on)."`
	RAdv        *bool  `json:"radv,omitempty" doc:"Allow the guest to send IPv6 router advertisements (Proxmox's default is off)."`
	LogLevelIn  string `json:"logLevelIn,omitempty" pm:"enum=emerg|alert|crit|err|warning|notice|info|debug|nolog" doc:"Log level of incoming traffic (log_level_in; Proxmox's default is nolog)."`
	LogLevelOut string `json:"logLevelOut,omitempty" pm:"enum=emerg|alert|crit|err|warning|notice|info|debug|nolog" doc:"Log level of outgoing traffic (log_level_out; Proxmox's default is nolog)."`
	// Rules is nil when the manifest leaves them out, empty for rules: [].
	Rules []FirewallRule `json:"rules,omitempty" doc:"The guest's rules, in order: the whole list, compared by position (a rule someone added is removed, one changed is put back); rules: [] empties it, leaving rules out leaves the list alone. A rule of type group applies the security group named by action."`
}

// checkGuestFirewall checks a guest's firewall rules as pve-firewall
// checks a guest's rule list, and records the security groups, IP sets
// and aliases they name.
func checkGuestFirewall(r Resource, f *GuestFirewall, c *checker) {
	if f != nil {
		checkFirewallRules(r, FirewallRulesGuest, "spec.firewall.rules", f.Rules, c)
	}
}
