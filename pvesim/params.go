package pvesim

import (
	"maps"
	"slices"

	"github.com/proxmops/proxmops/pvesim/route"
)

// paramsExcept is the request's parameters but the named ones (path,
// control and separately handled keys), as the Perl takes them out with
// extract_param before it looks at the rest.
func paramsExcept(r *route.Request, skip ...string) map[string]string {
	out := map[string]string{}
	for k, v := range r.Params {
		if !slices.Contains(skip, k) {
			out[k] = v
		}
	}
	return out
}

// sortedKeys returns the keys of a string map in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
