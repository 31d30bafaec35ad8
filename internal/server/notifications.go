package server

import (
	"net/http"

	"github.com/proxmops/proxmops/internal/api"
)

// NotificationStatuser reports the receivers of notifications.
type NotificationStatuser interface {
	Status() []api.NotificationStatus
}

// handleNotifications lists the receivers with their last delivery and
// last error (URLs without their secrets).
func (s *Server) handleNotifications(w http.ResponseWriter, _ *http.Request) {
	list := api.NotificationList{Notifications: []api.NotificationStatus{}}
	if s.opt.Notifications != nil {
		list.Notifications = append(list.Notifications, s.opt.Notifications.Status()...)
	}
	writeJSON(w, http.StatusOK, list)
}
