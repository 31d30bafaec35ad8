// Package settings holds the daemon's effective settings (Values), the
// settings saved from the UI (Overrides, stored encrypted by internal/store),
// and how the two combine: Merge(file, stored) lets every field saved from
// the UI win over the configuration file, environment and flags.
//
// The keys are those of PRODUCT.md's configuration file (cluster.*, source.*,
// reconcile.*), plus source.webhookSecret for forge webhooks. Secrets hold
// their content (the Git token, the SSH private key), not a file name: the
// configuration loader reads tokenFile/sshKeyFile before handing Values over.
package settings
