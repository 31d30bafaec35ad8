package pvesim

// The parameter schema lives in pvesim/route; these names keep the
// endpoint files (and callers of the exported API) writing Str("node"),
// *Param and Props(...) as before.

import (
	"maps"
	"slices"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Schema types, from pvesim/route.
type (
	// Type is the JSON schema type of a parameter.
	Type = route.Type
	// Param defines one parameter of an endpoint or one key of a property string.
	Param = route.Param
	// PropFormat is the format of a property string: its keys.
	PropFormat = route.PropFormat
	// Params is the parameter set of one endpoint.
	Params = route.Params
)

// Parameter types of the Proxmox schema.
const (
	TString  = route.TString
	TInteger = route.TInteger
	TNumber  = route.TNumber
	TBoolean = route.TBoolean
	TArray   = route.TArray
	TObject  = route.TObject
)

// Str defines a string parameter.
func Str(name string) *Param { return route.Str(name) }

// Int defines an integer parameter.
func Int(name string) *Param { return route.Int(name) }

// Num defines a number parameter.
func Num(name string) *Param { return route.Num(name) }

// Bool defines a boolean parameter (0/1 on the wire).
func Bool(name string) *Param { return route.Bool(name) }

// Arr defines an array parameter (only used in a few bodies).
func Arr(name string) *Param { return route.Arr(name) }

// Alias defines a property-string key that is an alias of another key.
func Alias(name, target string) *Param { return route.Alias(name, target) }

// Props builds a property-string format from its keys.
func Props(keys ...*Param) *PropFormat { return route.Props(keys...) }

// NewParams builds a parameter set.
func NewParams(ps ...*Param) *Params { return route.NewParams(ps...) }

// indexOf parses key as prefix followed by a canonical decimal number.
func indexOf(key, prefix string) (int, bool) { return route.IndexOf(key, prefix) }

// sortedKeys returns the keys of a string map in order (kept as a name
// because the endpoint files use it in a hundred places).
// paramsExcept is the request's parameters but the named ones (path,
// control and separately handled keys), as the Perl takes them out with
// extract_param before it looks at the rest.
func paramsExcept(r *Request, skip ...string) map[string]string {
	out := map[string]string{}
	for k, v := range r.Params {
		if !slices.Contains(skip, k) {
			out[k] = v
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
