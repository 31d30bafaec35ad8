package engine_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// rootPassword lets a test act as another user (root@pam with a ticket).
const rootPassword = "other-user-pw"

// asRoot sends one API request as root@pam with a login ticket, as a
// person in the Proxmox UI would, and waits for the task it starts.
func asRoot(t *testing.T, e *env, method, path string, form url.Values) string {
	t.Helper()
	resp := rootRequest(t, e, method, path, form)
	defer resp.Body.Close()
	var out struct {
		Data string `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, err)
	}
	if _, err := e.client.WaitTask(context.Background(), out.Data, nil); err != nil {
		t.Fatal(err)
	}
	return out.Data
}

// rootRequest logs in as root@pam with a password and sends one request
// with the ticket; the caller closes the answer's body.
func rootRequest(t *testing.T, e *env, method, path string, form url.Values) *http.Response {
	t.Helper()
	base := e.sim.APIURL()
	resp, err := http.PostForm(base+"/access/ticket", url.Values{"username": {"root@pam"}, "password": {rootPassword}})
	if err != nil {
		t.Fatal(err)
	}
	var login struct {
		Data struct {
			Ticket string `json:"ticket"`
			CSRF   string `json:"CSRFPreventionToken"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&login)
	resp.Body.Close()
	if err != nil || login.Data.Ticket == "" {
		t.Fatalf("login: %v", err)
	}
	req, _ := http.NewRequest(method, base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("CSRFPreventionToken", login.Data.CSRF)
	req.AddCookie(&http.Cookie{Name: "PVEAuthCookie", Value: login.Data.Ticket})
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// externalTemplate puts a template proxmops did not build on the cluster:
// its clones inherit no ownership tag (clone_vm copies the source's tags).
func externalTemplate(t *testing.T, e *env) {
	t.Helper()
	if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 9000, Node: "pve1", Config: map[string]string{
		"name": "debian-12-tpl", "template": "1", "tags": "base", "scsi0": "local-lvm:base-9000-disk-0,size=2G"}}); err != nil {
		t.Fatal(err)
	}
}

// externalTemplateClone starts a cluster with an external template and
// the seed's clone of it declared, not yet applied.
func externalTemplateClone(t *testing.T) (*env, *engine.Engine) {
	t.Helper()
	e := newEnv(t)
	externalTemplate(t, e)
	e.write("vms/app-02.yaml", seedClone)
	return e, e.engine(engine.Options{})
}

// cloneWithoutTag applies a clone whose tagging calls fail (the first
// configuration write, which carries the tag, then the tag written alone):
// the clone is on the cluster, untagged.
func cloneWithoutTag(t *testing.T, e *env, eng *engine.Engine) {
	t.Helper()
	e.sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultError, Method: "POST", Path: "/nodes/pve1/qemu/130/config"})
	e.sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultError, Method: "PUT", Path: "/nodes/pve1/qemu/130/config"})
	_, rep := e.apply(eng)
	var failed []string
	for _, r := range rep.Results {
		if r.Error != "" {
			failed = append(failed, r.Kind+"/"+r.Name+": "+r.Error)
		}
	}
	if len(failed) != 1 || !strings.HasPrefix(failed[0], "VirtualMachine/app-02: ") || !strings.Contains(failed[0], "POST /nodes/pve1/qemu/130/config: 500 injected error") {
		t.Fatalf("want the tagging to fail: %v", failed)
	}
	e.assertOwnerTag(130, false, "clone tagged")
}

// A clone whose first configuration write (tag, settings and new drives in
// one call) fails is still tagged as proxmops' own, by a write of the tag
// alone, and converges on the next pass without a second clone.
func TestCloneWhoseConfigWriteFailsIsStillOwned(t *testing.T) {
	e, eng := externalTemplateClone(t)
	e.sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultError, Method: "POST", Path: "/nodes/pve1/qemu/130/config"})
	if _, rep := e.apply(eng); rep.Failed != 1 {
		t.Fatalf("want the configuration write to fail: %+v", rep.Results)
	}
	e.assertOwnerTag(130, true, "clone not tagged after its configuration write failed")
	e.converge(eng)
	e.assertInSync(eng)
	if n := e.sim.RequestCountFor("POST", "/nodes/{node}/qemu/{vmid}/clone"); n != 1 {
		t.Fatalf("cloned %d times", n)
	}
}

// A clone whose tagging call failed is adopted on the next pass: its
// qmclone task, by proxmops' token, names it in its log.
func TestUntaggedCloneOfOursIsAdopted(t *testing.T) {
	e, eng := externalTemplateClone(t)
	cloneWithoutTag(t, e, eng)
	// A fresh engine too: nothing but the cluster's task history is used.
	p := e.plan(e.engine(engine.Options{}))
	a := p.Find(engine.KindVirtualMachine, "app-02")
	if a.Conflicted() || !a.Owned || a.Action != vocab.ActionUpdate || !strings.Contains(a.Reason, ":qmclone:9000:root@pam!proxmops:") {
		t.Fatalf("untagged clone of ours: %+v", a)
	}
	e.converge(eng)
	e.converge(eng)
	e.assertInSync(eng)
	if g := e.guest(130); !strings.Contains(g.Config["tags"], engine.OwnerTag) || g.Config["cores"] != "2" {
		t.Fatalf("adopted clone: %v", g)
	}
	if n := e.sim.RequestCountFor("POST", "/nodes/{node}/qemu/{vmid}/clone"); n != 1 {
		t.Fatalf("cloned %d times", n)
	}
}

// Only the newest maker of the VMID counts: after proxmops' untagged clone
// is removed, a guest another user creates there, or one put there without
// any task, stays a Conflict.
func TestGuestOfSomeoneElseAtTheVMIDStaysAConflict(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replace func(t *testing.T, e *env)
	}{
		{"created by another user", func(t *testing.T, e *env) {
			asRoot(t, e, "DELETE", "/nodes/pve1/qemu/130", nil)
			asRoot(t, e, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"130"}, "name": {"app-02"}})
		}},
		{"cloned by another user", func(t *testing.T, e *env) {
			asRoot(t, e, "DELETE", "/nodes/pve1/qemu/130", nil)
			asRoot(t, e, "POST", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"130"}, "name": {"app-02"}})
		}},
		{"removed, then put there without a task", func(t *testing.T, e *env) {
			asRoot(t, e, "DELETE", "/nodes/pve1/qemu/130", nil)
			if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 130, Node: "pve1", Config: map[string]string{"name": "app-02"}}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, eng := externalTemplateClone(t)
			cloneWithoutTag(t, e, eng)
			tc.replace(t, e)
			a := e.plan(eng).Find(engine.KindVirtualMachine, "app-02")
			if !a.Conflicted() || a.Owned || a.Action != vocab.ActionNone {
				t.Fatalf("someone else's guest: %+v", a)
			}
			e.assertOwnerTag(130, false, "tagged")
		})
	}
}

// A clone whose answer never came back (as when the daemon stops right
// after sending it) is adopted once its task has finished: it is never
// cloned a second time.
func TestCloneWithLostAnswerIsAdopted(t *testing.T) {
	e, eng := externalTemplateClone(t)
	e.sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultDrop, Method: "POST", Path: "/nodes/pve1/qemu/9000/clone"})
	e.apply(eng)
	testwait.For(t, "the guest unlocked", 5*time.Second, func() bool {
		g, ok := e.sim.Guest(130)
		return ok && g.Config["lock"] == ""
	})
	a := e.plan(e.engine(engine.Options{})).Find(engine.KindVirtualMachine, "app-02")
	if a.Conflicted() || !a.Owned || !strings.Contains(a.Reason, "ownership tag is missing") {
		t.Fatalf("%+v", a)
	}
	e.converge(eng)
	e.converge(eng)
	e.assertInSync(eng)
	if n := e.sim.RequestCountFor("POST", "/nodes/{node}/qemu/{vmid}/clone"); n != 1 {
		t.Fatalf("cloned %d times", n)
	}
}
