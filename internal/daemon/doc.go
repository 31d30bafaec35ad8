// Package daemon wires the parts of `proxmops serve` together: the log
// (into the log ring), the SQLite store with its encryption key, the
// settings (file, environment and flags overridden by those saved from the
// UI), the controller and the HTTP server, and runs them until the context
// ends. `proxmops demo` runs the same daemon against a simulated cluster.
package daemon
