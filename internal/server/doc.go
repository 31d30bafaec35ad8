// Package server is the daemon's HTTP layer: the /api/v1 routes of
// docs/api.md (JSON shapes in internal/api), first-run setup,
// sessions and API tokens, CSRF, security headers, SSE streams, forge
// webhooks, /healthz, /readyz, /metrics and the embedded UI.
//
// How `proxmops serve` wires it:
//
//	ring := logring.New(1000)
//	logger := slog.New(ring.Handler(slog.NewJSONHandler(os.Stderr,
//		&slog.HandlerOptions{ReplaceAttr: logring.Redact}), slog.LevelInfo))
//	st, err := store.Open(ctx, store.Options{Path: cfg.Server.DatabasePath,
//		EncryptionKey: os.Getenv("PROXMOPS_ENCRYPTION_KEY"), Logger: logger,
//		HistoryPerResource: cfg.Reconcile.HistoryPerResource,
//		HistoryTotal: cfg.Reconcile.HistoryTotal})
//	overlay, err := st.Overlay(ctx)
//	effective, warnings, err := cfg.WithOverlay(overlay) // what the controller starts with
//	hub := events.NewHub(1024)
//	m := metrics.New()
//	ctrl := controller.New(effective, hub, st, m, ...)    // implements server.Backend
//	srv, err := server.New(ctx, server.Options{
//		Store: st, Backend: ctrl, Hub: hub, Logs: ring, Logger: logger, Metrics: m,
//		Config: cfg, OnSettingsChanged: ctrl.ApplyConfig, UI: webFS,
//		TLSCertFile: cfg.Server.TLSCertFile, TLSKeyFile: cfg.Server.TLSKeyFile,
//		TrustProxy: cfg.Server.TrustProxy,
//	})
//	err = srv.ListenAndServe(ctx, cfg.Server.Addr) // returns after ctx ends
//
// server.New prints the one-time setup token to Options.SetupOutput
// (os.Stdout) when no account exists yet.
//
// The controller publishes to the hub: hub.Publish(api.SSEResource,
// summary), hub.Publish(api.SSEPass, api.PassEvent{...}),
// hub.Publish(api.SSEDeleted, api.DeletedEvent{...}); records history with
// st.AddHistory; may keep its own state with st.State/st.PutState; and
// returns errors wrapping api.ErrNotFound, api.ErrNotOwned, api.ErrNotReady
// and the like so the server answers with the right status.
//
// Roles: viewers read; admins also act (sync, delete, refresh), change
// settings and manage users and tokens. Writes authenticated by the session
// cookie need the X-CSRF-Token header from GET /api/v1/me; requests with
// Authorization: Bearer <API token> need none.
package server
