package route

import (
	"net/http"
	"strconv"
	"strings"
)

// HandlerFunc serves one endpoint. It runs after authentication and
// parameter validation, with the server's state lock held; it returns the
// value for the "data" envelope or an error (see Fail and ParamError).
type HandlerFunc func(r *Request) (any, error)

// Route is one method on one path of the API.
type Route struct {
	Method string
	// Path is the template below /api2/json, e.g. "/nodes/{node}/qemu/{vmid}/config".
	// A final "{name*}" segment takes the rest of the path (storage volume ids contain '/').
	Path string
	// Params are all parameters of the method, path parameters included,
	// exactly as the official schema lists them.
	Params *Params
	// ProxyTo names the path parameter holding the node that executes the
	// call ("node"); an unknown node fails and an offline node does not answer.
	ProxyTo string
	// NoToken marks methods Proxmox refuses for API tokens.
	NoToken bool
	// Perm is the method's permission check (its "permissions" in Proxmox's
	// Perl); nil means root@pam only, as in Proxmox.
	Perm *Perm
	// Unauthenticated marks methods callable without a ticket or token.
	Unauthenticated bool
	// Class is the fault-injection class ("read", "write", "task", "auth");
	// empty means "read" for GET and "write" otherwise.
	Class   string
	Handler HandlerFunc
}

// FaultClass is the route's fault-injection class, Class or its default.
func (rt *Route) FaultClass() string {
	if rt.Class != "" {
		return rt.Class
	}
	if rt.Method == "GET" {
		return "read"
	}
	return "write"
}

// Request is one validated API call as a handler sees it.
type Request struct {
	Method string
	// Path is the path below /api2/json; Template the route's path template.
	Path     string
	Template string
	Route    *Route
	// Params holds every parameter (path, query and body) as strings.
	Params map[string]string
	// User is "root@pam" for a ticket, the full token id for a token.
	User    string
	IsToken bool
	HTTP    *http.Request
	// Upload is the file of a multipart upload, nil for other calls.
	Upload *Upload
}

// Upload is the file part of a multipart upload, spooled to disk.
type Upload struct {
	Path     string
	Filename string
	Size     int64
}

// Has says whether a parameter was given.
func (r *Request) Has(name string) bool { _, ok := r.Params[name]; return ok }

// Str returns a parameter ("" when absent).
func (r *Request) Str(name string) string { return r.Params[name] }

// Int returns an integer parameter and whether it was given.
func (r *Request) Int(name string) (int, bool) {
	v, ok := r.Params[name]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(v, "+"))
	return n, err == nil
}

// IntOr returns an integer parameter or a default.
func (r *Request) IntOr(name string, def int) int {
	if n, ok := r.Int(name); ok {
		return n
	}
	return def
}

// Bool returns a boolean parameter (validated as "0"/"1").
func (r *Request) Bool(name string) bool { return r.Params[name] == "1" }

// BoolOr returns a boolean parameter or a default when absent.
func (r *Request) BoolOr(name string, def bool) bool {
	if v, ok := r.Params[name]; ok {
		return v == "1"
	}
	return def
}
