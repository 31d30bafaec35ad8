package engine

import (
	"math"
	"testing"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pvefields"
)

// The record line round-trips through the description: split from the
// user's text (and from the provisioning record, which stays), written
// back after it, an entry that does not parse left out.
func TestAdoptionRecordLineSplitsFromTheDescription(t *testing.T) {
	for _, tc := range []struct {
		name, desc, rest, line string
	}{
		{"none", "Web server\nmade by hand", "Web server\nmade by hand", ""},
		{"alone", "proxmops-adopted: scsi1=8G scsi0=32G", "", "proxmops-adopted: scsi0=32G scsi1=8G"},
		{"after the user's text and the provisioning record", "Notes\n\nproxmops-provisioned: sha256:x\n\nproxmops-adopted: rootfs=16G\n",
			"Notes\n\nproxmops-provisioned: sha256:x", "proxmops-adopted: rootfs=16G"},
		{"a bad entry", "proxmops-adopted: scsi0=lots mp0=4G", "", "proxmops-adopted: mp0=4G"},
		{"no disk", "proxmops-adopted:", "", "proxmops-adopted:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest, rec := splitAdoptionRecord(tc.desc)
			line := ""
			if rec != nil {
				line = rec.Line()
			}
			if rest != tc.rest || line != tc.line {
				t.Fatalf("split %q = %q, %q; want %q, %q", tc.desc, rest, line, tc.rest, tc.line)
			}
			if back := pvefields.WithAdoptionLine(rest, line); line != "" {
				if r2, rec2 := splitAdoptionRecord(back); r2 != rest || rec2 == nil || rec2.Line() != line {
					t.Fatalf("written back as %q, read as %q %v", back, r2, rec2)
				}
			}
		})
	}
}

// The longest adoption line of a guest, its longest slot names with sizes
// in bytes that no unit divides, fits the room validation keeps.
func TestTheLongestAdoptionLineFitsTheRoomValidationKeeps(t *testing.T) {
	for _, slots := range [][]string{{"virtio15", "scsi30", "sata5", "ide3"}, {"rootfs", "mp255", "mp254"}} {
		r := AdoptionRecord{Sizes: map[string]int64{}}
		for _, s := range slots {
			r.Sizes[s] = math.MaxInt64
		}
		if got, room := len(r.Line()), manifest.AdoptionRecordMax(len(slots)); got > room {
			t.Errorf("%v: line %d bytes, validation keeps %d", slots, got, room)
		}
	}
}
