package main

import "testing"

// Every command that reaches a cluster (it has --endpoint) also takes the
// flags that say how to trust its certificate, as docs/configuration.md
// promises: serve among them.
func TestEveryCommandWithAnEndpointTakesTheClusterTLSFlags(t *testing.T) {
	seen := 0
	for _, c := range rootCmd.Commands() {
		if c.Flags().Lookup("endpoint") == nil {
			continue
		}
		seen++
		for _, name := range []string{"fingerprint", "ca-file", "insecure-skip-verify", "token-id"} {
			if c.Flags().Lookup(name) == nil {
				t.Errorf("proxmops %s has --endpoint but not --%s", c.Name(), name)
			}
		}
	}
	if seen < 6 {
		t.Fatalf("only %d commands have --endpoint: the test looks at the wrong command tree", seen)
	}
}
