// Package logring keeps the daemon's recent log lines in memory for the UI's
// log page: a log/slog handler tees every record into a bounded ring (and on
// to the real handler), and subscribers get new lines as they come. Values
// of attributes whose key names a secret (password, token, secret, ...) are
// replaced by "[redacted]"; Redact does the same for any slog handler.
package logring
