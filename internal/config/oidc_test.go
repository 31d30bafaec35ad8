package config

import (
	"slices"
	"strings"
	"testing"
)

func TestOIDCReadFromNestedFileListsAndEnvironment(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "secret", "s3cret\n")
	file := writeFile(t, dir, "c.yaml", `
auth:
  oidc:
    issuer: https://id.example.org
    clientID: proxmops
    clientSecretFile: secret
    adminGroups: [ops, "root-admins"]
    viewerGroups:
      - family
`)
	c, _, err := Load(LoadOptions{File: file, Env: []string{"PROXMOPS_AUTH_OIDC_VIEWERGROUPS=family, friends"}})
	if err != nil {
		t.Fatal(err)
	}
	o := c.Auth.OIDC
	if o.Issuer != "https://id.example.org" || o.ClientID != "proxmops" || o.ClientSecret != "s3cret" {
		t.Errorf("oidc = %+v", o)
	}
	if !slices.Equal(o.AdminGroups, []string{"ops", "root-admins"}) || !slices.Equal(o.ViewerGroups, []string{"family", "friends"}) {
		t.Errorf("groups: admin %q viewer %q", o.AdminGroups, o.ViewerGroups)
	}
	if o.RoleClaim != "groups" || o.Name != "SSO" {
		t.Errorf("defaults: roleClaim %q name %q", o.RoleClaim, o.Name)
	}
	if c.Redacted().Auth.OIDC.ClientSecret != "(set)" {
		t.Error("the client secret is not redacted")
	}
}

func TestOIDCProblemsAreNamed(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"auth:\n  oidc:\n    issuer: https://id.example.org\n    adminGroups: [a]\n", "auth.oidc.clientID"},
		{"auth:\n  oidc:\n    issuer: https://id.example.org\n    clientID: x\n", "auth.oidc.adminGroups"},
		{"auth:\n  oidc:\n    issuer: ftp://x\n    clientID: x\n    adminGroups: [a]\n", "auth.oidc.issuer"},
		{"auth:\n  oidc:\n    isuer: https://x\n", "did you mean"},
		{"auth:\n  oidc:\n    issuer: [a]\n", "expected a single value"},
	} {
		_, _, err := Load(LoadOptions{File: writeFile(t, t.TempDir(), "c.yaml", tc.yaml), Env: []string{}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one naming %s", tc.yaml, err, tc.want)
		}
	}
}
