package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/pvesim"
)

var privilegedCT = testvm.CT{Name: "legacy", Node: "pve1", VMID: 420, Privileged: true}.YAML()

// "Test connection" names the privileges the repository's manifests need
// and the token lacks, with the path and the resource, over real HTTP.
func TestTestSettingsNamesPrivilegesTheManifestsNeed(t *testing.T) {
	// A token for VMs only: everything a VM needs, nothing for hosts.
	vmOnly := []string{"VM.Allocate", "VM.Audit", "VM.PowerMgmt", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Disk",
		"VM.Config.Network", "VM.Config.Options", "VM.Config.Cloudinit", "VM.Config.CDROM", "VM.Config.HWType",
		"Datastore.AllocateSpace", "Datastore.Audit", "SDN.Use", "Sys.Audit"}
	sim := simtest.Start(t, pvesim.Options{Nodes: 3, TokenID: simTokenID, TokenSecret: simTokenSecret, Seed: 1, TokenPrivileges: vmOnly})
	repo := gittest.New(t)
	repo.Commit("vm", map[string]string{"vms/a.yaml": vmManifest("a", 410, 1)})
	e := newEnv(t, sim, repo, "")
	defer e.st.Close()
	defer e.c.Close()

	check := func() api.Check {
		t.Helper()
		res, err := e.c.TestSettings(context.Background(), values(sim, repo.URL(), e.dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range res.Checks {
			if c.Name == "cluster: privileges" {
				return c
			}
		}
		t.Fatalf("no privileges check: %+v", res.Checks)
		return api.Check{}
	}
	if c := check(); !c.OK {
		t.Errorf("a VM repository with a VM token: %+v", c)
	}
	repo.Commit("ct", map[string]string{"cts/legacy.yaml": privilegedCT})
	c := check()
	if c.OK || !strings.Contains(c.Message, "Sys.Modify on / (Container/legacy: create the container (privileged))") {
		t.Errorf("a privileged container with a VM token: %+v", c)
	}
	if strings.Contains(c.Message, "SDN.Allocate") {
		t.Errorf("privileges the manifests do not need are reported: %s", c.Message)
	}
}
