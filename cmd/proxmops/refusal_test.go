package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/pvesim"
)

// A create Proxmox would refuse (a disk on a storage without images) is a
// change the plan reports and a failure the apply reports, before any call.
func TestForeseenRefusalExitCodes(t *testing.T) {
	sim, repo := cliEnv(t)
	refused := strings.Replace(cliVM, "- storage: local-lvm", "- storage: local", 1)
	if err := os.WriteFile(filepath.Join(repo, "app-01.yaml"), []byte(refused), 0o644); err != nil {
		t.Fatal(err)
	}
	out := planAndApplyRefuse(t, sim, repo, "storage 'local' does not support vm images")
	if !strings.Contains(out, "0 applied, 1 failed") {
		t.Fatalf("apply:\n%s", out)
	}
	if _, ok := sim.Guest(120); ok {
		t.Error("the refused VM exists")
	}
}

// A token without a privilege the manifest needs: plan names it with its
// path and exits 2; apply fails the resource without calling Proxmox.
func TestPlanNamesAMissingPrivilege(t *testing.T) {
	sim, repo := cliEnvWith(t, []string{"VM.Audit", "Datastore.Audit", "Sys.Audit", "SDN.Audit"})
	planAndApplyRefuse(t, sim, repo, "the API token lacks VM.Allocate on /vms/120, needed to create the VM")
}

// planAndApplyRefuse runs plan, which must show app-01's create refused
// for want and exit 2, then apply, which must fail for want (exit 1)
// without sending the create; it returns apply's standard output.
func planAndApplyRefuse(t *testing.T, sim *pvesim.Server, repo, want string) string {
	t.Helper()
	common := cliArgs(sim, repo)
	code, out, errOut := runCLI(t, append([]string{"plan", "--output", "text", "--detailed-exitcode"}, common...)...)
	if code != 2 || !strings.Contains(out, "x VirtualMachine/app-01") || !strings.Contains(out, want) {
		t.Fatalf("plan exit %d:\n%s%s", code, out, errOut)
	}
	sim.ResetRequests()
	code, out, errOut = runCLI(t, append([]string{"apply", "--output", "text"}, common...)...)
	if code != 1 || !strings.Contains(out+errOut, want) {
		t.Fatalf("apply exit %d:\n%s%s", code, out, errOut)
	}
	if n := sim.RequestCountFor("POST", "/nodes/{node}/qemu"); n != 0 {
		t.Errorf("the refused create was sent %d time(s)", n)
	}
	return out
}
