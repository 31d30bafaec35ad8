package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/provision"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// ProvisionSpec is a guest's spec.provision as the engine applies it.
type ProvisionSpec struct {
	Inputs *provision.Inputs
	// Host, Port and User are where provisioning connects: spec.provision's,
	// else the first static IP of the guest's NICs, 22 and root (a VM's
	// cloud-init user).
	Host string
	Port int
	User string
}

// provisionTarget is what a Container and a VirtualMachine manifest share.
type provisionTarget interface {
	ProvisionTarget() (addr string, port int, user string, ok bool)
}

// provisionFromManifest builds the ProvisionSpec of a guest, nil without
// spec.provision.
func provisionFromManifest(r provisionTarget, p *manifest.Provision) (*ProvisionSpec, error) {
	if p == nil {
		return nil, nil
	}
	in, err := provision.FromManifest(p)
	if err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	host, port, user, _ := r.ProvisionTarget()
	return &ProvisionSpec{Inputs: in, Host: host, Port: port, User: user}, nil
}

// splitProvisionRecord takes proxmops' record line out of the description
// read from the cluster, so that the description's diff sees only the
// user's text, and keeps the record on the guest.
func (g *Guest) splitProvisionRecord() {
	for _, m := range []map[string]string{g.Current, g.Effective} {
		d, ok := m["description"]
		if !ok {
			continue
		}
		user, rec, has := provision.SplitDescription(d)
		if !has {
			continue
		}
		g.ProvisionRecord, g.Provisioned = rec, true
		if user == "" {
			delete(m, "description")
		} else {
			m["description"] = user
		}
	}
}

// provisionKey is proxmops' public key, to inject into guests that
// declare provision.
func (pc *planContext) provisionKey() (string, error) {
	r := pc.e.opts.Provisioner
	if r == nil {
		return "", errors.New("provisioning is not set up in this engine (no provisioner)")
	}
	return r.Keys.PublicKey(pc.ctx)
}

// withProvisionKey returns the VM's cloud-init settings with proxmops'
// public key added to the declared keys (a copy: the desired state is
// shared between passes). Without provision, or with userData (proxmops
// does not rewrite the user's user-data), it returns ci unchanged.
func (pc *planContext) withProvisionKey(s *VMSpec) (*CloudInitSpec, error) {
	if s.Provision == nil || s.UserData != "" {
		return s.CloudInit, nil
	}
	key, err := pc.provisionKey()
	if err != nil {
		return nil, err
	}
	ci := &CloudInitSpec{}
	if s.CloudInit != nil {
		c := *s.CloudInit
		ci = &c
	}
	ci.SSHKeys = appendKey(ci.SSHKeys, key)
	return ci, nil
}

// appendKey adds key to keys unless a key with the same type and body is
// there already.
func appendKey(keys []string, key string) []string {
	body := strings.Join(strings.Fields(key)[:2], " ")
	for _, k := range keys {
		if f := strings.Fields(k); len(f) >= 2 && f[0]+" "+f[1] == body {
			return keys
		}
	}
	return append(slices.Clone(keys), key)
}

// ctProvisionKey adds proxmops' key to a container's creation parameters
// (ssh-public-keys, one key a line, written to root's authorized_keys).
func (x *execCtx) ctProvisionKey(ctx context.Context, p *pve.Params, s *ContainerSpec) error {
	if s.Provision == nil {
		return nil
	}
	r := x.e.opts.Provisioner
	if r == nil {
		return errors.New("provisioning is not set up in this engine (no provisioner)")
	}
	key, err := r.Keys.PublicKey(ctx)
	if err != nil {
		return err
	}
	p.Set("ssh-public-keys", strings.Join(appendKey(s.SSHKeys, key), "\n"))
	return nil
}

// planProvision adds provisioning to a guest's planned action: after a
// create and start, or when the inputs' hash differs from the one recorded
// in the guest's description. g is nil for a guest to create.
func (pc *planContext) planProvision(a *Action, p *ProvisionSpec, g *Guest, state string, rebootPlanned bool) *Action {
	if p == nil || a.Conflicted() || a.Status == vocab.StatusFailed || a.Status == vocab.StatusProgressing || a.BlockedBy != "" {
		return a
	}
	if pc.e.opts.Provisioner == nil {
		a.refuse("provision: provisioning is not set up in this engine (no provisioner)")
		return a
	}
	now := p.Inputs.Record()
	id := vocab.Key(a.Kind, a.Name)
	if g == nil {
		if a.Action != vocab.ActionCreate || !a.Acts() {
			return a
		}
		a.Changes = append(a.Changes, vocab.Change{Field: "provision", To: short(now.Hash) + " (" + p.Inputs.Summary() + ")"})
		if state != "running" {
			a.Reason = joinReasons([]string{a.Reason, "provision waits until the guest runs (state: stopped)"})
			return a
		}
		create, node, vmid := a.run, a.Node, a.VMID
		a.run = func(ctx context.Context, x *execCtx) error {
			if err := create(ctx, x); err != nil {
				return err
			}
			return x.provision(ctx, id, node, vmid, p, true)
		}
		return a
	}
	if !g.Read {
		return a
	}
	if g.Provisioned && g.ProvisionRecord.Hash == now.Hash {
		keepProvisionRecord(a, g, now)
		return a
	}
	what := "never provisioned (" + p.Inputs.Summary() + ")"
	from := ""
	if g.Provisioned {
		what = "inputs changed (" + p.Inputs.Changes(g.ProvisionRecord) + ")"
		from = short(g.ProvisionRecord.Hash)
	}
	a.Changes = append(a.Changes, vocab.Change{Field: "provision", From: from, To: short(now.Hash) + ": " + what})
	reason := "provision: " + what
	if state != "running" {
		a.Reason = joinReasons([]string{a.Reason, reason + "; applied when the guest runs (state: stopped)"})
		if a.Status == vocab.StatusSynced || a.Status == vocab.StatusUnknown {
			a.Status = vocab.StatusOutOfSync
		}
		return a
	}
	if g.Type == "qemu" && !rebootPlanned && g.Running() {
		if keyMissing(pc, g) {
			a.Reason = joinReasons([]string{a.Reason, reason + "; waits until proxmops' SSH key reaches the VM through cloud-init at its next boot (reboot it, or set applyMode: reboot)"})
			if a.Status == vocab.StatusSynced || a.Status == vocab.StatusUnknown {
				a.Status = vocab.StatusOutOfSync
			}
			return a
		}
	}
	node, vmid := g.Node, g.VMID
	if !a.Acts() {
		a.Action, a.Status = vocab.ActionUpdate, vocab.StatusOutOfSync
		a.claim = claim{nodes: []string{node}}
		if a.Reason == "in sync" {
			a.Reason = ""
		}
		a.Reason = joinReasons([]string{a.Reason, reason})
		a.run = func(ctx context.Context, x *execCtx) error { return x.provision(ctx, id, node, vmid, p, false) }
		return a
	}
	a.Reason = joinReasons([]string{a.Reason, reason})
	// The other changes may rewrite the description: the old record goes
	// back first, so a failed run still shows what was applied before.
	keepProvisionRecord(a, g, g.ProvisionRecord)
	chainStep(a, func(ctx context.Context, x *execCtx) error { return x.provision(ctx, id, node, vmid, p, false) })
	return a
}

// keyMissing says whether a running VM's current (not pending) cloud-init
// keys lack proxmops' key.
func keyMissing(pc *planContext, g *Guest) bool {
	key, err := pc.provisionKey()
	if err != nil {
		return false
	}
	cur := pve.DecodeSSHKeys(g.Current["sshkeys"])
	return len(appendKey(cur, key)) != len(cur)
}

// keepProvisionRecord makes an action that rewrites the description put
// the (current) record back afterwards.
func keepProvisionRecord(a *Action, g *Guest, rec provision.Record) {
	if !a.Acts() || !g.Provisioned || !slices.ContainsFunc(a.Changes, func(c vocab.Change) bool { return c.Field == "description" }) {
		return
	}
	prev, node, vmid, typ := a.run, g.Node, g.VMID, g.Type
	a.run = func(ctx context.Context, x *execCtx) error {
		if err := prev(ctx, x); err != nil {
			return err
		}
		return x.writeProvisionRecord(ctx, typ, node, vmid, rec)
	}
}

func short(hash string) string {
	if h, ok := strings.CutPrefix(hash, "sha256:"); ok && len(h) >= 12 {
		return "sha256:" + h[:12]
	}
	return hash
}

// beforeProvisionRerun runs before provisioning an existing guest again
// (not after a create): the place for a snapshot before the change.
func (x *execCtx) beforeProvisionRerun(ctx context.Context, id, node string, vmid int) error {
	return x.snapshotBeforeChange(ctx, "provisioning re-run")
}

// provision runs the guest's provisioning and records its hash in the
// guest's description. fresh is true right after proxmops created the
// guest: a host key pinned for an earlier guest of the same name is
// forgotten.
func (x *execCtx) provision(ctx context.Context, id, node string, vmid int, p *ProvisionSpec, fresh bool) error {
	r := x.e.opts.Provisioner
	if r == nil {
		return errors.New("provisioning is not set up in this engine (no provisioner)")
	}
	typ := "qemu"
	if strings.HasPrefix(id, KindContainer+"/") {
		typ = "lxc"
	}
	if fresh {
		if err := r.Keys.ResetHostKey(ctx, id); err != nil {
			return fmt.Errorf("provision: forgetting the old host key: %w", err)
		}
	} else if err := x.beforeProvisionRerun(ctx, id, node, vmid); err != nil {
		return err
	}
	t := provision.Target{ID: id, VMID: vmid, Host: p.Host, Port: p.Port, User: p.User}
	x.progress(fmt.Sprintf("provision: %s on %s as %s", p.Inputs.Summary(), t.Host, orStr(t.User, "root")), "", -1)
	out, err := r.Run(ctx, t, p.Inputs, func(msg string) { x.progress("provision: "+msg, "", -1) })
	if err != nil {
		var se *provision.StepError
		if errors.As(err, &se) && se.Step == "connect" && isAuthFailure(err) {
			if key, kerr := r.Keys.PublicKey(ctx); kerr == nil {
				return fmt.Errorf("%w (the guest does not accept proxmops' key %s: proxmops injects it when it creates the guest; add it to the user's authorized_keys by hand for a guest created otherwise)", err, key)
			}
		}
		return err
	}
	if err := x.writeProvisionRecord(ctx, typ, node, vmid, p.Inputs.Record()); err != nil {
		return err
	}
	x.progress("provision: "+out.Summary(), "", -1)
	x.note(out.Summary())
	return nil
}

func isAuthFailure(err error) bool {
	return strings.Contains(err.Error(), "unable to authenticate")
}

// writeProvisionRecord puts rec as the last line of the guest's
// description, keeping the user's text.
func (x *execCtx) writeProvisionRecord(ctx context.Context, typ, node string, vmid int, rec provision.Record) error {
	err := x.rewriteDescription(ctx, typ, node, vmid, "the run", func(desc string) (string, bool) {
		user, old, ok := provision.SplitDescription(desc)
		return provision.JoinDescription(user, rec), !ok || old.Line() != rec.Line()
	})
	if err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	return nil
}

// rewriteDescription reads a guest's description as it is on the cluster
// now, and writes what edit makes of it when edit says it changed: the
// record lines proxmops keeps there (provision, adoption) each replace
// only their own line. what names the record in errors.
func (x *execCtx) rewriteDescription(ctx context.Context, typ, node string, vmid int, what string, edit func(string) (string, bool)) error {
	var cfg pve.ConfigValues
	var err error
	if typ == "lxc" {
		cfg, err = x.e.client.LxcConfig(ctx, node, vmid)
	} else {
		cfg, err = x.e.client.QemuConfig(ctx, node, vmid, false)
	}
	if err != nil {
		return fmt.Errorf("reading the description to record %s: %w", what, err)
	}
	desc, changed := edit(cfg["description"])
	if !changed {
		return nil
	}
	if err := manifest.CheckDescriptionLength(desc); err != nil {
		return fmt.Errorf("recording %s: %w", what, err)
	}
	p := pve.NewParams().Set("description", desc)
	if typ == "lxc" {
		err = x.e.client.LxcSetConfig(ctx, node, vmid, p)
	} else {
		err = x.e.client.QemuSetConfig(ctx, node, vmid, p)
	}
	if err != nil {
		return fmt.Errorf("recording %s in the description: %w", what, err)
	}
	return nil
}
