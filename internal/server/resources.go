package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/settings"
	"github.com/proxmops/proxmops/internal/vocab"
)

// historyLimit is how many history entries a resource's detail shows.
const historyLimit = 100

// resourceRef reads the {kind} and {name} of a resource's route, answering
// 404 when they cannot name one.
func resourceRef(w http.ResponseWriter, r *http.Request) (kind, name string, ok bool) {
	kind, name, ok = resourceParams(r)
	if !ok {
		writeError(w, http.StatusNotFound, "no such resource")
	}
	return kind, name, ok
}

// resourceRequest is resourceRef and the request's optional JSON body
// (the zero T when it has none).
func resourceRequest[T any](w http.ResponseWriter, r *http.Request) (kind, name string, req T, ok bool) {
	if kind, name, ok = resourceRef(w, r); !ok {
		return kind, name, req, false
	}
	if r.ContentLength != 0 && !decodeJSON(w, r, &req) {
		return kind, name, req, false
	}
	return kind, name, req, true
}

func resourceParams(r *http.Request) (kind, name string, ok bool) {
	kind, name = chi.URLParam(r, "kind"), chi.URLParam(r, "name")
	return kind, name, kind != "" && name != "" && len(kind) <= 64 && len(name) <= 253
}

func (s *Server) handleResources(w http.ResponseWriter, r *http.Request) {
	list, err := s.backend.Resources(r.Context())
	answerList(s, w, r, &list, &list.Resources, err)
}

func (s *Server) handleResource(w http.ResponseWriter, r *http.Request) {
	kind, name, ok := resourceRef(w, r)
	if !ok {
		return
	}
	d, err := s.backend.Resource(r.Context(), kind, name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if d.History == nil {
		h, err := s.store.History(r.Context(), kind, name, historyLimit)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		d.History = h
	}
	writeJSON(w, http.StatusOK, d)
}

// clusterReadTimeout bounds a handler's own read of the cluster.
const clusterReadTimeout = 20 * time.Second

// serveResourceRead answers a GET on one resource with what read returns;
// a positive timeout bounds a read that goes to the cluster.
func serveResourceRead[T any](s *Server, w http.ResponseWriter, r *http.Request, timeout time.Duration, read func(context.Context, string, string) (T, error)) {
	kind, name, ok := resourceRef(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	v, err := read(ctx, kind, name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) handleManifest(w http.ResponseWriter, r *http.Request) {
	serveResourceRead(s, w, r, 0, s.backend.Manifest)
}

// handleLive reads the cluster through the daemon's own Proxmox token, so
// it is behind the same viewer check as every other read of the cluster.
func (s *Server) handleLive(w http.ResponseWriter, r *http.Request) {
	serveResourceRead(s, w, r, clusterReadTimeout, s.backend.Live)
}

func (s *Server) handleTaskLog(w http.ResponseWriter, r *http.Request) {
	serveResourceRead(s, w, r, clusterReadTimeout, s.backend.TaskLog)
}

func (s *Server) handlePlan(w http.ResponseWriter, r *http.Request) {
	rev := r.URL.Query().Get("revision")
	if len(rev) > 256 || strings.ContainsAny(rev, " \t\n") {
		writeError(w, http.StatusBadRequest, "revision must be a branch, tag or commit")
		return
	}
	p, err := s.backend.Plan(r.Context(), rev)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func accepted(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusAccepted, api.Accepted{Status: msg})
}

// syncOptions reads a sync's options; no body means none.
func syncOptions(w http.ResponseWriter, r *http.Request) (api.SyncOptions, bool) {
	var o api.SyncOptions
	body, ok := readBody(w, r)
	if !ok {
		return o, false
	}
	if strings.TrimSpace(string(body)) == "" {
		return o, true
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		writeError(w, http.StatusBadRequest, "invalid sync options (prune, dryRun, reboot): "+err.Error())
		return o, false
	}
	return o, true
}

// sync starts a sync, or answers the plan of a dry run (200).
func (s *Server) sync(w http.ResponseWriter, r *http.Request, kind, name string) {
	o, ok := syncOptions(w, r)
	if !ok {
		return
	}
	plan, err := s.backend.Sync(r.Context(), kind, name, o)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	what := "a full sync"
	if kind != "" {
		what = "sync of " + vocab.Key(kind, name)
	}
	if o.DryRun {
		if plan == nil {
			plan = &api.Plan{Actions: []api.PlanAction{}}
		}
		writeJSON(w, http.StatusOK, api.DryRun{Status: "dry run of " + what + ": nothing was changed", Plan: *plan})
		return
	}
	s.log.Info("sync requested", "resource", vocab.Key(kind, name), "prune", o.Prune, "reboot", o.Reboot, "by", api.ActorFrom(r.Context()).String())
	msg := what + " started"
	if kind == "" {
		msg = "a full pass started"
		if c := api.ClusterFrom(r.Context()); c != "" {
			msg = "a full pass of cluster " + c + " started"
		}
	}
	accepted(w, msg)
}

func (s *Server) handleSyncOne(w http.ResponseWriter, r *http.Request) {
	kind, name, ok := resourceRef(w, r)
	if !ok {
		return
	}
	s.sync(w, r, kind, name)
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	kind, name, ok := resourceRef(w, r)
	if !ok {
		return
	}
	if err := s.backend.Delete(r.Context(), kind, name); err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("delete requested", "resource", vocab.Key(kind, name), "by", api.ActorFrom(r.Context()).String())
	accepted(w, "delete of "+vocab.Key(kind, name)+" started")
}

func (s *Server) handleSyncAll(w http.ResponseWriter, r *http.Request) {
	s.sync(w, r, "", "")
}

func (s *Server) handleRefresh(w http.ResponseWriter, r *http.Request) {
	if err := s.backend.Refresh(r.Context()); err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("Git refresh requested", "by", api.ActorFrom(r.Context()).String())
	accepted(w, "Git pull and pass started")
}

// currentSettings reads the saved settings afresh (a record that no longer
// decrypts is reported instead of a stale copy shown) and applies them.
func (s *Server) currentSettings(ctx context.Context) (*config.Config, config.Overlay, []string, error) {
	stored, err := s.store.Overlay(ctx)
	if err != nil {
		return nil, config.Overlay{}, nil, err
	}
	eff, warnings, err := s.opt.Config.WithOverlay(stored)
	if err != nil {
		return s.opt.Config, stored, []string{"the saved settings are not in force: " + err.Error()}, nil
	}
	return eff, stored, warnings, nil
}

func (s *Server) handleGetSettings(w http.ResponseWriter, r *http.Request) {
	eff, _, warnings, err := s.currentSettings(r.Context())
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, settings.Document(eff, warnings))
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "the request body is too large")
		return nil, false
	}
	if ct := r.Header.Get("Content-Type"); len(b) > 0 && ct != "" && !strings.HasPrefix(ct, "application/json") {
		writeError(w, http.StatusUnsupportedMediaType, "send the body as Content-Type: application/json")
		return nil, false
	}
	return b, true
}

// withPatch parses a settings body and applies it over the saved settings;
// it answers 400 itself when the body or the result is invalid.
func (s *Server) withPatch(w http.ResponseWriter, r *http.Request, body []byte) (eff *config.Config, merged, patch config.Overlay, warnings []string, ok bool) {
	_, stored, _, err := s.currentSettings(r.Context())
	if err != nil {
		s.internal(w, r, err)
		return nil, merged, patch, nil, false
	}
	merged = stored
	if strings.TrimSpace(string(body)) != "" {
		if patch, err = settings.ParsePatch(body); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return nil, merged, patch, nil, false
		}
		if merged, err = settings.Update(stored, patch); err != nil {
			s.internal(w, r, err)
			return nil, merged, patch, nil, false
		}
	}
	eff, warnings, err = s.opt.Config.WithOverlay(merged)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return nil, merged, patch, nil, false
	}
	return eff, merged, patch, warnings, true
}

func (s *Server) handlePutSettings(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	s.settingsMu.Lock()
	defer s.settingsMu.Unlock()
	eff, merged, patch, warnings, ok := s.withPatch(w, r, body)
	if !ok {
		return
	}
	if err := s.store.SaveOverlay(r.Context(), merged); err != nil {
		s.internal(w, r, err)
		return
	}
	s.effective.Store(eff)
	// Key names only: values may be secrets.
	s.log.Info("settings saved", "fields", strings.Join(settings.Fields(patch), ","), "by", api.ActorFrom(r.Context()).String())
	if s.opt.OnSettingsChanged != nil {
		s.opt.OnSettingsChanged(eff)
	}
	writeJSON(w, http.StatusOK, settings.Document(eff, warnings))
}

func (s *Server) handleTestSettings(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	eff, _, _, _, ok := s.withPatch(w, r, body)
	if !ok {
		return
	}
	s.testSettings(w, r, 45*time.Second, eff)
}
