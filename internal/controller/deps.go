package controller

import (
	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/manifest"
)

// dependenciesOf lists what a desired resource needs among the declared
// resources: the edges of the UI's dependency graph, from
// manifest.Dependencies (the function the engine's apply order reads too):
// its spec's references and its metadata.dependsOn. A reference to
// something only on the cluster (an existing template, a volume ID, vmbr0)
// gives no edge: the graph shows only declared resources. A resource only
// on the cluster (desired nil) needs nothing. The nodes an HA rule places
// its guests on follow (manifest.NodeEdges), as dependencies of kind
// api.DependencyNode: for the graph only, the apply order never waits
// for a node.
func dependenciesOf(desired manifest.Resource) []api.Dependency {
	var out []api.Dependency
	for _, e := range manifest.Dependencies(desired) {
		out = append(out, api.Dependency{Kind: string(e.Kind), Name: e.Name, Relation: e.Relation})
	}
	for _, n := range manifest.NodeEdges(desired) {
		out = append(out, api.Dependency{Kind: api.DependencyNode, Name: n.Node, Relation: n.Relation, Priority: n.Priority})
	}
	return out
}
