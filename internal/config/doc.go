// Package config loads proxmops' configuration: a YAML file, then PROXMOPS_*
// environment variables, then command-line flags, each layer overriding the
// one before; settings saved in the UI are applied last with WithOverlay.
//
// Decoding is strict: an unknown or misspelt key is an error with its line,
// column and a suggestion. ${VAR} in the file expands from the environment.
// Secrets come from the environment or from files (tokenSecretFile,
// tokenFile, sshKeyFile); secrets written inline in the file are accepted
// but reported as warnings, which Load returns for the caller to log.
package config
