package pvesim

import (
	"encoding/json"
	"net/url"
	"testing"
)

func TestAccessPermissions(t *testing.T) {
	_, c := newSim(t, Options{})
	tests := []struct {
		name      string
		params    url.Values
		wantPaths []string
		none      bool // the paths are listed with no privileges
	}{
		{"the token itself on /", vals("path", "/"), []string{"/"}, false},
		{"the token itself, whole tree", nil, topLevelPaths, false},
		{"the token named explicitly", vals("userid", testTokenID, "path", "/vms/100"), []string{"/vms/100"}, false},
		{"its user, root@pam", vals("userid", "root@pam", "path", "/storage"), []string{"/storage"}, false},
		{"an unknown user has none", vals("userid", "alice@pve", "path", "/"), []string{"/"}, true},
		{"an unknown token of root has none", vals("userid", "root@pam!other"), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.mustOK("GET", "/access/permissions", tt.params)
			var got map[string]map[string]int
			if err := json.Unmarshal(r.Data, &got); err != nil {
				t.Fatalf("data %s: %v", r.Data, err)
			}
			if len(got) != len(tt.wantPaths) {
				t.Fatalf("paths %v, want %v", got, tt.wantPaths)
			}
			for _, p := range tt.wantPaths {
				privs := got[p]
				if tt.none {
					if len(privs) != 0 {
						t.Errorf("%s: %v, want no privileges", p, privs)
					}
					continue
				}
				if len(privs) != len(privileges) {
					t.Fatalf("%s: %d privileges, want %d", p, len(privs), len(privileges))
				}
				for _, name := range []string{"VM.Allocate", "Sys.Modify", "SDN.Use", "Datastore.AllocateTemplate", "Sys.AccessNetwork"} {
					if privs[name] != 1 {
						t.Errorf("%s: %s = %d, want 1 (propagated)", p, name, privs[name])
					}
				}
			}
		})
	}
}

func TestAccessPermissionsRefusesABadUserID(t *testing.T) {
	_, c := newSim(t, Options{})
	for _, bad := range []string{"root", "root@", "root@pam!", "ro ot@pam", "root@pam!1token"} {
		r := c.do("GET", "/access/permissions", vals("userid", bad))
		if r.Status != 400 || r.Errors["userid"] == "" {
			t.Errorf("userid %q: %d %s %v, want a 400 for userid", bad, r.Status, r.Reason, r.Errors)
		}
	}
	r := c.do("GET", "/access/permissions", vals("bogus", "1"))
	if r.Status != 400 || r.Errors["bogus"] == "" {
		t.Errorf("unknown parameter: %d %v", r.Status, r.Errors)
	}
}
