package server

import (
	"log/slog"

	"github.com/proxmops/proxmops/internal/logring"
)

func slogFor(r *logring.Ring) *slog.Logger {
	return slog.New(r.Handler(slog.DiscardHandler, slog.LevelDebug))
}
