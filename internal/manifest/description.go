package manifest

import "fmt"

// MaxDescription is the longest description Proxmox takes for a guest
// (qemu-server QemuServer.pm and pve-container LXC/Config.pm $confdesc
// description, maxLength 1024 * 8); a longer one is refused by the API.
const MaxDescription = 8192

// Proxmops keeps its records of a guest as the last lines of its
// description (internal/provision Record.Line, internal/engine
// AdoptionRecord.Line), each after a blank line. Validation keeps room for
// the longest lines they can take, so that a record never pushes a
// description past MaxDescription; the packages that render them test
// that their longest line fits.
const (
	// recordSeparator is the blank line before a record line.
	recordSeparator = len("\n\n")
	// ProvisionRecordMax is the longest proxmops-provisioned: line: the
	// full hash and every part, with the per-item lists at their cap of
	// 32 short (8 hex) hashes.
	ProvisionRecordMax = len("proxmops-provisioned: sha256:") + 64 +
		len(" packages=") + 8 + len(" files=") + 32*9 - 1 + len(" copy=") + 32*9 - 1 + len(" commands=") + 8
	// adoptedPrefixLen is the length of "proxmops-adopted:".
	adoptedPrefixLen = len("proxmops-adopted:")
	// AdoptedEntryMax is the longest " <slot>=<size>" entry of a
	// proxmops-adopted: line: a slot name of at most 8 characters
	// ("virtio15"), a size of at most 19 (an int64 in bytes).
	AdoptedEntryMax = len(" ") + 8 + len("=") + 19
)

// AdoptionRecordMax is the longest proxmops-adopted: line of a guest with
// the given number of disks.
func AdoptionRecordMax(disks int) int { return adoptedPrefixLen + disks*AdoptedEntryMax }

// recordRoom is the room the records of a guest with that many disks can
// take in its description.
func recordRoom(disks int) int {
	return recordSeparator + AdoptionRecordMax(disks) + recordSeparator + ProvisionRecordMax
}

// checkDescription refuses a description that would not leave room for
// proxmops' record lines of a guest with that many disks.
func checkDescription(description string, disks int, c *checker) {
	room := recordRoom(disks)
	if limit := MaxDescription - room; len(description) > limit {
		c.errorf("spec.description", "%d bytes, at most %d: Proxmox takes %d and proxmops keeps %d for its record lines (proxmops-adopted:, proxmops-provisioned:)",
			len(description), limit, MaxDescription, room)
	}
}

// CheckDescriptionLength says why a description (records included) would be
// refused by Proxmox, "" when it fits.
func CheckDescriptionLength(desc string) error {
	if len(desc) > MaxDescription {
		return fmt.Errorf("the description would be %d bytes with proxmops' record lines, and Proxmox takes at most %d: shorten spec.description", len(desc), MaxDescription)
	}
	return nil
}
