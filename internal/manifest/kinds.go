package manifest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// KindInfo is what proxmops knows of a kind besides its spec: one row of
// kindTable. The manifest checks and schema, the engine, the controller, the
// server, export and the UI (web/src/api/generated.ts, KIND_INFO) read it;
// none keeps its own list of guest kinds, aliases or relations.
type KindInfo struct {
	Kind Kind `json:"kind"`
	// Guest is a Proxmox guest with a VMID: adoptable, exported by default.
	Guest bool `json:"guest"`
	// PVEType is the guest's Proxmox type (qemu, lxc); "" for other kinds.
	PVEType string `json:"pveType,omitempty"`
	// Snapshots is true when the kind takes guest snapshots (spec.snapshots).
	Snapshots bool `json:"snapshots"`
	// Reaches is true when proxmops reaches inside it (spec.provision over
	// SSH with a pinned host key, spec.healthCheck).
	Reaches bool `json:"reaches"`
	// Node says where metadata.node comes from.
	Node NodeRule `json:"node"`
	// Relation is how a resource that refers to this kind in its spec needs
	// it; "" when no spec refers to the kind.
	Relation Relation `json:"relation,omitempty"`
	// Folder is the export folder; "" when export does not write the kind.
	Folder string `json:"folder,omitempty"`
	// Aliases are the other (lower-case) names export's --kind accepts; an
	// alias several kinds share selects them all.
	Aliases []string `json:"aliases,omitempty"`
	// Noun is what a sentence calls a resource of the kind, lower case
	// unless an abbreviation: "uses vnet prod", "mounts iso debian-12".
	Noun string `json:"noun"`
	// Doc is the kind's one-line description (JSON Schema).
	Doc string `json:"doc"`
	// Tagless kinds have no Proxmox tags: metadata.tags is refused.
	// CommentMark says proxmops proves ownership by marking the object's
	// comment instead (the refusal says so).
	Tagless     bool `json:"tagless,omitempty"`
	CommentMark bool `json:"commentMark,omitempty"`
	// Adoptable kinds take the proxmops.dev/adopt annotation.
	Adoptable bool `json:"adoptable,omitempty"`
	// Replaceable kinds take the proxmops.dev/replace annotation: a change
	// of a field fixed at creation deletes and recreates the object.
	Replaceable bool `json:"replaceable,omitempty"`
	// Name is the kind's rule for metadata.name beyond the common one.
	Name *NameRule `json:"name,omitempty"`

	// resource is the kind's struct (Object and Spec): the loader builds
	// it, the schema describes its Spec.
	resource reflect.Type
}

// specType is the type of the kind's spec.
func (i KindInfo) specType() reflect.Type {
	f, _ := i.resource.FieldByName("Spec")
	return f.Type
}

// NameRule is a kind's own rule for metadata.name: Proxmox's pattern for
// the object's ID, with the length it allows, for JSON Schema and the
// check, and the check itself where its error says more than the pattern.
type NameRule struct {
	Pattern   string `json:"pattern"`
	MaxLength int    `json:"maxLength,omitempty"`
	check     func(name string) error
}

// Check reports whether name follows the rule.
func (r *NameRule) Check(name string) error { return r.check(name) }

var (
	// pve-network's sdn-id format (PVE/Network/SDN/Zones/Plugin.pm,
	// VnetPlugin.pm).
	sdnIDName = &NameRule{Pattern: sdnIDPattern, MaxLength: 8, check: func(n string) error {
		if err := checkFormat("sdn-id", n); err != nil {
			return fmt.Errorf("%v (an SDN ID)", err)
		}
		return nil
	}}
	// pve-firewall's $ipset_name_pattern and alias names.
	firewallName = &NameRule{Pattern: fwNamePattern, MaxLength: 64, check: func(n string) error {
		if !reFWName.MatchString(n) || len(n) > 64 {
			return fmt.Errorf("%q is not a firewall name (a letter, then letters, digits, '-' or '_'; at least 2 and at most 64 characters)", n)
		}
		return nil
	}}
	// create_security_group's pve-security-group-name: the firewall name
	// pattern, 2 to 18 characters (Proxmox keeps it in lower case, as the
	// common manifest name is).
	firewallGroupName = &NameRule{Pattern: fwNamePattern, MaxLength: MaxFirewallGroupName, check: func(n string) error {
		if !reFWName.MatchString(n) || len(n) > MaxFirewallGroupName {
			return fmt.Errorf("%q is not a security group name (a letter, then letters, digits or '-'; 2 to %d characters)", n, MaxFirewallGroupName)
		}
		return nil
	}}
	// pve-manager API2/Pool.pm create_pool: a pool name starts with a letter.
	poolName = &NameRule{Pattern: "^[a-z]", check: func(n string) error {
		if !(n[0] >= 'a' && n[0] <= 'z') {
			return errors.New("pool name must start with a letter")
		}
		return nil
	}}
	// pve-common's pve-configid (JSONSchema.pm), the format of an HA rule ID.
	haRuleName = &NameRule{Pattern: configIDPattern, check: func(n string) error {
		if !reConfigID.MatchString(n) {
			return fmt.Errorf("%q is not an HA rule ID (a letter, then letters, digits, '-' or '_'; at least 2 characters)", n)
		}
		return nil
	}}
)

// NodeRule says where a kind's target node comes from.
type NodeRule string

// The node rules.
const (
	NodeRequired NodeRule = "required" // metadata.node
	NodeOrSpec   NodeRule = "spec"     // metadata.node or spec.node
	NodeNone     NodeRule = "none"     // cluster-wide: no node
)

// Relation says how a resource needs another.
type Relation string

// The relations of a dependency.
const (
	RelationClones Relation = "clones"    // VirtualMachine -> Template (spec.fromTemplate)
	RelationMounts Relation = "mounts"    // VirtualMachine -> Iso (spec.iso)
	RelationBuilt  Relation = "builtFrom" // Container -> ContainerTemplate (spec.template)
	RelationUses   Relation = "uses"      // guest -> SdnVnet or Network (a NIC's bridge), Pool (spec.pool); Network -> Network (ports, VLAN parent)
	RelationZone   Relation = "inZone"    // SdnVnet -> SdnZone (spec.zone)
	// RelationProtectedBy: a guest or the cluster firewall -> FirewallGroup
	// (a rule of type group).
	RelationProtectedBy Relation = "protectedBy"
	RelationStoredOn    Relation = "storedOn" // anything -> Storage
	RelationBacksUp     Relation = "backsUp"  // BackupJob -> guest (spec.guests, a tag selector)
	// RelationExcludes: BackupJob -> guest in spec.exclude, left out of
	// the backup (made first only so that its VMID is known).
	RelationExcludes Relation = "excludes"
	RelationPlaces   Relation = "places" // HARule -> guest (spec.guests)
	// RelationPrefers and RelationOnlyOn: a node-affinity HARule -> a node
	// of spec.nodes (RelationOnlyOn when strict). Nodes are no declared
	// resources: these are edges of the UI's graph only (NodeEdges), never
	// of Dependencies and so never of the apply order.
	RelationPrefers Relation = "prefers"
	RelationOnlyOn  Relation = "onlyOn"
	// RelationDependsOn is an edge the manifest asks for
	// (metadata.dependsOn): created and started after it is healthy.
	RelationDependsOn Relation = "dependsOn"
)

// Relations lists the relations in the order a resource's dependencies
// are listed.
var Relations = []Relation{RelationClones, RelationBuilt, RelationMounts, RelationStoredOn, RelationUses, RelationProtectedBy, RelationZone,
	RelationBacksUp, RelationPlaces, RelationPrefers, RelationOnlyOn, RelationExcludes, RelationDependsOn}

// kindTable has one row per kind, in the order dependencies usually flow:
// what others refer to comes first. The engine plans kinds in this order.
var kindTable = []KindInfo{
	{Kind: KindFirewallAlias, Node: NodeNone, Tagless: true, CommentMark: true, Adoptable: true, Name: firewallName, Relation: RelationUses, Folder: "firewall", Aliases: []string{"alias", "aliases", "firewallaliases", "firewall"},
		Noun: "alias", Doc: "A cluster firewall alias (/cluster/firewall/aliases).", resource: reflect.TypeFor[FirewallAlias]()},
	{Kind: KindFirewallIPSet, Node: NodeNone, Tagless: true, CommentMark: true, Adoptable: true, Name: firewallName, Relation: RelationUses, Folder: "firewall", Aliases: []string{"ipset", "ipsets", "firewallipsets", "firewall"},
		Noun: "IP set", Doc: "A cluster firewall IP set with its entries (/cluster/firewall/ipset).", resource: reflect.TypeFor[FirewallIPSet]()},
	{Kind: KindFirewallGroup, Node: NodeNone, Tagless: true, CommentMark: true, Adoptable: true, Name: firewallGroupName, Relation: RelationUses, Folder: "firewall", Aliases: []string{"group", "groups", "securitygroup", "firewallgroups", "firewall"},
		Noun: "security group", Doc: "A cluster firewall security group: its ordered rules (/cluster/firewall/groups).", resource: reflect.TypeFor[FirewallGroup]()},
	{Kind: KindClusterFirewall, Node: NodeNone, Tagless: true, Name: clusterFirewallName, Folder: "firewall", Aliases: []string{"clusterfirewall", "firewall"},
		Noun: "cluster firewall", Doc: "The cluster firewall: its options and proxmops' rules of the cluster's rule list (/cluster/firewall).", resource: reflect.TypeFor[ClusterFirewall]()},
	{Kind: KindStorage, Node: NodeNone, Tagless: true, Adoptable: true, Replaceable: true, Name: storageName, Relation: RelationStoredOn, Folder: "storage", Aliases: []string{"storage", "storages"},
		Noun: "storage", Doc: "A cluster storage definition (/storage): dir, nfs, cifs, pbs, lvmthin or zfspool.", resource: reflect.TypeFor[Storage]()},
	{Kind: KindSdnZone, Node: NodeNone, Tagless: true, Name: sdnIDName, Relation: RelationZone, Folder: "sdn", Aliases: []string{"sdn"},
		Noun: "zone", Doc: "A Proxmox SDN zone.", resource: reflect.TypeFor[SdnZone]()},
	{Kind: KindSdnVnet, Node: NodeNone, Tagless: true, Name: sdnIDName, Relation: RelationUses, Folder: "sdn", Aliases: []string{"sdn"},
		Noun: "vnet", Doc: "A Proxmox SDN vnet with its subnets.", resource: reflect.TypeFor[SdnVnet]()},
	{Kind: KindNetwork, Node: NodeRequired, Relation: RelationUses, Folder: "networks", Aliases: []string{"networks"},
		Noun: "bridge", Doc: "A bridge, bond or VLAN interface on a node.", resource: reflect.TypeFor[Network]()},
	{Kind: KindIso, Node: NodeOrSpec, Relation: RelationMounts,
		Noun: "iso", Doc: "An ISO image downloaded onto a storage.", resource: reflect.TypeFor[Iso]()},
	{Kind: KindContainerTemplate, Node: NodeOrSpec, Relation: RelationBuilt,
		Noun: "container template", Doc: "An LXC OS template: a Proxmox appliance or a download.", resource: reflect.TypeFor[ContainerTemplate]()},
	{Kind: KindPool, Node: NodeNone, Tagless: true, Adoptable: true, Name: poolName, Relation: RelationUses, Folder: "pools", Aliases: []string{"pools"},
		Noun: "pool", Doc: "A Proxmox resource pool.", resource: reflect.TypeFor[Pool]()},
	{Kind: KindTemplate, Guest: true, Adoptable: true, PVEType: "qemu", Node: NodeRequired, Relation: RelationClones, Folder: "templates", Aliases: []string{"templates"},
		Noun: "template", Doc: "A QEMU template built from a cloud image.", resource: reflect.TypeFor[Template]()},
	{Kind: KindVirtualMachine, Guest: true, Adoptable: true, PVEType: "qemu", Snapshots: true, Reaches: true, Node: NodeRequired, Folder: "vms", Aliases: []string{"vm", "vms"},
		Noun: "VM", Doc: "A QEMU virtual machine, from a cloud image or cloned from a template.", resource: reflect.TypeFor[VirtualMachine]()},
	{Kind: KindContainer, Guest: true, Adoptable: true, PVEType: "lxc", Snapshots: true, Reaches: true, Node: NodeRequired, Folder: "containers", Aliases: []string{"containers", "ct", "lxc"},
		Noun: "container", Doc: "An LXC container.", resource: reflect.TypeFor[Container]()},
	{Kind: KindBackupJob, Node: NodeNone, Tagless: true, CommentMark: true, Adoptable: true, Name: backupJobName, Folder: "backup", Aliases: []string{"backup", "backups", "backupjobs"},
		Noun: "backup job", Doc: "A scheduled backup job of the cluster (/cluster/backup).", resource: reflect.TypeFor[BackupJob]()},
	{Kind: KindHARule, Node: NodeNone, Tagless: true, CommentMark: true, Adoptable: true, Name: haRuleName, Folder: "ha", Aliases: []string{"ha", "harules", "rules"},
		Noun: "HA rule", Doc: "A PVE 9 HA rule placing guests: node affinity or resource affinity (/cluster/ha/rules).", resource: reflect.TypeFor[HARule]()},
}

// KindTable returns every kind's row, in kind order.
func KindTable() []KindInfo { return slices.Clone(kindTable) }

// Info returns the row of kind k; ok is false for a word that is not a kind.
func Info(k Kind) (info KindInfo, ok bool) {
	i := slices.IndexFunc(kindTable, func(r KindInfo) bool { return r.Kind == k })
	if i < 0 {
		return KindInfo{}, false
	}
	return kindTable[i], true
}

// Info returns the kind's row (the zero row for a word that is not a kind).
func (k Kind) Info() KindInfo {
	info, _ := Info(k)
	return info
}

// IsGuest reports whether kind names a guest kind (VirtualMachine,
// Template, Container); for callers that hold the kind as a string.
func IsGuest(kind string) bool { return Kind(kind).Info().Guest }

// Kinds lists every kind in the order dependencies usually flow: what others
// refer to comes first.
func Kinds() []Kind { return kindsWhere(func(KindInfo) bool { return true }) }

// GuestKinds lists the guest kinds in kind order.
func GuestKinds() []Kind { return kindsWhere(func(i KindInfo) bool { return i.Guest }) }

func kindsWhere(keep func(KindInfo) bool) []Kind {
	var out []Kind
	for _, r := range kindTable {
		if keep(r) {
			out = append(out, r.Kind)
		}
	}
	return out
}

// KindsNamed returns the kinds a name selects: the kind's own name
// (case-folded) or one of its aliases.
func KindsNamed(name string) []Kind {
	name = lower(name)
	return kindsWhere(func(i KindInfo) bool { return lower(string(i.Kind)) == name || slices.Contains(i.Aliases, name) })
}

// KindNames joins the names of the kinds keep selects, in kind order, as
// a list in prose ("A, B and C").
func KindNames(keep func(KindInfo) bool) string {
	var names []string
	for _, k := range kindsWhere(keep) {
		names = append(names, string(k))
	}
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
