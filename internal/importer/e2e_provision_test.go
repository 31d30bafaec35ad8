package importer_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/importer"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/provision"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/render"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// cincStandIn stands for cinc-client in the simulated guests, which have no
// Cinc: it records how it was run and the cookbooks it would have found.
const cincStandIn = `#!/bin/sh
{
  echo "cwd=$(pwd)"
  echo "args=$*"
  echo "env=IP:$IP ID:$ID LIBS_BROKER_ENDPOINT:$LIBS_BROKER_ENDPOINT"
  (cd /var/lib/proxmops/cookbooks && find . -type f | sort)
} >> /root/cinc-runs.log
`

// provisioned is an import of the seed's layout on loopback addresses,
// applied by an engine that provisions over SSH to simulated guests.
type provisioned struct {
	t      *testing.T
	noCinc bool // leave the stand-in out
	dir    string
	trees  string
	port   int
	client *pve.Client
	eng    *engine.Engine
}

func newProvisioned(t *testing.T) *provisioned {
	t.Helper()
	p := &provisioned{t: t, trees: filepath.Join(t.TempDir(), "guests")}
	p.dir = fixture(t, map[string]string{
		"libs/apache/container.local.env": "IP=127.0.43.42\n",
		"libs/broker/config.local.env":    "IP=127.0.43.109\n",
		"env.local.json":                  `{"PROXMOX_GATEWAY": "127.0.43.1"}`,
	})
	p.port = simtest.GuestSSHPort(t, "127.0.43.42")
	const id, secret = "root@pam!proxmops", "import-e2e"
	sim := simtest.Start(t, pvesim.Options{Nodes: 1, TokenID: id, TokenSecret: secret, TaskSpeed: 0.01, Seed: 5,
		GuestSSHPort: p.port, GuestRoot: p.trees})
	client, err := pve.New(pve.Config{Endpoint: sim.APIURL(), TokenID: id, TokenSecret: secret,
		RetryBackoff: 5 * time.Millisecond, TaskPollMin: 5 * time.Millisecond, TaskPollMax: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	p.client = client
	runner := &provision.Runner{Keys: provision.NewKeys(&provision.MemStore{}, ""), ConnectWait: 20 * time.Second}
	p.eng = engine.New(p.client, engine.Options{Provisioner: runner})
	return p
}

// desired imports the monorepo again and loads the output as the daemon
// would; the simulated guests serve SSH on p.port and get the Cinc
// stand-in as one more provisioning file.
func (p *provisioned) desired() *engine.Desired {
	p.t.Helper()
	_, out := importFixture(p.t, p.dir, importer.Options{VMIDOffset: 100})
	set, err := manifest.LoadDir(out)
	if err != nil {
		p.t.Fatal(err)
	}
	for _, r := range set.Resources {
		if ct, ok := r.(*manifest.Container); ok {
			pr := ct.Spec.Provision
			pr.Port = p.port
			if p.noCinc {
				continue
			}
			pr.Files = append(pr.Files, manifest.ProvisionFile{Path: "/usr/local/bin/cinc-client", Content: cincStandIn, Mode: "0755", Data: []byte(cincStandIn)})
		}
	}
	return engine.DesiredFromSet(set, nil)
}

func (p *provisioned) plan() *engine.Plan {
	p.t.Helper()
	plan, err := p.eng.Plan(context.Background(), p.desired(), "import")
	if err != nil {
		p.t.Fatal(err)
	}
	return plan
}

func (p *provisioned) apply() *engine.Report {
	p.t.Helper()
	rep, err := p.eng.Apply(context.Background(), p.plan(), nil)
	if err != nil {
		p.t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Status != vocab.StatusSynced {
			p.t.Fatalf("%s/%s: %s %s: %s", r.Kind, r.Name, r.Action, r.Status, r.Error)
		}
	}
	return rep
}

func (p *provisioned) guestFile(vmid int, path string) string {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join(p.trees, strconv.Itoa(vmid), path))
	if err != nil {
		p.t.Fatalf("guest %d: %v", vmid, err)
	}
	return string(b)
}

// The imported containers are provisioned over SSH as their libs' pipeline
// configured them: base packages and users, the lib's cookbook and the
// monorepo's libraries copied in, then cinc-client run in local mode on the
// lib's cookbook with IP, ID and the global variables. Afterwards they are
// in sync; a recipe changed in the monorepo and imported again provisions
// again.
func TestImportedSeedLayoutProvisions(t *testing.T) {
	p := newProvisioned(t)
	p.apply()

	runs := p.guestFile(142, "root/cinc-runs.log")
	for _, want := range []string{
		"cwd=/var/lib/proxmops/cookbooks/apache\n",
		"args=-z --config-option cookbook_path=/var/lib/proxmops/cookbooks -o apache\n",
		"env=IP:127.0.43.42 ID:142 LIBS_BROKER_ENDPOINT:mqtt://192.168.178.109:1883\n",
		"./apache/libraries/common.rb\n./apache/libraries/default.rb\n./apache/libraries/env.rb\n./apache/recipes/default.rb\n",
	} {
		if !strings.Contains(runs, want) {
			t.Errorf("the cookbook run lacks %q:\n%s", want, runs)
		}
	}
	recipe, _ := os.ReadFile(filepath.Join(p.dir, "libs", "apache", "recipes", "default.rb"))
	if got := p.guestFile(142, "var/lib/proxmops/cookbooks/apache/recipes/default.rb"); got != string(recipe) {
		t.Errorf("the guest's recipe differs from the lib's:\n%s", got)
	}
	if got := p.guestFile(142, "var/lib/pvesim/installed-packages"); got != "sudo\nlocales\ncurl\njq\nunzip\nvim\n" {
		t.Errorf("installed packages %q", got)
	}
	if passwd, group := p.guestFile(142, "etc/passwd"), p.guestFile(142, "etc/group"); !strings.Contains(passwd, "\napp:") || !strings.Contains(group, "\nconfig:") {
		t.Errorf("the base role's app user and config group are missing:\n%s\n%s", passwd, group)
	}
	if runs := p.guestFile(209, "root/cinc-runs.log"); !strings.Contains(runs, "-o broker\n") || !strings.Contains(runs, "ID:209 ") {
		t.Errorf("broker's run:\n%s", runs)
	}

	if plan := p.plan(); plan.HasChanges() {
		var b strings.Builder
		render.Plan(&b, plan, false)
		t.Fatalf("not in sync after provisioning:\n%s", b.String())
	}

	// A recipe changed in the monorepo, imported again: apache alone runs again.
	if err := os.WriteFile(filepath.Join(p.dir, "libs", "apache", "recipes", "default.rb"), []byte("package 'apache2'\npackage 'curl'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := p.plan()
	if a := plan.Find(engine.KindContainer, "apache"); a.Action != vocab.ActionUpdate || !strings.Contains(a.Reason, "provision: inputs changed") {
		t.Fatalf("apache after a recipe change: %s %s", a.Action, a.Reason)
	}
	if a := plan.Find(engine.KindContainer, "broker"); a.Action != vocab.ActionNone {
		t.Errorf("broker after apache's recipe change: %s %s", a.Action, a.Reason)
	}
	p.apply()
	if got := p.guestFile(142, "var/lib/proxmops/cookbooks/apache/recipes/default.rb"); !strings.Contains(got, "package 'curl'") {
		t.Errorf("recipe after re-provisioning: %q", got)
	}
	if n := strings.Count(p.guestFile(142, "root/cinc-runs.log"), "args="); n != 2 {
		t.Errorf("apache's cookbook ran %d times, want 2", n)
	}
	if n := strings.Count(p.guestFile(209, "root/cinc-runs.log"), "args="); n != 1 {
		t.Errorf("broker's cookbook ran %d times, want 1", n)
	}
	if _, err := os.Stat("/var/lib/proxmops/cookbooks"); !os.IsNotExist(err) {
		t.Errorf("the host has /var/lib/proxmops/cookbooks: %v", err)
	}
}

// Without Cinc in the guest, provisioning stops at the check before the
// cookbook run, with exit status 127 and a message saying what to do.
func TestImportedContainerWithoutCincFailsClearly(t *testing.T) {
	p := newProvisioned(t)
	p.noCinc = true
	rep, err := p.eng.Apply(context.Background(), p.plan(), nil)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, r := range rep.Results {
		if r.Kind != engine.KindContainer {
			continue
		}
		failed++
		if r.Status != vocab.StatusFailed || !strings.Contains(r.Error, "command 3/4") || !strings.Contains(r.Error, "exit status 127") ||
			!strings.Contains(r.Error, "cinc-client is not installed in this guest") {
			t.Errorf("%s: %s %s", r.Name, r.Status, r.Error)
		}
	}
	if failed != 2 {
		t.Errorf("%d container results, want 2", failed)
	}
	if _, err := os.Stat(filepath.Join(p.trees, "142", "root", "cinc-runs.log")); !os.IsNotExist(err) {
		t.Errorf("something ran the cookbook: %v", err)
	}
}
