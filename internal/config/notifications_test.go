package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func loadNotificationsFile(t *testing.T, text string, env ...string) (*Config, []string, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "proxmops.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(LoadOptions{File: p, Env: env})
}

func TestNotificationsListKeepsSecretReferencesForDelivery(t *testing.T) {
	c, _, err := loadNotificationsFile(t, `notifications:
  - name: phone
    url: ntfy://${NTFY_HOST}/${env:NTFY_TOPIC}?token=${file:/run/secrets/ntfy}
    on: [failed, degraded]
  - name: ops
    url: https://hooks.example/proxmops
    on: failed
    resources: ["VirtualMachine/web-*", "*/db"]
`, "NTFY_HOST=ntfy.lan")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Notifications) != 2 {
		t.Fatalf("notifications = %+v", c.Notifications)
	}
	if got := c.Notifications[0].URL; got != "ntfy://ntfy.lan/${env:NTFY_TOPIC}?token=${file:/run/secrets/ntfy}" {
		t.Errorf("url = %q: ${VAR} expands at load, the references stay for delivery", got)
	}
	if !slices.Equal(c.Notifications[1].On, []string{"failed"}) || len(c.Notifications[1].Resources) != 2 {
		t.Errorf("ops = %+v", c.Notifications[1])
	}
	if r := c.Redacted().Notifications[0].URL; r != "ntfy://ntfy.lan/…" {
		t.Errorf("redacted url = %q", r)
	}
	if c.Notifications[0].URL == c.Redacted().Notifications[0].URL {
		t.Error("Redacted changed the original")
	}
}

func TestNotificationsListRefusals(t *testing.T) {
	tests := []struct{ name, entry, want string }{
		{"no name", "url: https://h/x\n    on: [failed]", "notifications[0].name: is required"},
		{"unknown event", "name: a\n    url: https://h/x\n    on: [fail]", "unknown event \"fail\", did you mean `failed`?"},
		{"no event", "name: a\n    url: https://h/x", "notifications[a].on: lists no event"},
		{"unknown scheme", "name: a\n    url: ntfi://h/x\n    on: [failed]", "unknown scheme \"ntfi\", did you mean `ntfy`?"},
		{"bad selector", "name: a\n    url: https://h/x\n    on: [failed]\n    resources: [web]", "\"web\" is no Kind/name selector"},
		{"unknown key", "name: a\n    url: https://h/x\n    on: [failed]\n    events: [x]", "unknown key `events` in a receiver of notifications"},
		{"empty reference", "name: a\n    url: https://h/${env:}\n    on: [failed]", "${env:} names no variable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := loadNotificationsFile(t, "notifications:\n  - "+tt.entry+"\n")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestNotificationURLWithInlineCredentialsWarns(t *testing.T) {
	_, warnings, err := loadNotificationsFile(t, "notifications:\n  - name: a\n    url: https://u:secret@h/x\n    on: [failed]\n")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "notifications[a].url holds credentials inline") }) {
		t.Errorf("warnings = %q", warnings)
	}
}
