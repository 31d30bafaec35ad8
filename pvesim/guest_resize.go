package pvesim

// Disk resize (PUT .../resize) for VMs then containers.

import (
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

func (s *Server) qemuResize(r *route.Request, g *Guest) (any, error) {
	disk, sizeStr, digest, skiplock := r.Str("disk"), r.Str("size"), r.Str("digest"), r.Bool("skiplock")
	return s.startTask(r, g.Node, "resize", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.lockConfig(g); err != nil {
			return err
		}
		if digest != "" && digest != g.Digest() {
			return route.Fail("checksum mismatch (file change by other user?)")
		}
		if !skiplock {
			if err := checkLock(g); err != nil {
				return err
			}
		}
		val, ok := g.Conf[disk]
		if !ok {
			return route.Fail("disk '%s' does not exist", disk)
		}
		d, err := parseDrive(disk, val)
		if err != nil || d["file"] == "" {
			return route.Fail("disk '%s' has no associated volume", disk)
		}
		if driveIsCdrom(d) {
			return route.Fail("you can't resize a cdrom")
		}
		// resize_vm: space on the volume's storage.
		if err := s.check(r.User, "/storage/"+storageOfVolume(d["file"]), "Datastore.AllocateSpace"); err != nil {
			return err
		}
		v := s.state.volume(g.Node, d["file"])
		if v == nil {
			return route.Fail("Could not determine current size of volume '%s'", d["file"])
		}
		grow := strings.HasPrefix(sizeStr, "+")
		n, _ := ParseSize(strings.TrimPrefix(sizeStr, "+"))
		newSize := n
		if grow {
			newSize += v.Size
		}
		// qemu-server src/PVE/API2/Qemu.pm resize_vm refuses a shrink in
		// its worker, after the size is read and before anything changes;
		// an unchanged size is a no-op (proxmops never asks for either:
		// an adopted guest's larger disk is noted, never shrunk).
		if newSize < v.Size {
			return route.Fail("shrinking disks is not supported")
		}
		if newSize == v.Size {
			return nil
		}
		if err := tc.Sleep(durResize); err != nil {
			return err
		}
		v.Size = newSize
		d["size"] = FormatSize(newSize)
		g.Conf[disk] = printDrive(disk, d)
		tc.Log("Image resized.")
		return nil
	}), nil
}

func (s *Server) lxcResize(r *route.Request, g *Guest) (any, error) {
	disk, digest := r.Str("disk"), r.Str("digest")
	sizeStr := r.Str("size")
	grow := strings.HasPrefix(sizeStr, "+")
	req, ok := ParseSize(strings.TrimPrefix(sizeStr, "+"))
	if !ok {
		return nil, route.Fail("invalid size string")
	}
	check := func() (*Volume, map[string]string, int64, error) {
		if err := checkLock(g); err != nil {
			return nil, nil, 0, err
		}
		if digest != "" && digest != g.Digest() {
			return nil, nil, 0, route.Fail("detected modified configuration - file changed by other user? Try again.")
		}
		mp, err := parseLxcVolume(disk, g.Conf[disk])
		if err != nil || mountPointType(mp["volume"]) != "volume" {
			return nil, nil, 0, route.Fail("unable to parse volume ID '%s'", mp["volume"])
		}
		if owner := lxcVolumeOwner(mp["volume"]); owner != g.VMID {
			return nil, nil, 0, route.Fail("can't resize mount point owned by another container (%d)", owner)
		}
		// resize_vm: space on the volume's storage.
		if err := s.check(r.User, "/storage/"+storageOfVolume(mp["volume"]), "Datastore.AllocateSpace"); err != nil {
			return nil, nil, 0, err
		}
		v := s.state.volume(g.Node, mp["volume"])
		if v == nil {
			return nil, nil, 0, route.Fail("Could not determine current size of volume '%s'", mp["volume"])
		}
		newSize := req
		if grow {
			newSize += v.Size
		}
		// pve-container src/PVE/API2/LXC.pm resize_vm: checked before the
		// task and again in it.
		if newSize < v.Size {
			return nil, nil, 0, route.Fail("unable to shrink disk size")
		}
		if newSize == v.Size {
			return nil, nil, 0, route.Fail("disk is already at specified size")
		}
		return v, mp, newSize, nil
	}
	if _, _, _, err := check(); err != nil {
		return nil, err
	}
	return s.startTask(r, g.Node, "resize", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.lockConfig(g); err != nil {
			return err
		}
		v, mp, newSize, err := check()
		if err != nil {
			return err
		}
		if err := tc.Sleep(durCTResize); err != nil {
			return err
		}
		v.Size = newSize
		mp["size"] = FormatSize(newSize)
		g.Conf[disk] = printLxcVolume(disk, mp)
		tc.Log("Resizing image: %s", v.VolID())
		return nil
	}), nil
}
