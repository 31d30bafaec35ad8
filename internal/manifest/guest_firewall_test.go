package manifest

import (
	"testing"
)

// A guest's spec.firewall takes $vm_option_properties' values, and its
// rules are checked as pve-firewall checks a guest's rule list: in, out
// and group rules only, an interface netN; a group rule names a
// security group the guest then depends on.
func TestGuestFirewallValidation(t *testing.T) {
	vm := func(fw string) string { return vmHead + "  vmid: 100\n  firewall:\n" + fw }
	ct := func(fw string) string {
		return "apiVersion: proxmops.dev/v1\nkind: Container\nmetadata: {name: c, node: pve1}\nspec:\n  vmid: 200\n  template: local:vztmpl/x.tar.zst\n  rootfs: {storage: local-lvm, size: 2G}\n  firewall:\n" + fw
	}
	tests := []validationCase{
		{"options", vm("    enabled: true\n    policyIn: DROP\n    policyOut: REJECT\n    macfilter: false\n    ipfilter: true\n    dhcp: true\n    ndp: false\n    radv: true\n    logLevelIn: info\n    logLevelOut: nolog\n"), ""},
		{"a container's options", ct("    enabled: true\n    policyIn: ACCEPT\n"), ""},
		{"a policy Proxmox does not know", vm("    policyIn: deny\n"), "policyIn"},
		{"a log level Proxmox does not know", vm("    logLevelOut: verbose\n"), "logLevelOut"},
		{"an option of the cluster firewall", vm("    policyForward: DROP\n"), "policyForward"},
		{"rules", vm("    rules:\n      - { type: in, action: ACCEPT, macro: SSH, iface: net0 }\n      - { type: group, action: webserver }\n"), ""},
		{"no rules", vm("    rules: []\n"), ""},
		{"a forward rule", vm("    rules:\n      - { type: forward, action: ACCEPT }\n"), "forward rules are not allowed in a guest's rules"},
		{"a host interface", vm("    rules:\n      - { type: in, action: ACCEPT, iface: vmbr0 }\n"), "spec.firewall.rules[0].iface"},
		{"a container's bad rule", ct("    rules:\n      - { type: in, action: ALLOW }\n"), "spec.firewall.rules[0].action"},
	}
	checkValidation(t, tests, nil)
	rs, errs := ParseFile("a.yaml", []byte(vm("    rules:\n      - { type: group, action: webserver }\n")))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if deps := Dependencies(rs[0]); len(deps) != 1 || deps[0].Key() != "FirewallGroup/webserver" || deps[0].Path != "spec.firewall.rules[0].action" {
		t.Fatalf("dependencies: %+v", deps)
	}
}
