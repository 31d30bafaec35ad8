package pvesim

// Guest configuration: GET .../config and .../pending, and the config
// updates (POST/PUT .../config) with hot-plug and pending changes, for VMs
// then containers.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

func (s *Server) qemuGetConfig(r *route.Request, g *Guest) (any, error) {
	cg, current, err := configShown(g, r)
	if err != nil {
		return nil, err
	}
	return qemuConfigJSON(cg, current), nil
}

// qemuUpdate is update_vm_api: PUT (sync) and POST (task) .../config. Its
// steps, in the Perl's order: the parameters (keys, aliases, revert and
// delete lists, drives, MAC addresses), the caller's rights, the early
// config checks, then updatefn under the guest's lock.
func (s *Server) qemuUpdate(r *route.Request, g *Guest, sync bool) (any, error) {
	params := qemuUpdateValues(r)
	if err := checkSSHKeysParam(params); err != nil {
		return nil, err
	}
	if !r.Has("delete") && !r.Has("revert") && len(params) == 0 {
		return nil, route.Fail("no options specified")
	}
	resolveCdromAlias(params)
	revert, deletes, err := qemuRevertAndDelete(r, params)
	if err != nil {
		return nil, err
	}
	plans, err := s.checkDriveParams(g.Node, params, "")
	if err != nil {
		return nil, err
	}
	s.completeUpdateValues(params)
	if err := s.qemuUpdateAccess(r.User, g.VMID, params, deletes); err != nil {
		return nil, err
	}
	digest := r.Str("digest")
	skiplock := r.Bool("skiplock")
	force := r.Bool("force")
	// load_and_check_config: before forking, and again under the lock.
	early := func() error {
		if digest != "" && digest != g.Digest() {
			return route.Fail("checksum mismatch (file change by other user?)")
		}
		if !skiplock {
			return checkLock(g)
		}
		return nil
	}
	if err := early(); err != nil {
		return nil, err
	}
	update := func(tc *taskCtx) error {
		if err := s.configGone(g, g.Node); err != nil {
			return err
		}
		if err := early(); err != nil {
			return err
		}
		if err := s.qemuUpdateValuePerms(r.User, g, params, deletes); err != nil {
			return err
		}
		return s.qemuApplyUpdate(tc, g, params, plans, deletes, revert, force)
	}
	if sync {
		return nil, s.qemuUpdateLocked(g.VMID, update)
	}
	upid := s.startTask(r, g.Node, "qmconfig", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.LockGuest(g.VMID, "qemu"); err != nil {
			return err
		}
		if err := tc.Sleep(durConfig); err != nil {
			return err
		}
		return update(tc)
	})
	if delay, ok := r.Int("background_delay"); ok && delay > 0 {
		return s.backgroundDelay(upid, g.VMID, time.Duration(delay)*time.Second)
	}
	return upid, nil
}

// qemuUpdateValues is the request's config values: its parameters without
// the ones update_vm_api extracts (the path, digest, delete and revert
// lists and the flags).
func qemuUpdateValues(r *route.Request) map[string]string {
	params := paramsExcept(r, "node", "vmid", "digest", "delete", "revert", "skiplock", "force", "background_delay", "import-working-storage")
	return params
}

// checkSSHKeysParam is the sshkeys check of create_vm and update_vm_api:
// the URI-escaped value must decode to valid public keys.
func checkSSHKeysParam(params map[string]string) error {
	keys, ok := params["sshkeys"]
	if !ok {
		return nil
	}
	dec, err := decodeSSHKeys(keys)
	if err != nil {
		return route.Fail("SSH public key validation error")
	}
	return validateSSHKeys(dec)
}

// resolveCdromAlias is qemu-server API2/Qemu.pm's resolve_cdrom_alias: the
// cdrom parameter is ide2 with media=cdrom.
func resolveCdromAlias(params map[string]string) {
	cd, ok := params["cdrom"]
	if !ok {
		return
	}
	if !strings.Contains(cd, "media=") {
		cd += ",media=cdrom"
	}
	params["ide2"] = cd
	delete(params, "cdrom")
}

// qemuRevertAndDelete checks update_vm_api's revert list, then its delete
// list (cdrom read as ide2): each option must exist and appear in only one
// of the values, the revert and the delete lists.
func qemuRevertAndDelete(r *route.Request, params map[string]string) (revert map[string]bool, deletes []string, err error) {
	revert = map[string]bool{}
	for _, opt := range splitList(r.Str("revert")) {
		if qemuConfigTypes.Lookup(opt) == nil {
			return nil, nil, route.ParamErr("revert", fmt.Sprintf("unknown option '%s'", opt))
		}
		if _, ok := params[opt]; ok {
			return nil, nil, route.ParamErr("delete", fmt.Sprintf("you can't use '-%s' and -revert %s' at the same time", opt, opt))
		}
		revert[opt] = true
	}
	for _, opt := range splitList(r.Str("delete")) {
		if opt == "cdrom" {
			opt = "ide2"
		}
		if _, ok := params[opt]; ok {
			return nil, nil, route.ParamErr("delete", fmt.Sprintf("you can't use '-%s' and -delete %s' at the same time", opt, opt))
		}
		if revert[opt] {
			return nil, nil, route.ParamErr("revert", fmt.Sprintf("you can't use '-delete %s' and -revert %s' at the same time", opt, opt))
		}
		if qemuConfigTypes.Lookup(opt) == nil {
			return nil, nil, route.ParamErr("delete", fmt.Sprintf("unknown option '%s'", opt))
		}
		deletes = append(deletes, opt)
	}
	return revert, deletes, nil
}

// completeUpdateValues is update_vm_api's pass over the values after the
// drive checks: network devices get their MAC address, vmgenid=1 a new
// UUID.
func (s *Server) completeUpdateValues(params map[string]string) {
	for k, v := range params {
		if _, ok := route.IndexOf(k, "net"); ok {
			params[k] = s.normaliseNet(v)
		} else if k == "vmgenid" && v == "1" {
			params[k] = s.randomUUID()
		}
	}
}

// qemuUpdateAccess is update_vm_api's rights check before the config is
// read: modify rights for the deleted options, then for the set ones,
// then storage and bridge access.
func (s *Server) qemuUpdateAccess(user string, vmid int, params map[string]string, deletes []string) error {
	if err := s.qemuModifyConfigPerm(user, vmid, deletes); err != nil {
		return err
	}
	if err := s.qemuModifyConfigPerm(user, vmid, sortedKeys(params)); err != nil {
		return err
	}
	if err := s.qemuStorageAccess(user, vmid, params, ""); err != nil {
		return err
	}
	return s.qemuBridgeAccess(user, params)
}

// qemuUpdateLocked runs a synchronous update (PUT) under the guest's
// config lock, as lock_config does outside a task.
func (s *Server) qemuUpdateLocked(vmid int, update func(*taskCtx) error) error {
	if err := s.acquireGuestLock(vmid, "qemu"); err != nil {
		return err
	}
	defer s.releaseGuestLock(vmid)
	return update(&taskCtx{s: s, t: &Task{}})
}

// backgroundDelay is update_vm_api's background_delay: wait up to delay
// (scaled as task durations are) for the task; when it ended, answer null
// if it succeeded, else fail with its status; when it still runs, answer
// its UPID (qemu-server API2/Qemu.pm update_vm_api). Called with s.mu
// held, which it lets go while it waits.
func (s *Server) backgroundDelay(upid string, vmid int, delay time.Duration) (any, error) {
	t := s.tasks.byUPID[upid]
	if t == nil {
		return upid, nil
	}
	if t.Running {
		s.mu.Unlock()
		select {
		case <-t.done:
		case <-s.clock.After(s.scale(delay)):
		case <-s.closed:
		}
		s.relock()
	}
	if t.Running {
		return upid, nil
	}
	if t.ExitStatus != "OK" && !strings.HasPrefix(t.ExitStatus, "WARNINGS") {
		return nil, route.Fail("failed to update VM %d: %s", vmid, t.ExitStatus)
	}
	return nil, nil
}

// qemuApplyUpdate is the body of update_vm_api's updatefn: write the
// changes to the pending section (reverts, then deletions, then values),
// drop pending values equal to the current ones, then apply what the
// guest's state allows (vmconfig_hotplug_pending when it runs, else
// vmconfig_apply_pending).
func (s *Server) qemuApplyUpdate(tc *taskCtx, g *Guest, params map[string]string, plans []drivePlan, deletes []string, revert map[string]bool, force bool) error {
	for opt := range revert {
		if v, ok := g.Conf[opt]; ok {
			params[opt] = v
		} else if _, ok := g.Pending[opt]; ok {
			deletes = append(deletes, opt)
		}
	}
	// update_vm_api reads the boot order once, from the current config:
	// a deleted device leaves it, a new CD-ROM joins its end.
	bootorder := bootOrderList(g.Conf["boot"])
	bootorder, err := s.qemuPendingDeletes(tc, g, deletes, bootorder, force)
	if err != nil {
		return err
	}
	planByKey := map[string]drivePlan{}
	for _, p := range plans {
		if !revert[p.key] {
			planByKey[p.key] = p
		}
	}
	if err := s.qemuPendingValues(tc, g, params, planByKey, deletes, bootorder); err != nil {
		return err
	}
	cleanupPending(g)
	if len(g.Pending) == 0 && len(g.PendingDelete) == 0 {
		return nil
	}
	if g.Running {
		s.hotplugPending(g)
	} else {
		s.applyPending(g)
	}
	return nil
}

// qemuPendingDeletes is updatefn's loop over the deleted options: each
// leaves the pending values and the boot order; an unused disk is freed at
// once, tags go at once, anything else set in the config is marked for
// deletion (a drive only pending is kept as unused). It returns the boot
// order left.
func (s *Server) qemuPendingDeletes(tc *taskCtx, g *Guest, deletes, bootorder []string, force bool) ([]string, error) {
	for _, opt := range deletes {
		val, ok := g.Conf[opt]
		if !ok {
			val, ok = g.Pending[opt]
		}
		if !ok {
			tc.Log("cannot delete '%s' - not set in current configuration!", opt)
			continue
		}
		_, isPending := g.Pending[opt]
		delete(g.Pending, opt)
		if i := slices.Index(bootorder, opt); i >= 0 {
			bootorder = slices.Delete(bootorder, i, i+1)
			if b := printBootOrder(bootorder); b != "" {
				g.Pending["boot"] = b
			}
		}
		switch {
		case strings.HasPrefix(opt, "unused"):
			if g.Conf["protection"] == "1" {
				return nil, route.Fail("can't remove unused disk '%s' - protection mode enabled", val)
			}
			s.state.removeVolume(g.Node, val)
			delete(g.Conf, opt)
		case isQemuDiskKey(opt):
			if g.Conf["protection"] == "1" {
				return nil, route.Fail("can't remove drive '%s' - protection mode enabled", opt)
			}
			if isPending {
				if d, err := parseDrive(opt, val); err == nil {
					s.registerUnusedDrive(g, d)
				}
			}
			if _, inConf := g.Conf[opt]; inConf {
				g.PendingDelete[opt] = force
			}
		case opt == "tags":
			delete(g.Conf, opt)
		default:
			if _, inConf := g.Conf[opt]; inConf {
				g.PendingDelete[opt] = force
			}
		}
	}
	return bootorder, nil
}

// qemuPendingValues is updatefn's loop over the set options, in name
// order: a value already pending is skipped; a new CD-ROM joins the boot
// order; drives are created, tags made unique, the cloud-init password
// hashed into the config, a boot order checked; each value written is no
// longer marked for deletion.
func (s *Server) qemuPendingValues(tc *taskCtx, g *Guest, params map[string]string, planByKey map[string]drivePlan, deletes, bootorder []string) error {
	for _, opt := range sortedKeys(params) {
		v := params[opt]
		if pv, ok := g.Pending[opt]; ok && pv == v {
			continue
		}
		if isQemuDiskKey(opt) && len(bootorder) > 0 && !slices.Contains(bootorder, opt) {
			if d, err := parseDrive(opt, v); err == nil && driveIsCdrom(d) && !driveIsCloudinit(d) {
				bootorder = append(bootorder, opt)
				g.Pending["boot"] = printBootOrder(bootorder)
			}
		}
		switch {
		case isQemuDiskKey(opt):
			p, ok := planByKey[opt]
			if err := s.qemuPendingDrive(tc, g, opt, v, p, ok); err != nil {
				return err
			}
		case opt == "tags":
			g.Pending[opt] = s.uniqueTags(v)
		case opt == "cipassword":
			g.Conf[opt] = s.hashPassword(v)
		case opt == "boot":
			if err := qemuPendingBoot(g, v, params, deletes); err != nil {
				return err
			}
		default:
			g.Pending[opt] = v
		}
		delete(g.PendingDelete, opt)
	}
	return nil
}

// qemuPendingDrive writes drive opt=v to the pending section: a drive
// pending there before is kept as unused; a value equal to the current
// one is pending as it is, else create_disks allocates (or imports) its
// volume from plan (planned false: parsed from v).
func (s *Server) qemuPendingDrive(tc *taskCtx, g *Guest, opt, v string, plan drivePlan, planned bool) error {
	if pv, ok := g.Pending[opt]; ok {
		if d, err := parseDrive(opt, pv); err == nil {
			s.registerUnusedDrive(g, d)
		}
	}
	if !planned {
		d, err := parseDrive(opt, v)
		if err != nil {
			return route.ParamErr(opt, "unable to parse drive options")
		}
		plan = drivePlan{key: opt, drive: d}
	}
	if cur, ok := g.Conf[opt]; ok && cur == v {
		g.Pending[opt] = v
		return nil
	}
	created, copied, err := s.createDisks(tc, g, []drivePlan{plan}, "", g.IsTemplate())
	if err != nil {
		return err
	}
	if copied > 0 {
		if err := tc.Sleep(time.Duration(float64(copied) / importRate * float64(time.Second))); err != nil {
			return err
		}
	}
	g.Pending[opt] = created[opt]
	return nil
}

// qemuPendingBoot writes a new boot order to the pending section. As in
// update_vm_api, every device of the order must exist (config, pending or
// this request) and not be deleted by it; the order is stored as
// print_bootorder writes it, and replaces the legacy bootdisk.
func qemuPendingBoot(g *Guest, v string, params map[string]string, deletes []string) error {
	g.Pending["boot"] = v
	devs := bootOrderList(v)
	if len(devs) == 0 {
		return nil
	}
	for _, dev := range devs {
		_, inConf := g.Conf[dev]
		_, inPending := g.Pending[dev]
		_, inParams := params[dev]
		if (!inConf && !inPending && !inParams) || slices.Contains(deletes, dev) {
			return route.Fail("invalid bootorder: device '%s' does not exist'", dev)
		}
	}
	g.Pending["boot"] = printBootOrder(devs)
	if _, ok := g.Conf["bootdisk"]; ok {
		g.PendingDelete["bootdisk"] = false
	}
	return nil
}

// lxcConfigJSON is GET .../config: pending values merged unless current.
func lxcConfigJSON(g *Guest, current bool) map[string]any {
	conf := mergedConf(g, current)
	out := make(map[string]any, len(conf)+1)
	for k, v := range conf {
		out[k] = typedValue(lxcKeyType(k), v)
	}
	out["digest"] = g.Digest()
	return out
}

// pendingJSON is PVE::GuestHelpers::config_with_pending_array; internal
// keys are listed only while a value of theirs is pending.
func pendingJSON(g *Guest, keyType func(string) route.Type, mask func(key, val string, pending bool) string, internal []string) []map[string]any {
	keys := map[string]bool{}
	for _, m := range []map[string]string{g.Conf, g.Pending} {
		for k := range m {
			keys[k] = true
		}
	}
	for k := range g.PendingDelete {
		keys[k] = true
	}
	if mask == nil {
		mask = func(_, v string, _ bool) string { return v }
	}
	out := []map[string]any{}
	for _, k := range sortedKeys(keys) {
		if slices.Contains(internal, k) {
			if _, ok := g.Pending[k]; !ok {
				continue
			}
		}
		e := map[string]any{"key": k}
		if v, ok := g.Conf[k]; ok {
			e["value"] = typedValue(keyType(k), mask(k, v, false))
		}
		if v, ok := g.Pending[k]; ok {
			e["pending"] = typedValue(keyType(k), mask(k, v, true))
		}
		if force, ok := g.PendingDelete[k]; ok {
			if force {
				e["delete"] = 2
			} else {
				e["delete"] = 1
			}
		}
		out = append(out, e)
	}
	return out
}

func (s *Server) lxcGetConfig(r *route.Request) (any, error) {
	if r.Str("snapshot") != "" && r.Bool("current") {
		msg := "cannot use 'snapshot' parameter with 'current'"
		return nil, route.ParamError(map[string]string{"snapshot": msg, "current": msg})
	}
	g, err := s.lxcGuest(r)
	if err != nil {
		return nil, err
	}
	cg, current, err := configShown(g, r)
	if err != nil {
		return nil, err
	}
	return lxcConfigJSON(cg, current), nil
}

// lxcUpdate is PUT .../config (update_vm): synchronous, under the lock.
func (s *Server) lxcUpdate(r *route.Request, g *Guest) (any, error) {
	params := paramsExcept(r, "node", "vmid", "digest", "delete", "revert")
	if len(params) == 0 && !r.Has("delete") && !r.Has("revert") {
		return nil, route.Fail("no options specified")
	}
	deletes := splitList(r.Str("delete"))
	reverts := splitList(r.Str("revert"))
	digest := r.Str("digest")
	return s.withGuestLock(g.VMID, "lxc", func() (any, error) {
		if err := checkLock(g); err != nil {
			return nil, err
		}
		if digest != "" && digest != g.Digest() {
			return nil, route.Fail("detected modified configuration - file changed by other user? Try again.")
		}
		unpriv := g.Conf["unprivileged"] == "1"
		if err := s.checkCTModifyPerm(r.User, g.VMID, g.Conf, nil, append(append([]string(nil), deletes...), reverts...), unpriv); err != nil {
			return nil, err
		}
		for _, opt := range reverts {
			if lxcConfigTypes.Lookup(opt) == nil {
				return nil, route.ParamErr("revert", fmt.Sprintf("unknown option '%s'", opt))
			}
			if _, ok := params[opt]; ok {
				return nil, route.ParamErr("revert", fmt.Sprintf("you can't use '-%s' and '-revert %s' at the same time", opt, opt))
			}
		}
		for _, opt := range deletes {
			if lxcConfigTypes.Lookup(opt) == nil {
				return nil, route.ParamErr("delete", fmt.Sprintf("unknown option '%s'", opt))
			}
			if _, ok := params[opt]; ok {
				return nil, route.ParamErr("delete", fmt.Sprintf("you can't use '-%s' and -delete %s' at the same time", opt, opt))
			}
			for _, rv := range reverts {
				if rv == opt {
					return nil, route.ParamErr("delete", fmt.Sprintf("you can't use '-delete %s' and '-revert %s' at the same time", opt, opt))
				}
			}
		}
		if err := s.checkCTModifyPerm(r.User, g.VMID, g.Conf, params, nil, unpriv); err != nil {
			return nil, err
		}
		errs, err := s.lxcUpdateConfig(g, params, deletes, reverts)
		if err != nil {
			return nil, err
		}
		if len(errs) > 0 {
			return nil, route.ParamError(errs)
		}
		return nil, nil
	})
}

// lxcUpdateConfig is update_pct_config: record the changes as pending,
// then hot-plug them (running) or apply them (stopped).
func (s *Server) lxcUpdateConfig(g *Guest, params map[string]string, deletes, reverts []string) (map[string]string, error) {
	for _, opt := range reverts {
		delete(g.Pending, opt)
		delete(g.PendingDelete, opt)
	}
	modified := map[string]bool{}
	for _, opt := range deletes {
		_, cur := g.Conf[opt]
		_, pend := g.Pending[opt]
		if !cur && !pend {
			continue // Proxmox warns: cannot delete '...' - not set in current configuration!
		}
		modified[opt] = true
		switch {
		case opt == "memory" || opt == "rootfs" || opt == "ostype":
			return nil, route.Fail("unable to delete required option '%s'", opt)
		case strings.HasPrefix(opt, "unused") || isLxcVolumeKey(opt):
			if g.Conf["protection"] == "1" {
				return nil, route.Fail("can't remove CT %d drive '%s' - protection mode enabled", g.VMID, opt)
			}
		case opt == "unprivileged":
			return nil, route.Fail("unable to delete read-only option: '%s'", opt)
		}
		g.PendingDelete[opt] = false
	}
	prepared, err := s.lxcPrepareOptions(g, params)
	if err != nil {
		return nil, err
	}
	for opt, v := range prepared {
		modified[opt] = true
		g.Pending[opt] = v
		delete(g.PendingDelete, opt)
	}
	cleanupPending(g)
	errs := map[string]string{}
	if g.Running {
		s.lxcHotplugPending(g, modified, errs)
	} else {
		s.lxcApplyPending(g, modified, errs)
	}
	return errs, nil
}

// lxcFastplug are the options a running container takes at once.
var lxcFastplug = map[string]bool{
	"description": true, "onboot": true, "startup": true, "protection": true, "hostname": true,
	"hookscript": true, "cores": true, "tags": true, "lock": true,
}

// lxcHotplugPending is vmconfig_hotplug_pending: what cgroups and veth
// devices allow is changed live, the rest stays pending until restart.
func (s *Server) lxcHotplugPending(g *Guest, selection map[string]bool, errs map[string]string) {
	sel := func(opt string) bool { return selection == nil || selection[opt] }
	for _, opt := range sortedKeys(g.Pending) {
		if sel(opt) && lxcFastplug[opt] {
			g.Conf[opt] = g.Pending[opt]
			delete(g.Pending, opt)
		}
	}
	for _, opt := range sortedKeys(g.PendingDelete) {
		if !sel(opt) {
			continue
		}
		apply := false
		switch {
		case lxcFastplug[opt], opt == "swap", opt == "cpulimit", opt == "cpuunits":
			apply = true
		case strings.HasPrefix(opt, "unused"):
			if !lxcVolumeInUse(g, g.Conf[opt]) {
				s.state.removeVolume(g.Node, g.Conf[opt])
			}
			apply = true
		case strings.HasPrefix(opt, "net"):
			apply = true
		}
		if apply {
			delete(g.Conf, opt)
			delete(g.PendingDelete, opt)
		}
	}
	for _, opt := range sortedKeys(g.Pending) {
		if !sel(opt) {
			continue
		}
		v := g.Pending[opt]
		apply := false
		switch {
		case opt == "cpulimit", opt == "cpuunits", opt == "memory", opt == "swap":
			apply = true
		case strings.HasPrefix(opt, "net"):
			if b := netBridge(v); b != "" && !s.bridgeExists(g.Node, b) {
				errs[opt] = fmt.Sprintf("unable to hotplug %s: bridge '%s' does not exist", opt, b)
				continue
			}
			v = s.normaliseLxcNet(v)
			apply = true
		case isLxcVolumeKey(opt) && opt != "rootfs":
			if _, exists := g.Conf[opt]; exists {
				continue
			}
			nv, err := s.lxcApplyPendingMountPoint(g, opt)
			if err != nil {
				errs[opt] = "unable to hotplug " + opt + ": " + strings.TrimRight(route.AsAPIError(err).Message, "\n")
				continue
			}
			v = nv
			apply = true
		case strings.HasPrefix(opt, "dev"):
			_, exists := g.Conf[opt]
			apply = !exists
		}
		if apply {
			g.Conf[opt] = v
			delete(g.Pending, opt)
		}
	}
}

func netBridge(v string) string {
	n, err := parsePropString(lxcNetFormat, v, "")
	if err != nil {
		return ""
	}
	return n["bridge"]
}

// lxcApplyPending is vmconfig_apply_pending for a stopped container.
func (s *Server) lxcApplyPending(g *Guest, selection map[string]bool, errs map[string]string) {
	sel := func(opt string) bool { return selection == nil || selection[opt] }
	for _, opt := range sortedKeys(g.PendingDelete) {
		if !sel(opt) {
			continue
		}
		switch {
		case isLxcVolumeKey(opt) && opt != "rootfs":
			if mp, err := parseLxcVolume(opt, g.Conf[opt]); err == nil && mountPointType(mp["volume"]) == "volume" {
				old := g.Conf[opt]
				delete(g.Conf, opt)
				if !lxcVolumeInUse(g, mp["volume"]) {
					addUnusedVolume(g.Conf, mp["volume"])
				}
				g.Conf[opt] = old
			}
		case strings.HasPrefix(opt, "unused"):
			volid := g.Conf[opt]
			delete(g.Conf, opt)
			if !lxcVolumeInUse(g, volid) {
				s.state.removeVolume(g.Node, volid)
			}
		}
		delete(g.Conf, opt)
		delete(g.PendingDelete, opt)
	}
	cleanupPending(g)
	for _, opt := range sortedKeys(g.Pending) {
		if !sel(opt) {
			continue
		}
		v := g.Pending[opt]
		switch {
		case isLxcVolumeKey(opt) && opt != "rootfs":
			nv, err := s.lxcApplyPendingMountPoint(g, opt)
			if err != nil {
				errs[opt] = "unable to apply pending change " + opt + " : " + strings.TrimRight(route.AsAPIError(err).Message, "\n")
				continue
			}
			v = nv
		case strings.HasPrefix(opt, "net"):
			v = s.normaliseLxcNet(v)
		}
		g.Conf[opt] = v
		delete(g.Pending, opt)
	}
}

// lxcApplyPendingMountPoint is apply_pending_mountpoint: allocate a new
// volume for "storage:size", record the size of an existing one, and turn
// a replaced volume into an unused one. It returns the value to store.
func (s *Server) lxcApplyPendingMountPoint(g *Guest, opt string) (string, error) {
	mp, err := parseLxcVolume(opt, g.Pending[opt])
	if err != nil {
		return "", err
	}
	if mountPointType(mp["volume"]) == "volume" {
		if m := reLxcNewDisk.FindStringSubmatch(mp["volume"]); m != nil {
			gb, _ := strconv.ParseFloat(m[2], 64)
			size := int64(gb*1024) * 1024 * 1024
			v, err := s.lxcAllocDisk(g.Node, m[1], g.VMID, size)
			if err != nil {
				return "", err
			}
			mp["volume"] = v.VolID()
			mp["size"] = FormatSize(size)
		} else if v := s.state.volume(g.Node, mp["volume"]); v != nil {
			mp["size"] = FormatSize(v.Size)
		}
	}
	if old, ok := g.Conf[opt]; ok {
		if om, err := parseLxcVolume(opt, old); err == nil && mountPointType(om["volume"]) == "volume" && om["volume"] != mp["volume"] {
			addUnusedVolume(g.Conf, om["volume"])
		}
	}
	return printLxcVolume(opt, mp), nil
}

// mergedConf is the config GET .../config reads back, for QEMU and LXC
// alike: a copy of the current config with the pending values and deletions
// applied, unless current.
func mergedConf(g *Guest, current bool) map[string]string {
	conf := copyConf(g.Conf)
	if !current {
		for k, v := range g.Pending {
			conf[k] = v
		}
		for k := range g.PendingDelete {
			delete(conf, k)
		}
	}
	return conf
}

// configShown is the guest whose config GET .../config shows: a snapshot's
// (which has no pending values) when `snapshot` names one, else the guest
// itself, with pending values unless `current` is set.
func configShown(g *Guest, r *route.Request) (*Guest, bool, error) {
	name := r.Str("snapshot")
	if name == "" {
		return g, r.Bool("current"), nil
	}
	sn := g.Snapshots[name]
	if sn == nil {
		return nil, false, route.Fail("snapshot '%s' does not exist", name)
	}
	sg := &Guest{VMID: g.VMID, Node: g.Node, Type: g.Type, Conf: sn.Conf}
	sg.ensureMaps()
	return sg, true, nil
}
