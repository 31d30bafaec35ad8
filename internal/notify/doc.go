// Package notify announces transitions (a resource failed, degraded,
// drifted, synced again, a conflict, a source error, a pull request's plan)
// to the receivers of the `notifications:` configuration.
//
// The controller and the forge previews call one interface, Notifier:
// Notify hands over one transition and never blocks. The Dispatcher
// matches it against each receiver's `on` events and `resources`
// selectors, coalesces what arrives within a short window into one message
// per receiver, and delivers it: a JSON POST (api.NotificationBody) to an
// http(s):// URL, or through shoutrrr's service URLs (ntfy, Gotify,
// Discord, Slack, Matrix, Telegram, SMTP, ...). A failed delivery is retried
// with exponential backoff a bounded number of times; Status reports each
// receiver's last delivery and last error for the API and the UI.
//
// Secrets stay out of the configuration: ${env:NAME} and ${file:/path} in a
// URL are read at each delivery, and their values are scrubbed from the
// errors shown.
package notify
