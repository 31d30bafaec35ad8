package api

import "testing"

func TestRoleCheckAcceptsTheRolesAndNamesThemOtherwise(t *testing.T) {
	for _, r := range []Role{RoleAdmin, RoleViewer} {
		if err := r.Check(); err != nil {
			t.Errorf("%s: %v", r, err)
		}
	}
	for r, want := range map[Role]string{
		"root": `role "root" must be "admin" or "viewer"`,
		"":     `role "" must be "admin" or "viewer"`,
	} {
		if err := r.Check(); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", r, err, want)
		}
	}
}
