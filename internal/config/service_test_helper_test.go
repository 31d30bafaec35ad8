package config

// Tests never read the machine's service configuration.
func init() { ServiceConfigFile = "/nonexistent-proxmops-test/proxmops.yaml" }
