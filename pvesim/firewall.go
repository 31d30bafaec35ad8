package pvesim

import (
	"slices"

	"github.com/proxmops/proxmops/pvesim/route"
)

// A guest's firewall options (GET and PUT .../{qemu,lxc}/{vmid}/firewall/
// options), as pve-firewall's API2/Firewall/VM.pm get_options and
// set_options do. The options live in /etc/pve/firewall/VMID.fw, a file of
// its own: neither call checks that the guest exists (load_vmfw_conf reads
// a missing file as empty), qemu-server's and pve-container's clone copy it
// (clone_vmfw_conf) and their destroy removes it (remove_vmfw_conf).

// fwBoolOptions are the boolean options of Firewall.pm
// $vm_option_properties; parse_vmfw_option reads them back as integers.
var fwBoolOptions = []string{"enable", "macfilter", "dhcp", "ndp", "radv", "ipfilter"}

func init() {
	registerRoutes(func(s *Server) {
		for _, typ := range []string{"qemu", "lxc"} {
			base := "/nodes/{node}/" + typ + "/{vmid}/firewall"
			nv := func(extra ...*route.Param) *route.Params {
				return route.NewParams(append([]*route.Param{pNode(), pVMID()}, extra...)...)
			}
			s.Handle(&route.Route{Method: "GET", Path: base, Perm: route.PermUser(), Params: nv(),
				Handler: func(*route.Request) (any, error) {
					out := []map[string]any{}
					for _, n := range []string{"rules", "aliases", "ipset", "refs", "options"} {
						out = append(out, map[string]any{"name": n})
					}
					return out, nil
				}})
			s.Handle(&route.Route{Method: "GET", Path: base + "/options", Perm: route.PermCheck("/vms/{vmid}", "VM.Audit"), ProxyTo: "node",
				Params: nv(), Handler: s.firewallOptions})
			levels := []string{"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug", "nolog"}
			params := []*route.Param{
				route.Str("delete").Opt().Fmt("pve-configid-list"), route.Str("digest").Opt().MaxLen(64),
				route.Str("policy_in").Opt().Enum("ACCEPT", "REJECT", "DROP"), route.Str("policy_out").Opt().Enum("ACCEPT", "REJECT", "DROP"),
				route.Str("log_level_in").Opt().Enum(levels...), route.Str("log_level_out").Opt().Enum(levels...),
			}
			for _, b := range fwBoolOptions {
				params = append(params, route.Bool(b).Opt())
			}
			s.Handle(&route.Route{Method: "PUT", Path: base + "/options", Perm: route.PermCheck("/vms/{vmid}", "VM.Config.Network"), ProxyTo: "node",
				Params: nv(params...), Handler: s.setFirewallOptions})
		}
	})
}

// fwOptionNames are all of $vm_option_properties' keys.
func fwOptionNames() map[string]bool {
	out := map[string]bool{"policy_in": true, "policy_out": true, "log_level_in": true, "log_level_out": true}
	for _, b := range fwBoolOptions {
		out[b] = true
	}
	return out
}

// firewallOptions is copy_opject_with_digest of the file's options.
func (s *Server) firewallOptions(r *route.Request) (any, error) {
	vmid, _ := r.Int("vmid")
	opts := s.state.Firewall[vmid]
	out := map[string]any{}
	for k, v := range opts {
		if slices.Contains(fwBoolOptions, k) {
			out[k] = map[string]int{"0": 0, "1": 1}[v]
		} else {
			out[k] = v
		}
	}
	out["digest"] = fwObjectDigest(opts)
	return out, nil
}

// setFirewallOptions is set_options: the digest, then the deletions (an
// unknown one is a parameter error), then the values given.
func (s *Server) setFirewallOptions(r *route.Request) (any, error) {
	vmid, _ := r.Int("vmid")
	cur, err := s.firewallOptions(r)
	if err != nil {
		return nil, err
	}
	if d := r.Str("digest"); d != "" && d != cur.(map[string]any)["digest"] {
		return nil, route.Fail("detected modified configuration - file changed by other user? Try again.")
	}
	opts := map[string]string{}
	for k, v := range s.state.Firewall[vmid] {
		opts[k] = v
	}
	known := fwOptionNames()
	for _, k := range splitList(r.Str("delete")) {
		if !known[k] {
			return nil, route.ParamErr("delete", "no such option '"+k+"'")
		}
		delete(opts, k)
	}
	for k := range known {
		if r.Has(k) {
			opts[k] = r.Str(k)
		}
	}
	if s.state.Firewall == nil {
		s.state.Firewall = map[int]map[string]string{}
	}
	// save_vmfw_conf removes a file left without content.
	if len(opts) == 0 {
		delete(s.state.Firewall, vmid)
	} else {
		s.state.Firewall[vmid] = opts
	}
	return nil, nil
}
