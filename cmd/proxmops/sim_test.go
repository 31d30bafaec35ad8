package main

import (
	"bytes"
	"testing"
)

func TestSimRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"empty token id", []string{"sim", "--listen", "127.0.0.1:0", "--token-id", ""}},
		{"bad faults", []string{"sim", "--listen", "127.0.0.1:0", "--token-id", "root@pam!t", "--token-secret", "s", "--faults", "error-rate=2"}},
		{"unknown fault", []string{"sim", "--listen", "127.0.0.1:0", "--token-id", "root@pam!t", "--token-secret", "s", "--faults", "explode=1"}},
		{"negative status interval", []string{"sim", "--listen", "127.0.0.1:0", "--token-id", "root@pam!t", "--token-secret", "s", "--status-interval", "-1s"}},
		{"unknown privilege", []string{"sim", "--listen", "127.0.0.1:0", "--token-id", "root@pam!t", "--token-secret", "s", "--token-privileges", "VM.Audit,VM.Fly"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			rootCmd.SetOut(&out)
			defer rootCmd.SetOut(nil)
			if code := run(tt.args); code != 1 {
				t.Fatalf("exit code %d, want 1", code)
			}
		})
	}
}
