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
// on the cluster (desired nil) needs nothing.
func dependenciesOf(desired manifest.Resource) []api.Dependency {
	var out []api.Dependency
	for _, e := range manifest.Dependencies(desired) {
		out = append(out, api.Dependency{Kind: string(e.Kind), Name: e.Name, Relation: e.Relation})
	}
	return out
}
