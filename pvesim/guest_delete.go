package pvesim

// Destroying guests (DELETE /nodes/{node}/qemu/{vmid} and .../lxc/{vmid}).

import (
	"slices"
	"strconv"

	"github.com/proxmops/proxmops/pvesim/route"
)

func (s *Server) qemuDestroy(r *route.Request, g *Guest) (any, error) {
	skiplock := r.Bool("skiplock")
	purgeUnref := r.Bool("destroy-unreferenced-disks")
	purge := r.Bool("purge")
	early := func() error {
		if g.Conf["protection"] == "1" {
			return route.Fail("can't remove VM %d - protection mode enabled", g.VMID)
		}
		if !purge && s.haConfigured(haSID(g)) {
			return route.Fail("unable to remove VM %d - used in HA resources and purge parameter not set.", g.VMID)
		}
		if g.Running {
			return route.Fail("VM %d is running - destroy failed", g.VMID)
		}
		return nil
	}
	if err := early(); err != nil {
		return nil, err
	}
	return s.startTask(r, g.Node, "qmdestroy", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.lockConfig(g); err != nil {
			return err
		}
		if err := early(); err != nil {
			return err
		}
		if !skiplock {
			if err := checkLock(g); err != nil {
				return err
			}
		}
		vols, err := s.destroyVolumes(g, guestVolumes)
		if err != nil {
			return err
		}
		if err := tc.Sleep(durDestroy); err != nil {
			return err
		}
		for _, volid := range vols {
			s.state.removeVolume(g.Node, volid)
			tc.Log("Removed volume '%s'", volid)
		}
		s.forgetGuest(tc, g, purge, purgeUnref, "images")
		return nil
	}), nil
}

// destroyVolumes lists the volumes a destroy frees, the config's and its
// snapshots' (volumesOf reads them from a config), and refuses as
// vdisk_free (pve-storage) does while a base volume has linked clones.
func (s *Server) destroyVolumes(g *Guest, volumesOf func(map[string]string) []string) ([]string, error) {
	vols := volumesOf(g.Conf)
	for _, sn := range g.Snapshots {
		vols = append(vols, volumesOf(sn.Conf)...)
	}
	for _, volid := range vols {
		if s.linkedChildren(volid) > 0 {
			return nil, route.Fail("base volume '%s' is still in use by linked cloned", volid)
		}
	}
	return vols, nil
}

// forgetGuest is the end both destroy_vm subs share once the configured
// volumes are gone: the guest's unreferenced volumes of the given contents
// when asked (destroy-unreferenced-disks), the purge of its references,
// its config, its pool membership (remove_vm_access) and its firewall file
// (remove_vmfw_conf).
func (s *Server) forgetGuest(tc *taskCtx, g *Guest, purge, purgeUnref bool, contents ...string) {
	if purgeUnref {
		for _, v := range append([]*Volume(nil), s.state.Volumes...) {
			if v.VMID == g.VMID && slices.Contains(contents, v.Content) && (v.Node == "" || v.Node == g.Node) {
				s.state.removeVolume(g.Node, v.VolID())
			}
		}
	}
	s.purgeGuest(tc, g, purge)
	delete(s.state.Guests, g.VMID)
	s.state.removeVMAccess(g.VMID)
	delete(s.state.Firewall, g.VMID)
	delete(s.state.FirewallFiles, fwGuestFile(g.VMID))
}

func (s *Server) lxcDestroy(r *route.Request, g *Guest) (any, error) {
	force, purgeUnref, purge := r.Bool("force"), r.Bool("destroy-unreferenced-disks"), r.Bool("purge")
	early := func() error {
		if g.Conf["protection"] == "1" {
			return route.Fail("can't remove CT %d - protection mode enabled", g.VMID)
		}
		if err := checkLock(g); err != nil {
			return err
		}
		if !purge && s.haConfigured(haSID(g)) {
			return route.Fail("unable to remove CT %d - used in HA resources and purge parameter not set.", g.VMID)
		}
		if g.Running && !force {
			return route.Fail("unable to destroy CT %d - container is running", g.VMID)
		}
		return nil
	}
	if err := early(); err != nil {
		return nil, err
	}
	return s.startTask(r, g.Node, "vzdestroy", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.lockConfig(g); err != nil {
			return err
		}
		if err := early(); err != nil {
			return err
		}
		vols, err := s.destroyVolumes(g, lxcVolumes)
		if err != nil {
			return err
		}
		if g.Running {
			tc.Log("forced to stop CT %d before destroying!", g.VMID)
			if sid := haSID(g); s.haConfigured(sid) {
				// ha-manager crm-command stop ct:ID 120; the destroy goes on.
				s.ha().Commands = append(s.ha().Commands, "stop "+sid+" 120")
			}
			g.Running = false
		}
		if err := tc.Sleep(durCTDestroy); err != nil {
			return err
		}
		for _, volid := range vols {
			if v := s.state.volume(g.Node, volid); v != nil && v.VMID == g.VMID {
				s.state.removeVolume(g.Node, volid)
				tc.Log("Removed volume '%s'", volid)
			}
		}
		s.forgetGuest(tc, g, purge, purgeUnref, "images", "rootdir")
		return nil
	}), nil
}
