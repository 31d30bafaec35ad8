package engine

import "strings"

// OwnerMark marks host network interfaces (comments) and SDN vnets (alias)
// proxmops owns: Proxmox gives them no tags.
const OwnerMark = "managed-by-proxmops"

// markOwned adds the ownership mark to a free-text field (an interface's
// comments, a vnet's alias): "NFS storage network (managed-by-proxmops)".
func markOwned(text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return OwnerMark
	}
	return text + " (" + OwnerMark + ")"
}

// ParseOwned reads markOwned back: whether the mark is there and the text
// without it.
func ParseOwned(field string) (bool, string) {
	field = strings.TrimSpace(field)
	for _, m := range []string{" (" + OwnerMark + ")", "(" + OwnerMark + ")", OwnerMark} {
		if i := strings.Index(field, m); i >= 0 {
			return true, strings.TrimSpace(field[:i] + field[i+len(m):])
		}
	}
	return false, field
}
