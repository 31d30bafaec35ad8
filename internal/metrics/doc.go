// Package metrics defines the daemon's Prometheus metrics in one registry,
// served by internal/server at /metrics. The controller, the Proxmox client
// and the Git source record into the fields of Metrics; the server records
// HTTP, webhook, login and SSE figures.
package metrics
