package main

import "github.com/proxmops/proxmops/internal/config"

// Tests never read the machine's service configuration; a test that wants
// one points config.ServiceConfigFile at its own.
func init() { config.ServiceConfigFile = "/nonexistent-proxmops-test/proxmops.yaml" }
