package pvesim

import (
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// router is a tree of path segments: at each level either literal folders
// or one parameter, like Proxmox's RESTHandler.
type router struct {
	root *routeNode
	all  []*route.Route
}

type routeNode struct {
	folders   map[string]*routeNode
	param     *routeNode
	paramName string
	rest      bool // the parameter takes the rest of the path
	methods   map[string]*route.Route
	template  string
}

func newRouter() *router { return &router{root: &routeNode{}} }

func splitPath(p string) []string {
	parts := strings.Split(p, "/")
	out := parts[:0]
	for _, s := range parts {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (rt *router) add(r *route.Route) {
	n := rt.root
	for _, seg := range splitPath(r.Path) {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			name := seg[1 : len(seg)-1]
			rest := strings.HasSuffix(name, "*")
			name = strings.TrimSuffix(name, "*")
			if n.param == nil {
				n.param = &routeNode{}
				n.paramName = name
				n.rest = rest
			} else if n.paramName != name {
				panic("pvesim: conflicting path parameter names at " + r.Path)
			}
			n = n.param
			continue
		}
		if n.folders == nil {
			n.folders = map[string]*routeNode{}
		}
		c := n.folders[seg]
		if c == nil {
			c = &routeNode{}
			n.folders[seg] = c
		}
		n = c
	}
	if n.methods == nil {
		n.methods = map[string]*route.Route{}
	}
	if _, dup := n.methods[r.Method]; dup {
		panic("pvesim: duplicate route " + r.Method + " " + r.Path)
	}
	n.methods[r.Method] = r
	n.template = r.Path
	rt.all = append(rt.all, r)
}

// match finds the route of a method and path, filling path parameters.
// The template is returned even when the method is missing, for counting.
func (rt *router) match(method, path string) (*route.Route, map[string]string, string) {
	segs := splitPath(path)
	n := rt.root
	params := map[string]string{}
	for i := 0; i < len(segs); i++ {
		seg := segs[i]
		if c, ok := n.folders[seg]; ok {
			n = c
			continue
		}
		if n.param == nil {
			return nil, nil, ""
		}
		if n.rest {
			seg = strings.Join(segs[i:], "/")
			i = len(segs)
		}
		params[n.paramName] = seg
		n = n.param
	}
	if n.methods == nil {
		return nil, nil, ""
	}
	r := n.methods[method]
	return r, params, n.template
}
