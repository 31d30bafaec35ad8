package pvefields

import "github.com/proxmops/proxmops/internal/manifest"

// FieldRows names the rows of a VirtualMachine's or a Container's field
// table (a manifest path, or the Proxmox key of a field without one): the
// export reads each (every field the engine manages is exported), and the
// e2e test proves each in sync right after a create. A Template's rows are
// those a full TemplateSpec declares (DeclaredRows).
func FieldRows(kind string) []string {
	switch manifest.Kind(kind) {
	case manifest.KindVirtualMachine:
		return rowNames(qemuFields)
	case manifest.KindContainer:
		return rowNames(ctFields)
	}
	return nil
}

// DeclaredRows names the rows of qemuFields that gs declares.
func DeclaredRows(gs *GuestSpec) []string { return rowNames(declaredRows(gs)) }

// declaredRows are the rows of qemuFields that gs declares.
func declaredRows(gs *GuestSpec) []row[*GuestSpec] {
	var out []row[*GuestSpec]
	for _, r := range qemuFields {
		if len(params([]row[*GuestSpec]{r}, gs, &fieldCtx{vmid: gs.VMID})) > 0 {
			out = append(out, r)
		}
	}
	return out
}

func rowNames[S any](rows []row[S]) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		if r.path != "" {
			out = append(out, r.path)
		} else {
			out = append(out, r.key)
		}
	}
	return out
}
