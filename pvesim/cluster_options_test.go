package pvesim

import (
	"reflect"
	"testing"
)

// /cluster/options reads back datacenter.cfg's tag options as
// parse_datacenter_config leaves them (objects and arrays), and
// get_unique_tags follows tag-style on guest config writes.
func TestClusterOptionsTagStyle(t *testing.T) {
	_, c := haSim(t, Options{})
	c.mustOK("PUT", "/cluster/options", vals("tag-style", "case-sensitive=1,ordering=config", "registered-tags", "prod;Backup",
		"user-tag-access", "user-allow=list,user-allow-list=web;db"))
	got := c.mustOK("GET", "/cluster/options", nil).obj(t)
	want := map[string]any{
		"tag-style":       map[string]any{"case-sensitive": float64(1), "ordering": "config"},
		"registered-tags": []any{"Backup", "prod"},
		"user-tag-access": map[string]any{"user-allow": "list", "user-allow-list": []any{"db", "web"}},
	}
	for k, v := range want {
		if !reflect.DeepEqual(got[k], v) {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	c.mustOK("PUT", "/nodes/pve1/qemu/100/config", vals("tags", "Zeta;alpha;Zeta"))
	if tags := c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil).obj(t)["tags"]; tags != "Zeta;alpha" {
		t.Fatalf("tags with case-sensitive=1,ordering=config: %v", tags)
	}
	c.mustOK("PUT", "/cluster/options", vals("delete", "tag-style"))
	c.mustOK("PUT", "/nodes/pve1/qemu/100/config", vals("tags", "Zeta;alpha;zeta"))
	if tags := c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil).obj(t)["tags"]; tags != "alpha;zeta" {
		t.Fatalf("tags with the default style: %v", tags)
	}
	if r := c.do("PUT", "/cluster/options", vals("tag-style", "ordering=random")); r.Status != 400 {
		t.Fatalf("a bad tag-style: %d %v", r.Status, r.Errors)
	}
}

// assert_tag_permissions: without Sys.Modify on /, a registered tag, or
// any tag outside user-allow-list with user-allow=list, is refused.
func TestTagPermissionsFollowUserTagAccess(t *testing.T) {
	srv, c := haSim(t, Options{})
	c.mustOK("PUT", "/cluster/options", vals("registered-tags", "prod", "user-tag-access", "user-allow=list,user-allow-list=web"))
	srv.SetTokenPrivileges([]string{"VM.Config.Options", "VM.Audit"})
	tests := []struct{ tags, want string }{
		{"web", ""},
		{"web;prod", "Permission check failed (/, Sys.Modify for modifying tag 'prod')\n"},
		{"web;other", "Permission check failed (/, Sys.Modify for modifying tag 'other')\n"},
	}
	for _, tt := range tests {
		r := c.do("PUT", "/nodes/pve1/lxc/200/config", vals("tags", tt.tags))
		if tt.want == "" && r.Status != 200 || tt.want != "" && (r.Status != 403 || r.Message != tt.want) {
			t.Errorf("tags %q: %d %q, want %q", tt.tags, r.Status, r.Message, tt.want)
		}
	}
}
