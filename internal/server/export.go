package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/export"
)

// Exporter is the part of a Backend that serves GET /api/v1/export; a
// backend without it answers 501.
type Exporter interface {
	Export(ctx context.Context, o export.Options) (*export.Result, error)
}

// handleExport answers the manifests of what is on the cluster as a
// tar.gz of the tree `proxmops export` writes; the query mirrors its
// flags: node, vmid (100,105-110) or all, kind (repeated or a comma list).
func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	ex, ok := optional[Exporter](s, w, "this daemon cannot export")
	if !ok {
		return
	}
	q := r.URL.Query()
	o := export.Options{Node: q.Get("node"), VMIDs: q.Get("vmid"), Kinds: q["kind"]}
	switch strings.ToLower(q.Get("all")) {
	case "", "0", "false":
	case "1", "true":
		o.All = true
	default:
		writeError(w, http.StatusBadRequest, "all must be true or false")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*clusterReadTimeout)
	defer cancel()
	res, err := ex.Export(ctx, o)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := time.Now().UTC()
	name := "proxmops-export-" + now.Format("20060102T150405Z")
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name+".tar.gz"))
	w.Header().Set("X-Proxmops-Manifests", fmt.Sprint(len(res.Files)))
	// Guests whose manifest would rename them are listed in the archive's
	// NOT-EXPORTED.txt; the count lets a client say so.
	w.Header().Set("X-Proxmops-Not-Exported", fmt.Sprint(len(res.Refused)))
	if err := res.WriteTarGz(w, name+"/", now); err != nil {
		s.log.Warn("writing the export archive", "err", err)
	}
}
