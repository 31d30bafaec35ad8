package server

import (
	"net/http"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/provision"
	"github.com/proxmops/proxmops/internal/vocab"
)

// handleResetHostKey forgets the SSH host key pinned for a guest's
// provisioning (DELETE /api/v1/resources/{kind}/{name}/hostkey): the next
// run pins what the guest offers then. For a guest rebuilt behind the same
// name and VMID, whose new host key fails its provisioning.
func (s *Server) handleResetHostKey(w http.ResponseWriter, r *http.Request) {
	kind, name, ok := resourceParams(r)
	if !ok || !manifest.Kind(kind).Info().Reaches {
		writeError(w, http.StatusNotFound, "no such guest: host keys are pinned for Container and VirtualMachine only")
		return
	}
	st, ok := s.clusterRecords(w, r)
	if !ok {
		return
	}
	keys := provision.NewKeys(st, "")
	id := vocab.Key(kind, name)
	pin, had, err := keys.HostKey(r.Context(), id)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if !had {
		writeJSON(w, http.StatusOK, api.Accepted{Status: "no host key is pinned for " + id})
		return
	}
	if err := keys.ResetHostKey(r.Context(), id); err != nil {
		s.internal(w, r, err)
		return
	}
	s.log.Info("provisioning host key reset", "resource", id, "fingerprint", pin.Fingerprint, "by", api.ActorFrom(r.Context()).String())
	writeJSON(w, http.StatusOK, api.Accepted{Status: "host key " + pin.Fingerprint + " of " + id + " forgotten: the next provisioning pins the key the guest offers"})
}
