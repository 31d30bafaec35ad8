package pvesim

// The QMP part of a VM's status (qemu-server PVE/QemuServer.pm vmstatus
// with $full): what query-status, query-blockstats, query-machines,
// query-version, query-proxmox-support and query-balloon add for a running
// VM.

import "github.com/proxmops/proxmops/pvesim/route"
import "strconv"

// qemuVMStatusFull adds to a VM's vmstatus what $full adds: for a stopped
// VM only qmpstatus (its status); for a running one the tap devices' counters
// (nics), the block devices' statistics (blockstat, whose sums are diskread
// and diskwrite), the machine and QEMU version, the proxmox-support
// capabilities and, with a balloon device (balloon not 0), the balloon's
// figures.
func (s *Server) qemuVMStatusFull(g *Guest, out map[string]any) {
	if !g.Running {
		out["qmpstatus"] = out["status"]
		return
	}
	out["qmpstatus"] = "running"
	nics := map[string]any{}
	blockstat := map[string]any{}
	for k := range g.Conf {
		if n, ok := route.IndexOf(k, "net"); ok && k == "net"+strconv.Itoa(n) {
			nics["tap"+strconv.Itoa(g.VMID)+"i"+strconv.Itoa(n)] = map[string]any{"netin": 0, "netout": 0}
		}
		// tpmstate0 is swtpm's, no QEMU block device.
		if isQemuDiskKey(k) && k != "tpmstate0" {
			blockstat[k] = qemuBlockStats()
		}
	}
	if len(nics) > 0 {
		out["nics"] = nics
	}
	out["blockstat"] = blockstat
	out["diskread"], out["diskwrite"] = 0, 0
	out["running-machine"] = "pc-i440fx-10.1+pve0"
	out["running-qemu"] = "10.1.2"
	out["proxmox-support"] = map[string]any{
		"backup-fleecing": true, "backup-max-workers": true, "pbs-dirty-bitmap": true,
		"pbs-dirty-bitmap-migration": true, "pbs-dirty-bitmap-savevm": true, "pbs-library-version": "2.0.1",
		"pbs-masterkey": true, "query-bitmap-info": true,
	}
	if g.Conf["balloon"] == "0" {
		return // no balloon device: query-balloon fails
	}
	maxmem, _ := out["maxmem"].(int64)
	mem, _ := out["mem"].(int64)
	// The guest's balloon driver reports its memory: mem is total_mem - free_mem.
	out["balloon"] = maxmem
	out["freemem"] = maxmem - mem
	out["ballooninfo"] = map[string]any{
		"actual": maxmem, "max_mem": maxmem, "total_mem": maxmem, "free_mem": maxmem - mem,
		"last_update": s.clock.Now().Unix(), "major_page_faults": 0, "minor_page_faults": 0,
		"mem_swapped_in": 0, "mem_swapped_out": 0,
	}
}

// qemuBlockStats is one device's statistics as query-blockstats gives them
// (BlockDeviceStats) for a device nothing was read from or written to.
func qemuBlockStats() map[string]any {
	m := map[string]any{"account_failed": true, "account_invalid": true, "timed_stats": []any{}}
	for _, k := range []string{"rd_bytes", "wr_bytes", "unmap_bytes", "rd_operations", "wr_operations",
		"flush_operations", "unmap_operations", "rd_total_time_ns", "wr_total_time_ns", "flush_total_time_ns",
		"unmap_total_time_ns", "rd_merged", "wr_merged", "unmap_merged", "wr_highest_offset",
		"failed_rd_operations", "failed_wr_operations", "failed_flush_operations", "failed_unmap_operations",
		"invalid_rd_operations", "invalid_wr_operations", "invalid_flush_operations", "invalid_unmap_operations"} {
		m[k] = 0
	}
	return m
}

// qemuHasSerial is conf_has_serial: one of serial0-serial3 is set.
func qemuHasSerial(conf map[string]string) bool {
	for n := range 4 {
		if conf["serial"+strconv.Itoa(n)] != "" {
			return true
		}
	}
	return false
}
