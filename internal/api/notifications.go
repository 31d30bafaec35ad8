package api

import "time"

// NotificationEvent names a transition a receiver of notifications: can
// take (its `on` list).
type NotificationEvent string

// Notification events, in documented order.
const (
	// NotifyFailed: an action or a plan of the resource failed.
	NotifyFailed NotificationEvent = "failed"
	// NotifyDegraded: the resource's health became Degraded.
	NotifyDegraded NotificationEvent = "degraded"
	// NotifyDrift: the cluster no longer matches the manifest.
	NotifyDrift NotificationEvent = "drift"
	// NotifySynced: the resource is in sync again (created, applied,
	// found in sync, pruned).
	NotifySynced NotificationEvent = "synced"
	// NotifyConflict: something proxmops does not own is in the way.
	NotifyConflict NotificationEvent = "conflict"
	// NotifySourceError: Git or the manifests could not be read.
	NotifySourceError NotificationEvent = "source-error"
	// NotifyPRPlan: the plan of a pull request was posted.
	NotifyPRPlan NotificationEvent = "pr-plan"
)

// NotificationEvents lists the notification events in documented order.
var NotificationEvents = []NotificationEvent{NotifyFailed, NotifyDegraded, NotifyDrift, NotifySynced, NotifyConflict, NotifySourceError, NotifyPRPlan}

// Notice is one transition as a receiver gets it: an entry of a webhook
// body's `events` (docs/api.md, "Notifications").
type Notice struct {
	Event NotificationEvent `json:"event"`
	// Cluster names the cluster ("default" for the single cluster section).
	Cluster string `json:"cluster,omitempty"`
	// Kind and Name are the resource's; absent for source-error and pr-plan.
	Kind string `json:"kind,omitempty"`
	Name string `json:"name,omitempty"`
	// Revision is the commit the transition was seen at (for pr-plan the
	// pull request's head).
	Revision string `json:"revision,omitempty"`
	// PullRequest is the number of the request of a pr-plan.
	PullRequest int       `json:"pullRequest,omitempty"`
	Message     string    `json:"message"`
	Time        time.Time `json:"time"`
	// Link opens the resource (or the preview) in the UI; absent without
	// server.publicURL.
	Link string `json:"link,omitempty"`
}

// NotificationBody is what a JSON webhook receiver gets: one POST per burst
// of transitions.
type NotificationBody struct {
	// Receiver is the name of the `notifications:` entry.
	Receiver string `json:"receiver"`
	// Text is the whole burst as the chat services get it (Slack and
	// Mattermost incoming webhooks read this field).
	Text   string   `json:"text"`
	Events []Notice `json:"events"`
}

// NotificationStatus is one receiver in GET /api/v1/notifications.
type NotificationStatus struct {
	Name string `json:"name"`
	// URL is shown without secrets: scheme and host only.
	URL string `json:"url"`
	// Service is "webhook" or the service URL's scheme (ntfy, gotify, ...).
	Service   string   `json:"service"`
	On        []string `json:"on"`
	Resources []string `json:"resources,omitempty"`
	// LastDelivery is the last message the receiver accepted.
	LastDelivery *time.Time `json:"lastDelivery,omitempty"`
	// LastError is the last failed attempt's error (kept after a later
	// success; compare LastErrorAt with LastDelivery), at LastErrorAt.
	LastError   string     `json:"lastError,omitempty"`
	LastErrorAt *time.Time `json:"lastErrorAt,omitempty"`
	// Delivered counts messages delivered, Failed messages given up after
	// every retry, Pending notices waiting (the coalescing window or a retry).
	Delivered int `json:"delivered"`
	Failed    int `json:"failed"`
	Pending   int `json:"pending"`
}

// NotificationList is GET /api/v1/notifications.
type NotificationList struct {
	Notifications []NotificationStatus `json:"notifications"`
}
