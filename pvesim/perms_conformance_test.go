package pvesim

import (
	"fmt"
	"strings"
	"testing"
)

// schemaPermNull are methods whose "permissions" the API viewer's schema
// leaves empty although the Perl method has one (the schema generator drops
// it on these paths); the Perl is the truth.
var schemaPermNull = map[string]string{
	"GET /": "pve-manager PVE/API2.pm index: user => 'all'",
	"GET /nodes/{node}/storage/{storage}/content/{volume*}":    "pve-storage API2/Storage/Content.pm info: user => 'all', checked inside",
	"PUT /nodes/{node}/storage/{storage}/content/{volume*}":    "pve-storage API2/Storage/Content.pm updateattributes: user => 'all', checked inside",
	"DELETE /nodes/{node}/storage/{storage}/content/{volume*}": "pve-storage API2/Storage/Content.pm delete: user => 'all', checked inside",
}

// schemaPermString renders a schema "permissions" object as Perm.String does.
func schemaPermString(p any) string {
	m, ok := p.(map[string]any)
	if !ok || m == nil {
		return "root only"
	}
	if u, ok := m["user"].(string); ok {
		return "user=" + u
	}
	check, ok := m["check"].([]any)
	if !ok {
		return "root only"
	}
	return schemaCheckString(check)
}

func schemaCheckString(c []any) string {
	op, _ := c[0].(string)
	switch op {
	case "and", "or":
		var parts []string
		for _, sub := range c[1:] {
			parts = append(parts, "("+schemaCheckString(sub.([]any))+")")
		}
		return op + " " + strings.Join(parts, " ")
	case "perm-modify":
		return fmt.Sprintf("perm-modify %v", c[1])
	case "userid-group":
		var privs []string
		for _, p := range c[1].([]any) {
			privs = append(privs, p.(string))
		}
		return fmt.Sprintf("userid-group [%s]", strings.Join(privs, ","))
	}
	var privs []string
	for _, p := range c[2].([]any) {
		privs = append(privs, p.(string))
	}
	s := fmt.Sprintf("perm %v [%s]", c[1], strings.Join(privs, ","))
	for i := 3; i+1 < len(c); i += 2 {
		switch c[i] {
		case "any":
			s += " any"
		case "require_param":
			s += fmt.Sprintf(" require_param=%v", c[i+1])
		}
	}
	return s
}

// TestRoutePermissionsMatchSchema proves every served method checks what
// its Proxmox VE 9.1 counterpart checks before its handler runs: the route
// table's Perm equals the schema's "permissions".
func TestRoutePermissionsMatchSchema(t *testing.T) {
	schema := loadSchema(t, schemaCurrent)
	routes := sortedRoutes()
	for _, r := range routes {
		key := routeKey(r)
		info, ok := schema[key]
		if !ok || r.Unauthenticated {
			continue
		}
		want := schemaPermString(info["permissions"])
		if why, ok := schemaPermNull[key]; ok && want == "root only" {
			want = "user=all"
			t.Logf("%s: %s", key, why)
		}
		if got := r.Perm.String(); got != want {
			t.Errorf("%s: permissions %s, Proxmox checks %s", key, got, want)
		}
	}
}
