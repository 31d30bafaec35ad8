package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the daemon's collectors, registered in Registry.
type Metrics struct {
	Registry *prometheus.Registry

	// Controller.
	// Every controller and Proxmox figure has the label cluster: the
	// cluster's name, "default" for the single cluster section.
	PassDuration *prometheus.HistogramVec // one reconcile pass; labels: cluster
	Resources    *prometheus.GaugeVec     // labels: status, cluster
	Actions      *prometheus.CounterVec   // labels: kind, action, result (ok, failed), cluster
	// ClusterUp is 1 when the last pass observed the cluster, 0 when it
	// could not; LastObservation is the Unix time of the last one that did.
	ClusterUp       *prometheus.GaugeVec // labels: cluster
	LastObservation *prometheus.GaugeVec // labels: cluster
	// DriftPeriod is the time within which the daemon reads every owned
	// guest's full configuration (reconcile.driftCheckInterval stretched
	// by the guests whose firewall is read with it), 0 when every pass
	// reads every guest; labels: cluster.
	DriftPeriod *prometheus.GaugeVec
	// ResourceHealth is 1 for each resource's health, labels: kind, name,
	// health, cluster (one series per resource).
	ResourceHealth *prometheus.GaugeVec

	// Proxmox VE client.
	PVERequests *prometheus.CounterVec // labels: method, code ("error" when no answer), cluster
	PVEErrors   *prometheus.CounterVec // labels: reason (timeout, connection, status, task), cluster

	// Git source.
	GitFetchDuration prometheus.Histogram
	GitFetchErrors   prometheus.Counter

	// HTTP server.
	HTTPRequests  *prometheus.CounterVec   // labels: route, method, code
	HTTPDuration  *prometheus.HistogramVec // labels: route
	Webhooks      *prometheus.CounterVec   // labels: forge, result (accepted, rejected, duplicate, limited)
	LoginFailures prometheus.Counter
	SSEClients    *prometheus.GaugeVec // labels: stream (events, logs)
}

// New creates the collectors in a new registry, with the Go runtime and
// process collectors.
func New() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		PassDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "proxmops_pass_duration_seconds", Help: "Duration of one reconcile pass, by cluster.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)}, []string{"cluster"}),
		Resources: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "proxmops_resources", Help: "Managed resources by sync status and cluster."}, []string{"status", "cluster"}),
		Actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "proxmops_actions_total", Help: "Actions run, by resource kind, action, result and cluster."}, []string{"kind", "action", "result", "cluster"}),
		ClusterUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "proxmops_cluster_up", Help: "1 when the last reconcile pass observed the cluster, 0 when it could not (connection, TLS pin, authentication)."}, []string{"cluster"}),
		LastObservation: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "proxmops_last_successful_observation_timestamp_seconds", Help: "Unix time at which a reconcile pass last observed the cluster in full."}, []string{"cluster"}),
		DriftPeriod: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "proxmops_drift_check_period_seconds", Help: "Time within which the daemon reads every owned guest's full configuration (driftCheckInterval stretched by the guests whose firewall is read with it), 0 when every pass reads every guest."}, []string{"cluster"}),
		ResourceHealth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "proxmops_resource_health", Help: "1 for a resource's current health (Healthy, Progressing, Suspended, Missing, Degraded, Unknown), by kind, name and cluster."},
			[]string{"kind", "name", "health", "cluster"}),
		PVERequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "proxmops_pve_requests_total", Help: "Proxmox VE API requests by method, HTTP status and cluster."}, []string{"method", "code", "cluster"}),
		PVEErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "proxmops_pve_errors_total", Help: "Proxmox VE API errors by reason and cluster."}, []string{"reason", "cluster"}),
		GitFetchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "proxmops_git_fetch_duration_seconds", Help: "Duration of Git fetches.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12)}),
		GitFetchErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "proxmops_git_fetch_errors_total", Help: "Failed Git fetches."}),
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "proxmops_http_requests_total", Help: "HTTP requests served, by route, method and status."}, []string{"route", "method", "code"}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "proxmops_http_request_duration_seconds", Help: "HTTP request duration by route (streams excluded).",
			Buckets: prometheus.DefBuckets}, []string{"route"}),
		Webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "proxmops_webhooks_total", Help: "Webhook deliveries by forge and result."}, []string{"forge", "result"}),
		LoginFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "proxmops_login_failures_total", Help: "Failed or rate-limited logins."}),
		SSEClients: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "proxmops_sse_clients", Help: "Connected Server-Sent Events clients by stream."}, []string{"stream"}),
	}
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.PassDuration, m.Resources, m.Actions, m.ClusterUp, m.LastObservation, m.DriftPeriod, m.ResourceHealth, m.PVERequests, m.PVEErrors, m.GitFetchDuration, m.GitFetchErrors,
		m.HTTPRequests, m.HTTPDuration, m.Webhooks, m.LoginFailures, m.SSEClients)
	return m
}
