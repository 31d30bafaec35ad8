package engine_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// allPrivilegesBut is every Proxmox VE privilege except the named ones.
func allPrivilegesBut(except ...string) []string {
	all := []string{"Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.AllocateTemplate", "Datastore.Audit",
		"Group.Allocate", "Mapping.Audit", "Mapping.Modify", "Mapping.Use", "Permissions.Modify", "Pool.Allocate", "Pool.Audit",
		"Realm.Allocate", "Realm.AllocateUser", "SDN.Allocate", "SDN.Audit", "SDN.Use",
		"Sys.AccessNetwork", "Sys.Audit", "Sys.Console", "Sys.Incoming", "Sys.Modify", "Sys.PowerMgmt", "Sys.Syslog",
		"User.Modify", "VM.Allocate", "VM.Audit", "VM.Backup", "VM.Clone", "VM.Config.CDROM", "VM.Config.CPU",
		"VM.Config.Cloudinit", "VM.Config.Disk", "VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network",
		"VM.Config.Options", "VM.Console", "VM.GuestAgent.Audit", "VM.GuestAgent.FileRead", "VM.GuestAgent.FileSystemMgmt",
		"VM.GuestAgent.FileWrite", "VM.GuestAgent.Unrestricted", "VM.Migrate", "VM.PowerMgmt", "VM.Replicate",
		"VM.Snapshot", "VM.Snapshot.Rollback"}
	var out []string
	for _, p := range all {
		skip := false
		for _, x := range except {
			skip = skip || x == p
		}
		if !skip {
			out = append(out, p)
		}
	}
	return out
}

var privilegedCT = testvm.CT{Name: "legacy", Node: "pve1", VMID: 410, Privileged: true}.YAML()

const isoManifest = `apiVersion: proxmops.dev/v1
kind: Iso
metadata:
  name: x
spec:
  source: FILES/isos/x.iso
  node: pve1
  storage: local
`

const hostBridge = `apiVersion: proxmops.dev/v1
kind: Network
metadata:
  name: vmbr7
  node: pve1
spec:
  type: bridge
`

// A token without a privilege a resource needs: plan names the privilege
// and the path on exactly the resources that need it, apply does not start
// them (no call that Proxmox would refuse), and the others converge.
func TestPlanNamesMissingPrivilegesAndApplyDoesNotStart(t *testing.T) {
	tests := []struct {
		name     string
		missing  []string
		file     string
		yaml     string
		kind     string
		resource string
		want     string
		call     string // the refused method, never called
	}{
		{"privileged container without Sys.Modify", []string{"Sys.Modify"}, "cts/legacy.yaml", privilegedCT,
			engine.KindContainer, "legacy", "the API token lacks Sys.Modify on /, needed to create the container (privileged)", "POST /nodes/{node}/lxc"},
		{"VM without VM.Allocate", []string{"VM.Allocate"}, "vms/app.yaml", vmManifest("app", "pve1", "401", "  disks:\n    - storage: local-lvm\n      size: 4G\n"),
			engine.KindVirtualMachine, "app", "the API token lacks VM.Allocate on /vms/401, needed to create the VM", "POST /nodes/{node}/qemu"},
		{"VM disk without space on its storage", []string{"Datastore.AllocateSpace"}, "vms/app.yaml", vmManifest("app", "pve1", "402", "  disks:\n    - storage: local-lvm\n      size: 4G\n"),
			engine.KindVirtualMachine, "app", "the API token lacks Datastore.AllocateSpace on /storage/local-lvm, needed to create the VM (disk on local-lvm)", "POST /nodes/{node}/qemu"},
		{"VM without VM.Config.HWType (scsihw is always set)", []string{"VM.Config.HWType"}, "vms/app.yaml", vmManifest("app", "pve1", "404", "  disks:\n    - storage: local-lvm\n      size: 4G\n"),
			engine.KindVirtualMachine, "app", "the API token lacks VM.Config.HWType on /vms/404, needed to create the VM (machine, BIOS type, SCSI controller, serial console)", "POST /nodes/{node}/qemu"},
		{"NIC without SDN.Use", []string{"SDN.Use"}, "vms/app.yaml", vmManifest("app", "pve1", "403", "  disks:\n    - storage: local-lvm\n      size: 4G\n  net:\n    - bridge: vmbr0\n"),
			engine.KindVirtualMachine, "app", "the API token lacks SDN.Use on /sdn/zones/localnetwork/vmbr0, needed to create the VM (net0 on vmbr0)", "POST /nodes/{node}/qemu"},
		{"VM with an agent health check without the guest agent privilege", []string{"VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted"}, "vms/app.yaml",
			vmManifest("app", "pve1", "405", "  agent: true\n  healthCheck:\n    agent: true\n  disks:\n    - storage: local-lvm\n      size: 4G\n"),
			engine.KindVirtualMachine, "app", "the API token lacks VM.GuestAgent.Audit or VM.GuestAgent.Unrestricted or VM.Monitor on /vms/405, needed to ask the guest agent for the health check (spec.healthCheck.agent)", "POST /nodes/{node}/qemu"},
		{"ISO download without Datastore.AllocateTemplate", []string{"Datastore.AllocateTemplate"}, "isos/x.yaml", isoManifest,
			engine.KindIso, "x", "the API token lacks Datastore.AllocateTemplate on /storage/local, needed to download the ISO", "POST /nodes/{node}/storage/{storage}/download-url"},
		{"ISO download without network access", []string{"Sys.AccessNetwork", "Sys.Modify"}, "isos/x.yaml", isoManifest,
			engine.KindIso, "x", "the API token lacks the privileges to download the ISO: it needs Sys.Audit+Sys.Modify on /, or Sys.AccessNetwork on /nodes/pve1", "POST /nodes/{node}/storage/{storage}/download-url"},
		{"host network without Sys.Modify", []string{"Sys.Modify"}, "net/vmbr7.yaml", hostBridge,
			engine.KindNetwork, "vmbr7", "the API token lacks Sys.Modify on /nodes/pve1, needed to change the node's network", "POST /nodes/{node}/network"},
		{"security group without Sys.Modify", []string{"Sys.Modify"}, "fw/web.yaml", "apiVersion: proxmops.dev/v1\nkind: FirewallGroup\nmetadata:\n  name: web\nspec:\n  rules:\n    - { type: in, action: ACCEPT, macro: HTTP }\n",
			engine.KindFirewallGroup, "web", "the API token lacks Sys.Modify on /, needed to change the cluster's firewall security groups", "POST /cluster/firewall/groups"},
		{"cluster firewall without Sys.Modify", []string{"Sys.Modify"}, "fw/cluster.yaml", "apiVersion: proxmops.dev/v1\nkind: ClusterFirewall\nmetadata:\n  name: cluster\nspec:\n  policyOut: REJECT\n",
			engine.KindClusterFirewall, "cluster", "the API token lacks Sys.Modify on /, needed to change the cluster firewall", "PUT /cluster/firewall/options"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnvWith(t, func(o *pvesim.Options) { o.TokenPrivileges = allPrivilegesBut(tt.missing...) })
			e.addCTTemplate()
			e.write(tt.file, tt.yaml)
			eng := e.engine(engine.Options{Concurrency: 2})
			p := e.plan(eng)
			a := p.Find(tt.kind, tt.resource)
			if a == nil || a.Status != vocab.StatusFailed || a.Runnable() || !strings.Contains(a.Reason, tt.want) {
				t.Fatalf("planned %+v, want a failed action: %q", a, tt.want)
			}
			e.sim.ResetRequests()
			rep, err := eng.Apply(t.Context(), p, nil)
			if err != nil {
				t.Fatal(err)
			}
			method, path, _ := strings.Cut(tt.call, " ")
			if n := e.sim.RequestCountFor(method, path); n != 0 {
				t.Errorf("%s called %d times", tt.call, n)
			}
			if rep.Failed != 1 || rep.Applied != 0 {
				t.Errorf("apply: %d applied, %d failed; want %s failed", rep.Applied, rep.Failed, tt.resource)
			}
		})
	}
}

// The same manifests converge once the token has everything.
func TestPrivilegeChecksPassWithAllPrivileges(t *testing.T) {
	e := newEnvWith(t, func(o *pvesim.Options) { o.TokenPrivileges = allPrivilegesBut() })
	e.write("vms/app.yaml", vmManifest("app", "pve1", "401", "  disks:\n    - storage: local-lvm\n      size: 4G\n  net:\n    - bridge: vmbr0\n"))
	e.addCTTemplate()
	e.write("cts/legacy.yaml", privilegedCT)
	e.write("net/vmbr7.yaml", hostBridge)
	eng := e.engine(engine.Options{Concurrency: 2})
	e.converge(eng)
	e.assertInSync(eng)
}

func (e *env) addCTTemplate() {
	e.t.Helper()
	if err := e.sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", Size: 120 << 20}); err != nil {
		e.t.Fatal(err)
	}
}

// Growing a disk needs space on its storage; the other changes of the same
// update are held back with it (one action).
func TestGrowingADiskNeedsSpaceOnItsStorage(t *testing.T) {
	e := newEnvWith(t, func(o *pvesim.Options) { o.TokenPrivileges = allPrivilegesBut() })
	e.write("vms/app.yaml", vmManifest("app", "pve1", "401", "  disks:\n    - storage: local-lvm\n      size: 4G\n"))
	eng := e.engine(engine.Options{Concurrency: 2})
	e.converge(eng)

	e.sim.SetTokenPrivileges(allPrivilegesBut("Datastore.AllocateSpace"))
	e.write("vms/app.yaml", vmManifest("app", "pve1", "401", "  disks:\n    - storage: local-lvm\n      size: 8G\n"))
	p := e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "app")
	want := "the API token lacks Datastore.AllocateSpace on /storage/local-lvm, needed to change scsi0.size (disk on local-lvm)"
	if a == nil || a.Status != vocab.StatusFailed || a.Runnable() || !strings.Contains(a.Reason, want) {
		t.Fatalf("planned %+v, want %q", a, want)
	}
}

// The token's privileges are read once for the whole plan, whatever the
// number of new guests, and a path with its own ACL is still answered
// by what that ACL grants: here VM 602's path holds only an auditor's role
// (no propagation) and VM 600's NoAccess, so their creates are refused
// while their siblings' pass.
func TestPrivilegeChecksReadThePermissionTreeOncePerPlan(t *testing.T) {
	e := newEnvWith(t, func(o *pvesim.Options) { o.TokenPrivileges = allPrivilegesBut() })
	for i := range 20 {
		id := strconv.Itoa(600 + i)
		e.write("vms/app"+id+".yaml", vmManifest("app"+id, "pve1", id, ""))
	}
	for path, role := range map[string]string{"/vms/602": "PVEAuditor", "/vms/600": "NoAccess"} {
		acl := pve.NewParams().Set("path", path).Set("roles", role).Set("tokens", tokenID).Set("propagate", "0")
		if err := e.client.Put(context.Background(), "access/acl", acl, nil); err != nil {
			t.Fatal(err)
		}
	}
	e.sim.ResetRequests()
	p := e.plan(e.engine(engine.Options{}))
	if n := e.sim.RequestCountFor("GET", "/access/permissions"); n > 3 {
		t.Errorf("%d reads of /access/permissions for one plan, want at most 3", n)
	}
	for _, a := range p.Actions {
		refused := a.Status == vocab.StatusFailed && strings.Contains(a.Reason, "lacks VM.Allocate on /vms/"+strings.TrimPrefix(a.Name, "app"))
		if (a.Name == "app602" || a.Name == "app600") != refused {
			t.Errorf("%s: %s %q", a.Name, a.Status, a.Reason)
		}
	}
}
