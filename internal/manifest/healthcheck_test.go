package manifest

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

const healthVM = `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata: {name: app, node: pve1}
spec:
  vmid: 200
  agent: AGENT
  cloudInit: {ip: 127.0.0.7/8}
  healthCheck:
HEALTH`

func loadHealth(t *testing.T, agent, health string) (*Set, error) {
	t.Helper()
	doc := strings.Replace(strings.Replace(healthVM, "AGENT", agent, 1), "HEALTH", health, 1)
	return LoadFS(fstest.MapFS{"vm.yaml": {Data: []byte(doc)}}, ".")
}

// A health check's mistakes are reported at the field's file and line.
func TestHealthCheckRulesAreReportedAtTheirLine(t *testing.T) {
	cases := []struct {
		name, agent, health, want string
	}{
		{"no probe", "true", "    interval: 10s\n", "vm.yaml:9:13: spec.healthCheck: set one of agent, tcp or http"},
		{"two probes", "true", "    agent: true\n    tcp: {port: 22}\n", "vm.yaml:9:10: spec.healthCheck: agent, tcp and http are mutually exclusive"},
		{"agent not enabled", "false", "    agent: true\n", "vm.yaml:9:12: spec.healthCheck.agent: the guest agent is not enabled"},
		{"bad duration", "true", "    tcp: {port: 22}\n    interval: often\n", "vm.yaml:10:15: spec.healthCheck.interval: \"often\" is not a duration"},
		{"timeout over interval", "true", "    tcp: {port: 22}\n    interval: 5s\n    timeout: 10s\n", "vm.yaml:11:14: spec.healthCheck.timeout: 10s is longer than the interval 5s"},
		{"port out of range", "true", "    http: {port: 70000}\n", "spec.healthCheck.http.port"},
		{"status out of range", "true", "    http: {port: 80, expectStatus: 42}\n", "spec.healthCheck.http.expectStatus"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadHealth(t, tc.agent, tc.health)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// Defaults fill what is not declared; the address is where provisioning
// would connect to.
func TestHealthCheckDefaultsAndAddress(t *testing.T) {
	set, err := loadHealth(t, "true", "    http: {port: 8080, path: /healthz, expectStatus: 204}\n")
	if err != nil {
		t.Fatal(err)
	}
	h, addr := HealthCheckOf(set.Get(KindVirtualMachine, "app"))
	if addr != "127.0.0.7" || h.IntervalDuration() != 10*time.Second || h.TimeoutDuration() != 3*time.Second ||
		h.Failures() != 3 || h.GraceDuration() != 5*time.Minute || h.HTTP.ExpectStatus != 204 {
		t.Fatalf("check %+v at %q", h, addr)
	}
}

// A container has no guest agent to ask.
func TestContainerHealthCheckRefusesTheAgent(t *testing.T) {
	doc := strings.Replace(provisionCT, "  provision:\n", "  healthCheck: {agent: true}\n  provision:\n", 1)
	_, err := LoadFS(provisionFS(doc), ".")
	if err == nil || !strings.Contains(err.Error(), "spec.healthCheck.agent: a container has no QEMU guest agent") {
		t.Fatalf("error %v", err)
	}
}

// A container's check connects where provisioning does: the first static
// IP of its NICs in slot order, unless the check names its own address.
func TestContainerHealthCheckAddressIsTheProvisioningOne(t *testing.T) {
	for _, tc := range []struct{ check, want string }{
		{"{tcp: {port: 80}}", "127.0.0.9"},
		{"{tcp: {port: 80}, address: db.lan}", "db.lan"},
	} {
		doc := strings.Replace(provisionCT, "  provision:\n", "  healthCheck: "+tc.check+"\n  provision:\n", 1)
		set, err := LoadFS(provisionFS(doc), ".")
		if err != nil {
			t.Fatal(err)
		}
		if _, addr := HealthCheckOf(set.Get(KindContainer, "web")); addr != tc.want {
			t.Errorf("%s: address %q, want %q", tc.check, addr, tc.want)
		}
	}
}
