package demo

import (
	"strings"
	"testing"
)

// provisionRest is the part of a provisioned manifest the rewrite leaves as
// it is: what to install and the power state.
const provisionRest = `    packages: [mosquitto]
    files:
      - path: /etc/motd
        content: "x"
  state: running
`

// withoutProvision is a manifest that declares no provision: the rewrite
// leaves it as it is, its addresses included.
const withoutProvision = `---
kind: Container
spec:
  net:
    - {bridge: vmbr0}
    - bridge: vmbr0
      ip: 10.0.0.53/24
`

// Only manifests that declare provision are pointed at the simulator's
// guest SSH: a loopback address per NIC and the port, replaced when the
// manifest already has one.
func TestProvisionRewrite(t *testing.T) {
	in := `kind: Container
spec:
  net:
    - bridge: vmbr0
      ip: 192.168.178.43/24
      gw: 192.168.178.1
  provision:
    port: 2200
` + provisionRest + withoutProvision
	got := string(provisionRewrite([]byte(in), 40123))
	want := `kind: Container
spec:
  net:
    - bridge: vmbr0
      ip: 127.0.80.43/8
      gw: 127.0.0.1
  provision:
    port: 40123
` + provisionRest + withoutProvision
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if again := string(provisionRewrite([]byte(got), 40124)); again != strings.Replace(want, "40123", "40124", 1) {
		t.Fatalf("a second run with another port:\n%s", again)
	}
}
