package config

// Privilege is one Proxmox VE privilege proxmops uses, with the reason.
type Privilege struct {
	Name string
	Why  string
}

// RequiredPrivileges are the privileges the API token needs on "/" (with
// propagation) for proxmops to manage everything its manifests can
// declare. The names exist on Proxmox VE 8.4 and 9.x alike. The settings
// "test connection" check uses this list when the repository cannot be
// read (otherwise it checks what the manifests need, as plan does:
// engine.PrivilegeNeeds); docs/configuration.md shows the pveum commands
// that grant them.
var RequiredPrivileges = []Privilege{
	{"VM.Allocate", "create and delete guests (VMs, templates, containers)"},
	{"VM.Clone", "clone VMs from templates"},
	{"VM.Audit", "read guest configuration and status"},
	{"VM.PowerMgmt", "start, stop, shut down and reboot guests"},
	{"VM.Config.CPU", "set cores, sockets and CPU type"},
	{"VM.Config.Memory", "set memory and balloon"},
	{"VM.Config.Disk", "add and resize disks and mount points"},
	{"VM.Config.Network", "set NICs (VMs) and network interfaces (containers)"},
	{"VM.Config.HWType", "set machine, BIOS, SCSI controller and other hardware types"},
	{"VM.Config.Options", "set name, tags, description, onboot, startup order and other options"},
	{"VM.Config.Cloudinit", "set cloud-init user, keys and IP configuration"},
	{"VM.Config.CDROM", "attach ISOs and the cloud-init CIDATA ISO"},
	{"VM.Snapshot", "take and prune snapshots before a change (spec.snapshots) and roll back (proxmops rollback)"},
	{"VM.Backup", "back up the guests of a pool a backup job selects (kind: BackupJob, selector.pool)"},
	{"Datastore.Audit", "list storages and their content"},
	{"Datastore.AllocateSpace", "allocate disk space for guests"},
	{"Datastore.AllocateTemplate", "download and upload ISOs, cloud images and container templates"},
	{"Datastore.Allocate", "delete ISOs and templates that proxmops downloaded (prune); write backup jobs' backups to a storage (kind: BackupJob); create, change and remove storage definitions (on /storage)"},
	{"Sys.Audit", "read nodes, tasks, cluster and HA status"},
	{"Sys.Modify", "node network interfaces (on /nodes/NODE), privileged containers, VM startup order and backup jobs (on /)"},
	{"Sys.AccessNetwork", "let Proxmox VE download from a URL (download-url, on /nodes/NODE)"},
	{"Sys.Console", "remove an HA-managed guest from HA before deleting it (on /)"},
	{"SDN.Audit", "read SDN zones and VNets"},
	{"SDN.Allocate", "create and change SDN zones, VNets and subnets"},
	{"SDN.Use", "attach guest NICs to bridges and VNets"},
	{"Pool.Audit", "list resource pools (Proxmox lists only the pools the token may audit)"},
	{"Pool.Allocate", "create, change and delete pools (kind: Pool) and put guests into them (spec.pool); the throwaway pool of `proxmops check --exercise`"},
}

// OptionalPrivileges improve what proxmops shows but are not needed to
// reconcile. Their names depend on the Proxmox VE version.
var OptionalPrivileges = []Privilege{
	{"VM.GuestAgent.Audit", "read guest IP addresses from the QEMU guest agent, and its agent health checks (Proxmox VE 9; on 8.4 the privilege is VM.Monitor)"},
	{"VM.GuestAgent.Unrestricted", "an alternative to VM.GuestAgent.Audit for agent health checks (Proxmox VE 9)"},
	{"VM.Migrate", "migrate the throwaway VM of `proxmops check --exercise` where a second node and shared storage exist"},
}

// LegacyPrivileges are Proxmox VE 8.4 names the privilege checks accept as
// an alternative to their 9.x successors. They are never suggested for a
// role: Proxmox VE 9 refuses a role that names one.
var LegacyPrivileges = []Privilege{
	{"VM.Monitor", "Proxmox VE 8.4's guest agent privilege (VM.GuestAgent.Audit on 9)"},
}

// RequiredPrivilegeNames returns the names of RequiredPrivileges.
func RequiredPrivilegeNames() []string {
	names := make([]string, len(RequiredPrivileges))
	for i, p := range RequiredPrivileges {
		names[i] = p.Name
	}
	return names
}

// MissingPrivileges returns the required privileges absent from granted
// (as returned by GET /access/permissions for "/": privilege name to 1).
func MissingPrivileges(granted map[string]bool) []Privilege {
	var missing []Privilege
	for _, p := range RequiredPrivileges {
		if !granted[p.Name] {
			missing = append(missing, p)
		}
	}
	return missing
}
