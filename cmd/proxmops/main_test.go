package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestVersionJSON(t *testing.T) {
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	defer rootCmd.SetOut(nil)
	if code := run([]string{"version", "--output", "json"}); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	var info map[string]string
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		t.Fatalf("version --output json is not JSON: %v: %q", err, out.String())
	}
	if info["version"] == "" || info["commit"] == "" {
		t.Fatalf("missing fields: %v", info)
	}
}

func TestUnknownCommandExitsOne(t *testing.T) {
	if code := run([]string{"no-such-command"}); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
}
