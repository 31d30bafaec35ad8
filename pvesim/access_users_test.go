package pvesim

import (
	"strings"
	"testing"
)

// GET /access/users/{userid} shows the token's privsep flag to a caller
// with Sys.Audit or User.Modify on /access/groups, and refuses others
// (read_user's userid-group check).
func TestReadUserShowsTheTokensPrivsepToAuditors(t *testing.T) {
	for _, tt := range []struct {
		name    string
		privs   []string
		status  int
		privsep float64
	}{
		{"a token without privilege separation", nil, 200, 0},
		{"a separated token with Sys.Audit", []string{"Sys.Audit"}, 200, 1},
		{"a separated token without", []string{"VM.Audit"}, 403, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, c := newSim(t, Options{TokenPrivileges: tt.privs})
			r := c.do("GET", "/access/users/root@pam", nil)
			if r.Status != tt.status {
				t.Fatalf("%d %s %s", r.Status, r.Reason, r.Body)
			}
			if tt.status != 200 {
				return
			}
			tok := r.obj(t)["tokens"].(map[string]any)["proxmops"].(map[string]any)
			if tok["privsep"] != tt.privsep || tok["expire"] != 0.0 {
				t.Errorf("token %v", tok)
			}
		})
	}
	srv := startSim(t, Options{})
	if r := newClient(t, srv).do("GET", "/access/users/nobody@pve", nil); r.Status != 500 || !strings.Contains(r.Reason, "no such user ('nobody@pve')") {
		t.Errorf("an unknown user: %d %s", r.Status, r.Reason)
	}
}
