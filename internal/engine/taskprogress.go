package engine

import (
	"context"
	"math"
	"regexp"
	"strconv"

	"github.com/proxmops/proxmops/internal/pve"
)

// progressTasks are the task types whose log tells how far they are: a
// download (wget's dot lines, pve-storage API2/Storage/Status.pm
// download_url), a disk import or full clone (qemu-img convert's
// "transferred X of Y (P%)", qemu-server QemuServer/QemuImage.pm) and a
// running guest's drive mirror ("drive-scsi0: transferred …",
// QemuServer/BlockJob.pm qemu_drive_mirror_monitor).
var progressTasks = map[string]bool{"download": true, "qmcreate": true, "qmclone": true, "qmmove": true, "imgcopy": true}

var (
	// transferred … (12.34%) — qemu-img convert and the block mirror.
	transferredPct = regexp.MustCompile(`transferred .* \((\d+(?:\.\d+)?)%\)`)
	// wget --progress=dot:giga (pvesim/wget.go has the form): " 32768K
	// ........ ........ ........ ........ 50% 4.10M 15s"; "%3d%%" follows the
	// dots with no blank at 100 ("........100% 4.20M=31s").
	wgetPct = regexp.MustCompile(`^\s*\d+K[ .]+?(\d{1,3})%`)
)

// percentOf reads the progress a task log line gives, if any.
func percentOf(line string) (int, bool) {
	m := transferredPct.FindStringSubmatch(line)
	if m == nil {
		m = wgetPct.FindStringSubmatch(line)
	}
	if m == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil || f < 0 || f > 100 {
		return 0, false
	}
	return int(math.Floor(f)), true
}

// taskPercent follows a running task's log for its percent: each poll
// reads only the lines added since the last one and reports a new percent
// through report. Tasks that print none are not read, nor is a task at the
// first poll that finds it running: the first poll comes when a task of
// its type has usually ended, so most tasks are short ones whose percent
// nobody would see.
func taskPercent(ctx context.Context, c *pve.Client, upid string, report func(int)) pve.TaskObserver {
	u, err := pve.ParseUPID(upid)
	if err != nil || !progressTasks[u.Type] {
		return nil
	}
	next, last, running := 0, -1, 0
	return func(st pve.TaskStatus) {
		if !st.Running() {
			return
		}
		if running++; running == 1 {
			return
		}
		lines, err := c.TaskLog(ctx, upid, next, 500)
		if err != nil {
			return // progress is a nicety: the wait goes on
		}
		pct := -1
		for _, l := range lines {
			// n is 1-based: the next read starts after the last line seen.
			next = max(next, int(l.N))
			if p, ok := percentOf(l.T); ok {
				pct = p
			}
		}
		if pct >= 0 && pct != last {
			last = pct
			report(pct)
		}
	}
}
