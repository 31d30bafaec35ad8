package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
)

func TestUserChangesOwnPasswordGivingTheCurrentOne(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	v := e.viewer(a)
	other := e.client() // vera's second browser
	other.login("vera", "viewer password")

	v.expect(403, "POST", "/api/v1/me/password", map[string]string{"currentPassword": "not it at all", "newPassword": "a new password"})
	v.expect(400, "POST", "/api/v1/me/password", map[string]string{"currentPassword": "viewer password", "newPassword": "short"})
	v.expect(400, "POST", "/api/v1/me/password", map[string]string{"newPassword": "a new password", "oldPassword": "viewer password"})
	other.expect(200, "GET", "/api/v1/me", nil) // refusals change nothing

	b := v.expect(200, "POST", "/api/v1/me/password", map[string]string{"currentPassword": "viewer password", "newPassword": "a new password"})
	var me api.Me
	json.Unmarshal(b, &me)
	if me.Username != "vera" || me.Role != api.RoleViewer || me.CSRFToken == "" || me.CSRFToken == v.csrf {
		t.Fatalf("answer: %+v (old csrf %q)", me, v.csrf)
	}
	v.csrf = me.CSRFToken
	v.expect(200, "GET", "/api/v1/me", nil)     // this browser got a new session
	other.expect(401, "GET", "/api/v1/me", nil) // the other session ended
	e.client().expect(401, "POST", "/api/v1/login", map[string]string{"username": "vera", "password": "viewer password"})
	e.client().login("vera", "a new password")
	// Without the CSRF header a session cannot change it.
	v.csrf = ""
	v.expect(403, "POST", "/api/v1/me/password", map[string]string{"currentPassword": "a new password", "newPassword": "another password"})
}

func TestWrongCurrentPasswordsAreRateLimited(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	v := e.viewer(a)
	var last int
	for range 30 {
		resp, _ := v.req("POST", "/api/v1/me/password", map[string]string{"currentPassword": "guess guess guess", "newPassword": "a new password"})
		last = resp.StatusCode
		if last == 429 {
			break
		}
		if last != 403 {
			t.Fatalf("status %d, want 403 then 429", last)
		}
	}
	if last != 429 {
		t.Fatal("30 wrong current passwords were all checked: no limit")
	}
}

func TestAPITokenHasNoPasswordToChange(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	s, _ := e.tokenClient(a, "ci", "admin")
	b := s.expect(400, "POST", "/api/v1/me/password", map[string]string{"currentPassword": adminPassword, "newPassword": "a new password"})
	if !strings.Contains(string(b), "API token has no password") {
		t.Fatalf("answer: %s", b)
	}
}

func TestAdminChangesRolesAndResetsPasswords(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	v := e.viewer(a)

	// A viewer can neither promote itself nor reset anyone's password.
	v.expect(403, "PATCH", "/api/v1/users/vera", map[string]string{"role": "admin"})
	v.expect(403, "PATCH", "/api/v1/users/admin", map[string]string{"password": "taken over now"})
	v.expect(403, "POST", "/api/v1/sync", nil)

	a.expect(400, "PATCH", "/api/v1/users/vera", map[string]string{"role": "root"})
	a.expect(400, "PATCH", "/api/v1/users/vera", map[string]string{})
	a.expect(400, "PATCH", "/api/v1/users/vera", map[string]string{"password": "short"})
	a.expect(404, "PATCH", "/api/v1/users/ghost", map[string]string{"role": "admin"})
	// The last admin cannot be demoted.
	a.expect(409, "PATCH", "/api/v1/users/admin", map[string]string{"role": "viewer"})

	var u api.User
	json.Unmarshal(a.expect(200, "PATCH", "/api/v1/users/vera", map[string]string{"role": "admin"}), &u)
	if u.Username != "vera" || u.Role != api.RoleAdmin {
		t.Fatalf("answer: %+v", u)
	}
	// The new role applies to vera's open session at once.
	v.expect(202, "POST", "/api/v1/sync", nil)
	// With two admins, one can be demoted.
	json.Unmarshal(a.expect(200, "PATCH", "/api/v1/users/VERA", map[string]string{"role": "viewer"}), &u)
	if u.Role != api.RoleViewer {
		t.Fatalf("answer: %+v", u)
	}
	v.expect(403, "POST", "/api/v1/sync", nil)

	// A reset password ends the user's sessions; the new one works.
	a.expect(200, "PATCH", "/api/v1/users/vera", map[string]string{"password": "reset by admin"})
	v.expect(401, "GET", "/api/v1/me", nil)
	e.client().expect(401, "POST", "/api/v1/login", map[string]string{"username": "vera", "password": "viewer password"})
	e.client().login("vera", "reset by admin")
	a.expect(200, "GET", "/api/v1/me", nil) // the admin's own session is untouched
	if !strings.Contains(e.logText(), "user password reset") {
		t.Fatal("the reset is not logged")
	}
}

// Creating an account or a token, or changing a role, with a role that is
// not one refuses it with the same words naming the roles there are.
func TestAnUnknownRoleIsRefusedAlikeEverywhere(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	e.viewer(a)
	for _, c := range []struct {
		method, path string
		body         map[string]string
	}{
		{"POST", "/api/v1/users", map[string]string{"username": "eve", "password": "eve password 1", "role": "root"}},
		{"POST", "/api/v1/tokens", map[string]string{"name": "ci", "role": "root"}},
		{"PATCH", "/api/v1/users/vera", map[string]string{"role": "root"}},
	} {
		b := a.expect(400, c.method, c.path, c.body)
		if !strings.Contains(string(b), `role \"root\" must be \"admin\" or \"viewer\"`) {
			t.Errorf("%s %s: %s", c.method, c.path, b)
		}
	}
}
