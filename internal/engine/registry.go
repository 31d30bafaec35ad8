package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/vocab"
)

// The kinds the engine reconciles, named as the manifests name them.
const (
	KindSdnZone           = string(manifest.KindSdnZone)
	KindSdnVnet           = string(manifest.KindSdnVnet)
	KindNetwork           = string(manifest.KindNetwork)
	KindIso               = string(manifest.KindIso)
	KindContainerTemplate = string(manifest.KindContainerTemplate)
	KindTemplate          = string(manifest.KindTemplate)
	KindVirtualMachine    = string(manifest.KindVirtualMachine)
	KindContainer         = string(manifest.KindContainer)
	KindPool              = string(manifest.KindPool)
)

// kindRow is everything the engine knows of one kind apart from its
// reconciler file. Adding a kind is one row here and one file with its
// spec, its conversion from the manifest and its reconciler (doc.go has
// the recipe).
type kindRow struct {
	kind string
	// desired turns one manifest resource of the kind into its spec (nil
	// for a kind without manifests).
	desired func(r manifest.Resource, secrets SecretReader) Spec
	// reconciler returns the kind's reconciler for one plan: its scope
	// says what to observe, its plan the actions, pruning included. Nil
	// for a kind another row's reconciler plans (SDN vnets, planned with
	// their zones in one sequence).
	reconciler func() reconciler
	// vmid is the VMID a spec claims (nil: the kind claims none): an owned
	// guest at a claimed VMID is never pruned, and two claims of one VMID
	// fail.
	vmid func(Spec) int
	// deletion says how Engine.Delete recognises, in a plan made without
	// the spec, the prune action that removes what it made (nil: by name).
	deletion func(Spec) (deletion, error)
	// needs lists the privileges an action of the kind calls for
	// (privileges.go); nil when it calls nothing the token could lack.
	needs func(pv *privContext, a *Action, s Spec) []privNeed
}

// deletion is how Engine.Delete finds and checks the prune action of one
// resource.
type deletion struct {
	match func(*Action) bool
	// vmid is the guest's VMID, checked for ownership when nothing owned
	// is found.
	vmid int
	// list is a storage (node, storage) to list so that the volume is seen.
	list *[2]string
}

// kinds is the registry, in plan order: a kind's actions come after those
// of the kinds above it (an Iso or a Template before the VMs that use
// them), and its reconciler plans after theirs, so it sees what they
// share in planContext (network keys, the SDN apply, resolved container
// templates). The order is the kind table's (manifest.KindTable), said
// there once: the rows below are put in it.
var kinds = inKindOrder([]kindRow{
	collectionRow(firewallAliases, fromManifest(firewallAliasFromManifest)),
	collectionRow(firewallIPSets, fromManifest(firewallIPSetFromManifest)),
	collectionRow(firewallGroups, fromManifest(firewallGroupFromManifest)),
	clusterFirewallRow(),
	collectionRow(storages, fromManifest(storageFromManifest)),
	{kind: KindSdnZone, desired: fromManifest(zoneFromManifest), reconciler: func() reconciler { return sdnReconciler{} },
		needs: sdnNeeds},
	{kind: KindSdnVnet, desired: fromManifest(vnetFromManifest), needs: sdnNeeds},
	{kind: KindNetwork, desired: fromManifest(networkFromManifest), reconciler: func() reconciler { return networkReconciler{} },
		deletion: networkDeletion, needs: networkNeeds},
	{kind: KindIso, desired: fromManifest(isoFromManifest), reconciler: func() reconciler { return isoReconciler{} },
		deletion: isoDeletion, needs: isoNeeds},
	{kind: KindContainerTemplate, desired: fromManifest(ctemplateFromManifest), reconciler: func() reconciler { return ctemplateReconciler{} },
		deletion: ctemplateDeletion, needs: ctemplateNeeds},
	{kind: KindPool, desired: fromManifest(poolFromManifest), reconciler: func() reconciler { return &resourcePoolReconciler{} },
		needs: poolNeeds},
	{kind: KindTemplate, desired: fromManifest(templateFromManifest), reconciler: func() reconciler { return templateReconciler{} },
		vmid: templateVMID, deletion: guestDeletion(templateVMID), needs: guestNeeds(templateNeeds)},
	{kind: KindVirtualMachine, desired: fromManifest(vmFromManifest), reconciler: func() reconciler { return vmReconciler{} },
		vmid: vmVMID, deletion: guestDeletion(vmVMID), needs: guestNeeds(vmSpecNeeds)},
	{kind: KindContainer, desired: fromManifest(containerFromManifest), reconciler: func() reconciler { return containerReconciler{} },
		vmid: containerVMID, deletion: guestDeletion(containerVMID), needs: guestNeeds(containerSpecNeeds)},
	collectionRow(backupJobs, fromManifest(backupJobFromManifest)),
	collectionRow(haRules, fromManifest(haRuleFromManifest)),
})

// inKindOrder sorts the registry's rows in the kind table's order; a row
// of a kind the table does not have, or a kind with no row, is a
// programming error caught at start.
func inKindOrder(rows []kindRow) []kindRow {
	order := map[string]int{}
	for i, k := range manifest.Kinds() {
		order[string(k)] = i
	}
	if len(rows) != len(order) {
		panic(fmt.Sprintf("engine: %d registry rows for %d kinds", len(rows), len(order)))
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if _, ok := order[r.kind]; !ok || seen[r.kind] {
			panic("engine: a registry row of a kind the kind table lacks, or a second one: " + r.kind)
		}
		seen[r.kind] = true
	}
	slices.SortFunc(rows, func(a, b kindRow) int { return order[a.kind] - order[b.kind] })
	return rows
}

func templateVMID(s Spec) int  { return s.(*TemplateSpec).VMID }
func vmVMID(s Spec) int        { return s.(*VMSpec).VMID }
func containerVMID(s Spec) int { return s.(*ContainerSpec).VMID }

// rowOf returns the registry row of a kind, or nil.
func rowOf(kind string) *kindRow {
	for i := range kinds {
		if kinds[i].kind == kind {
			return &kinds[i]
		}
	}
	return nil
}

// kindOrders maps each kind to its place in the registry.
func kindOrders() map[string]int {
	out := make(map[string]int, len(kinds))
	for i, row := range kinds {
		out[row.kind] = i
	}
	return out
}

// fromManifest adapts a typed conversion to a row's desired.
func fromManifest[R manifest.Resource, S Spec](f func(R, SecretReader) S) func(manifest.Resource, SecretReader) Spec {
	return func(r manifest.Resource, secrets SecretReader) Spec { return f(r.(R), secrets) }
}

// claimVMIDs maps each VMID the desired specs claim to "Kind/name".
func claimVMIDs(d *Desired) map[int]string {
	out := map[int]string{}
	for _, row := range kinds {
		if row.vmid == nil {
			continue
		}
		for _, s := range d.Specs(row.kind) {
			if id := row.vmid(s); id > 0 {
				out[id] = vocab.Key(row.kind, s.meta().Name)
			}
		}
	}
	return out
}

// declaredByName reports whether a resource of kind with this name is
// declared without a VMID (it then owns the guest of that name).
func declaredByName(pc *planContext, kind, name string) bool {
	row := rowOf(kind)
	if row == nil || row.vmid == nil {
		return false
	}
	for _, s := range pc.d.Specs(kind) {
		if row.vmid(s) == 0 && s.meta().Name == name {
			return true
		}
	}
	return false
}

// guestDeletion: a guest is its VMID (by name when declared without one).
func guestDeletion(vmidOf func(Spec) int) func(Spec) (deletion, error) {
	return func(s Spec) (deletion, error) {
		vmid := vmidOf(s)
		if vmid <= 0 {
			return deletion{}, nil
		}
		return deletion{vmid: vmid, match: func(a *Action) bool { return a.VMID == vmid }}, nil
	}
}

// isoDeletion: an Iso is its volume.
func isoDeletion(s Spec) (deletion, error) {
	iso := s.(*IsoSpec)
	vol, err := isoVolume(iso)
	if err != nil {
		return deletion{}, err
	}
	return deletion{list: &[2]string{iso.Node, iso.Storage}, match: func(a *Action) bool { return a.Observed["volid"] == vol }}, nil
}

// ctemplateDeletion: a ContainerTemplate is its volume, any version of a
// catalogue package named without one.
func ctemplateDeletion(sp Spec) (deletion, error) {
	s := sp.(*CTemplateSpec)
	file := s.FileName
	if s.Appliance != "" {
		file = s.Appliance
	}
	prefix := s.Storage + ":vztmpl/" + file
	exact := s.Appliance == "" || vztmplName.MatchString(s.Appliance)
	return deletion{list: &[2]string{s.Node, s.Storage}, match: func(a *Action) bool {
		v, _ := a.Observed["volid"].(string)
		if exact {
			return v == prefix
		}
		return strings.HasPrefix(v, prefix+"_") // a package name: any of its versions
	}}, nil
}

// networkDeletion: a Network is its interface on its node.
func networkDeletion(sp Spec) (deletion, error) {
	node, iface := sp.(*NetworkSpec).Node, sp.(*NetworkSpec).Iface
	return deletion{match: func(a *Action) bool {
		ifc, _ := a.Observed["interface"].(map[string]string)
		return (node == "" || a.Node == node) && ifc["iface"] == iface
	}}, nil
}
