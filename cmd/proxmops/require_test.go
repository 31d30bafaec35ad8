package main

import (
	"strings"
	"testing"
)

// A first run without configuration names every missing setting at once,
// each with its flag, instead of one per attempt.
func TestCommandsNameEveryMissingSettingAtOnce(t *testing.T) {
	for _, v := range []string{"PROXMOPS_CONFIG", "PROXMOPS_SOURCE_REPOURL", "PROXMOPS_CLUSTER_ENDPOINT", "PROXMOPS_CLUSTER_TOKENID", "PROXMOPS_CLUSTER_TOKENSECRET"} {
		t.Setenv(v, "")
	}
	t.Chdir(t.TempDir())
	repo := "source.repoURL: is required (or --repo, or PROXMOPS_SOURCE_REPOURL)"
	endpoint := "cluster.endpoint: is required (or --endpoint, or PROXMOPS_CLUSTER_ENDPOINT)"
	tokenID := "cluster.tokenId: is required (or --token-id, or PROXMOPS_CLUSTER_TOKENID)"
	secret := "cluster.tokenSecret: is required: set cluster.tokenSecretFile or PROXMOPS_CLUSTER_TOKENSECRET"
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string
		notWant []string
	}{
		{"plan with nothing set", []string{"plan"}, []string{"4 problems", repo, endpoint, tokenID, secret}, nil},
		{"apply with nothing set", []string{"apply"}, []string{"4 problems", repo, endpoint, tokenID, secret}, nil},
		{"plan with a repository and an endpoint", []string{"plan", "--repo", ".", "--endpoint", "https://127.0.0.1:1/api2/json"},
			[]string{"2 problems", tokenID, secret}, []string{repo, endpoint}},
		{"export needs no repository", []string{"export", "--out", t.TempDir()}, []string{"3 problems", endpoint, tokenID, secret}, []string{repo}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1: %s", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("missing %q in:\n%s", w, errOut)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(errOut, w) {
					t.Errorf("%q should not be reported:\n%s", w, errOut)
				}
			}
		})
	}
}
