package manifest

import (
	"cmp"
	"slices"
	"strings"

	"github.com/proxmops/proxmops/internal/vocab"
)

// Edge is one declared resource a resource needs, and how.
type Edge struct {
	Kind     Kind
	Name     string
	Relation Relation
	// Path is the field of the needing manifest that makes the edge
	// (spec.fromTemplate, metadata.dependsOn[0]).
	Path string
}

// Key is the edge's target as "Kind/name".
func (e Edge) Key() string { return vocab.Key(e.Kind, e.Name) }

// Dependencies lists what r needs among the declared resources: its spec's
// references, each with its own relation (Ref.Relation) or else the
// target kind's row's (KindInfo.Relation), and its metadata.dependsOn (RelationDependsOn). The
// UI's graph (the API's dependsOn), the engine's apply order and the
// cycle check all read this one function. A reference to something only
// on the cluster (External) gives no edge, nor one to r itself; an edge
// is listed once per relation, what r is made from first, by key within.
func Dependencies(r Resource) []Edge {
	if r == nil {
		return nil
	}
	var out []Edge
	type seenKey struct {
		key string
		rel Relation
	}
	seen := map[seenKey]bool{}
	for _, ref := range r.References() {
		if ref.External {
			continue
		}
		e := Edge{Kind: ref.Kind, Name: ref.Name, Relation: ref.Kind.Info().Relation, Path: ref.Path}
		if ref.Relation != "" {
			e.Relation = ref.Relation
		}
		if ref.DependsOn {
			e.Relation = RelationDependsOn
		}
		if e.Relation == "" {
			e.Relation = RelationUses
		}
		k := seenKey{e.Key(), e.Relation}
		if (e.Kind == r.Kind() && e.Name == r.Name()) || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b Edge) int {
		if c := cmp.Compare(slices.Index(Relations, a.Relation), slices.Index(Relations, b.Relation)); c != 0 {
			return c
		}
		return cmp.Compare(a.Key(), b.Key())
	})
	return out
}

// NodeEdge is a node a resource places something on: a node-affinity HA
// rule's node, with its priority. Nodes are no declared resources, so a
// NodeEdge is for the UI's graph only: Dependencies (the apply order)
// never lists it.
type NodeEdge struct {
	Node     string
	Priority int
	Relation Relation
}

// NodeEdges lists the nodes r places something on (RelationPrefers or
// RelationOnlyOn), the preferred first (highest priority, then by name);
// none for a kind that places nothing on nodes.
func NodeEdges(r Resource) []NodeEdge {
	p, ok := r.(interface{ nodeEdges() []NodeEdge })
	if !ok {
		return nil
	}
	out := p.nodeEdges()
	slices.SortStableFunc(out, func(a, b NodeEdge) int {
		if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
			return c
		}
		return cmp.Compare(a.Node, b.Node)
	})
	return out
}

// DependsOnKeys lists the keys ("Kind/name") r's metadata.dependsOn names,
// in Dependencies' order.
func DependsOnKeys(r Resource) []string {
	var out []string
	for _, e := range Dependencies(r) {
		if e.Relation == RelationDependsOn {
			out = append(out, e.Key())
		}
	}
	return out
}

// dependencyPattern is the JSON Schema pattern of a metadata.dependsOn
// entry: a kind, a slash, a name.
func dependencyPattern() string {
	return "^(" + strings.Join(kindNames(), "|") + ")/[A-Za-z0-9][A-Za-z0-9-]*$"
}

// checkDependsOn checks metadata.dependsOn on its own (a known kind, a
// name, no repeat, not the resource itself) and records each entry as a
// reference the set must resolve.
func checkDependsOn(r Resource, c *checker) {
	seen := map[string]bool{}
	for i, key := range r.Meta().DependsOn {
		p := indexPath("metadata.dependsOn", i)
		kind, name, ok := vocab.SplitKey(key)
		switch {
		case !ok || name == "" || strings.Contains(name, "/"):
			c.errorf(p, "%q is not Kind/name (e.g. VirtualMachine/db)", key)
			continue
		case !slices.Contains(kindNames(), kind):
			c.errorf(p, "unknown kind %q%s", kind, didYouMean(kind, kindNames()))
			continue
		case Kind(kind) == r.Kind() && name == r.Name():
			c.errorf(p, "%s cannot depend on itself", key)
			continue
		case seen[key]:
			c.errorf(p, "duplicate dependency %q", key)
			continue
		}
		seen[key] = true
		addRef(r, Ref{Kind: Kind(kind), Name: name, Path: p, DependsOn: true})
	}
}

// checkDependencyCycles fails every metadata.dependsOn entry that closes a
// cycle over Dependencies' edges (a resource waiting, through others, for
// itself would never be created).
func (s *Set) checkDependencyCycles(fail func(Resource, string, string, ...any)) {
	key := func(r Resource) string { return vocab.Key(r.Kind(), r.Name()) }
	// path finds a way from r to goal, returning the keys on it.
	var path func(r Resource, goal string, visited map[string]bool) []string
	path = func(r Resource, goal string, visited map[string]bool) []string {
		if key(r) == goal {
			return []string{goal}
		}
		if visited[key(r)] {
			return nil
		}
		visited[key(r)] = true
		for _, e := range Dependencies(r) {
			if t := s.Get(e.Kind, e.Name); t != nil {
				if rest := path(t, goal, visited); rest != nil {
					return append([]string{key(r)}, rest...)
				}
			}
		}
		return nil
	}
	for _, r := range s.Resources {
		if s.Get(r.Kind(), r.Name()) != r {
			continue // a duplicate, reported already
		}
		for _, e := range Dependencies(r) {
			if e.Relation != RelationDependsOn {
				continue
			}
			t := s.Get(e.Kind, e.Name)
			if t == nil {
				continue
			}
			if way := path(t, key(r), map[string]bool{}); way != nil {
				fail(r, e.Path, "dependency cycle: %s -> %s", key(r), strings.Join(way, " -> "))
			}
		}
	}
}
