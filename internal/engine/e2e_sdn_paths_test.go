package engine_test

import (
	"context"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
)

// An SDN change names the manifest field it comes from, also where the
// Proxmox key is not the field's name (vlan-protocol, isolate-ports), so the
// UI aligns desired and observed.
func TestSdnChangesNameTheirManifestFields(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.write("sdn/zones.yaml", `apiVersion: proxmops.dev/v1
kind: SdnZone
metadata:
  name: stacked
spec:
  type: qinq
  bridge: vmbr1
  tag: 20
  vlanProtocol: 802.1ad
---
apiVersion: proxmops.dev/v1
kind: SdnVnet
metadata:
  name: inner
spec:
  zone: stacked
  tag: 30
  alias: Inner
  isolatePorts: false
`)
	eng := e.engine(engine.Options{})
	e.mustApply(eng)
	e.requireInSync(eng)
	must(t, e.client.SDNSet(ctx, "zones", "stacked", pve.NewParams().Set("vlan-protocol", "802.1q"), nil))
	must(t, e.client.SDNSet(ctx, "vnets", "inner", pve.NewParams().Set("isolate-ports", "1"), nil))
	applySDN(t, e)
	p := e.plan(eng)
	for _, tc := range []struct{ kind, name, field, path string }{
		{engine.KindSdnZone, "stacked", "vlan-protocol", "spec.vlanProtocol"},
		{engine.KindSdnVnet, "inner", "isolate-ports", "spec.isolatePorts"},
	} {
		a := p.Find(tc.kind, tc.name)
		found := false
		for _, c := range a.Changes {
			if c.Field == tc.field {
				found = true
				if c.Path != tc.path {
					t.Errorf("%s/%s %s: path %q, want %q", tc.kind, tc.name, tc.field, c.Path, tc.path)
				}
			}
		}
		if !found {
			t.Errorf("%s/%s: no change of %s:\n%s", tc.kind, tc.name, tc.field, planText(p))
		}
	}
}
