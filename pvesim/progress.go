package pvesim

import (
	"fmt"
	"math"
	"time"
)

// progressSteps is how many progress lines a simulated copy prints.
const progressSteps = 4

// renderBytes is PVE::Format::render_bytes: the value in the largest
// binary unit below it, with precision decimals.
func renderBytes(value int64, precision int) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v, unit := float64(value), 0
	if value > 1023 {
		unit = min(int(math.Log(v)/math.Log(1024)), len(units)-1)
		v /= math.Pow(1024, float64(unit))
	}
	return fmt.Sprintf("%.*f %s", precision, v, units[unit])
}

// copyWithProgress stands for a disk copy of total bytes taking d, after
// lead (the task's other work): it waits and logs the progress line Proxmox
// prints for it. An offline copy (qemu-img convert: disk import, clone of a
// stopped guest) prints "transferred X of Y (P%)" (qemu-server
// QemuServer/QemuImage.pm, convert's output parser); a copy of a running
// guest's drive (a block mirror) prints "drive-scsi0: transferred X of Y
// (P%) in Ns" (QemuServer/BlockJob.pm, qemu_drive_mirror_monitor). Sizes
// are PVE::Format::render_bytes with one decimal, the percent has two. The
// steps end at fixed times from the start, so a test clock advanced once
// past the whole copy ends it, as a single wait would.
func (tc *taskCtx) copyWithProgress(total int64, d time.Duration, drive string, lead time.Duration) error {
	start := tc.s.clock.Now()
	for i := 1; i <= progressSteps; i++ {
		part := lead + d*time.Duration(i)/progressSteps
		if err := tc.sleepUntil(start.Add(tc.s.scale(part))); err != nil {
			return err
		}
		done := total * int64(i) / progressSteps
		pct := 100.0
		if total > 0 {
			pct = float64(done) * 100 / float64(total)
		}
		line := fmt.Sprintf("transferred %s of %s (%.2f%%)", renderBytes(done, 1), renderBytes(total, 1), pct)
		if drive != "" {
			line = fmt.Sprintf("%s: %s in %ds", drive, line, int((d * time.Duration(i) / progressSteps).Seconds()))
		}
		tc.Log("%s", line)
	}
	return nil
}

// sleepUntil is Sleep up to a time of the server's clock (no wait once it
// has passed).
func (tc *taskCtx) sleepUntil(deadline time.Time) error {
	return tc.wait(deadline.Sub(tc.s.clock.Now()))
}

// firstDisk is the first drive of conf a clone copies (not a CD-ROM).
func firstDisk(conf map[string]string) string {
	for _, k := range sortedKeys(conf) {
		if !isQemuDiskKey(k) {
			continue
		}
		if d, err := parseDrive(k, conf[k]); err == nil && !driveIsCdrom(d) {
			return k
		}
	}
	return "scsi0"
}
