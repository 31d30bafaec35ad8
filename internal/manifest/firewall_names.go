package manifest

import (
	"strings"

	"github.com/proxmops/proxmops/internal/pvefirewall"
)

// The names pve-firewall checks rules against (src/PVE/Firewall.pm), from
// the one copy of them in internal/pvefirewall: services, protocols, ICMP
// type names, and the macros with the proto, dport and sport of their
// template rules.
var (
	fwServiceNames  = pvefirewall.ServiceNames
	fwProtocolNames = pvefirewall.Protocols
	fwICMPTypes     = pvefirewall.ICMPTypes
	fwICMPv6Types   = pvefirewall.ICMPv6Types
	// fwMacros and fwMacrosV6 are the macros by name ($pve_fw_macros,
	// $pve_ipv6fw_macros): each template rule's "key=value" fields, the
	// rules separated by ";".
	fwMacros   = macroRules(pvefirewall.Macros)
	fwMacrosV6 = macroRules(pvefirewall.MacrosV6)
)

func macroRules(list []pvefirewall.Macro) map[string]string {
	out := make(map[string]string, len(list))
	for _, m := range list {
		out[m.Name] = m.Rules
	}
	return out
}

func wordSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, f := range strings.Fields(s) {
		out[f] = true
	}
	return out
}
