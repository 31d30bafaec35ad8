package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// withServiceFile points ServiceConfigFile at a file holding text for one
// test.
func withServiceFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "proxmops.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	saved := ServiceConfigFile
	ServiceConfigFile = path
	t.Cleanup(func() { ServiceConfigFile = saved })
	return path
}

func TestTheServiceFileIsReadWhenNoOtherIsNamed(t *testing.T) {
	service := withServiceFile(t, "reconcile:\n  interval: 5m\n")
	other := writeFile(t, t.TempDir(), "other.yaml", "reconcile:\n  interval: 7m\n")
	for _, tc := range []struct {
		name   string
		opts   LoadOptions
		want   string
		dbPath string
	}{
		{"nothing named: the service's file and state", LoadOptions{Env: []string{}}, "5m0s", ServiceDatabasePath},
		{"PROXMOPS_CONFIG wins", LoadOptions{Env: []string{EnvConfigFile + "=" + other}}, "7m0s", DefaultDatabasePath},
		{"--config wins", LoadOptions{File: other, Env: []string{EnvConfigFile + "=" + service}}, "7m0s", DefaultDatabasePath},
		{"the service's file named explicitly", LoadOptions{File: service, Env: []string{}}, "5m0s", ServiceDatabasePath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := Load(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if c.Reconcile.Interval.String() != tc.want || c.Server.DatabasePath != tc.dbPath {
				t.Fatalf("interval %s, database %s; want %s, %s", c.Reconcile.Interval, c.Server.DatabasePath, tc.want, tc.dbPath)
			}
		})
	}
	ServiceConfigFile = filepath.Join(t.TempDir(), "absent.yaml")
	c, _, err := Load(LoadOptions{Env: []string{}})
	if err != nil || c.Server.DatabasePath != DefaultDatabasePath {
		t.Fatalf("without the service's file: %v %q", err, c.Server.DatabasePath)
	}
}

func TestAnEnvironmentVariableThatChangesAFileKeyIsNamed(t *testing.T) {
	file := writeFile(t, t.TempDir(), "proxmops.yaml", "server:\n  databasePath: /srv/proxmops.db\nsource:\n  cacheDir: /srv/cache\n")
	for _, tc := range []struct {
		name string
		env  []string
		want []string
	}{
		{"a different value", []string{"PROXMOPS_SERVER_DATABASEPATH=/tmp/other.db"},
			[]string{"environment variable PROXMOPS_SERVER_DATABASEPATH overrides server.databasePath set in " + file}},
		{"the same value", []string{"PROXMOPS_SOURCE_CACHEDIR=/srv/cache"}, nil},
		{"a key the file does not set", []string{"PROXMOPS_RECONCILE_INTERVAL=90s"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, warnings, err := Load(LoadOptions{File: file, Env: tc.env})
			if err != nil {
				t.Fatal(err)
			}
			if got := warningsSaying(warnings, "overrides"); !slices.Equal(got, tc.want) {
				t.Fatalf("warnings %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCLISection(t *testing.T) {
	dir := t.TempDir()
	tokenFile := writeFile(t, dir, "cli-token", "pmt_abc\n")
	file := writeFile(t, dir, "proxmops.yaml", "cli:\n  server: https://proxmops.example.com:8080\n  tokenFile: cli-token\n")
	c, _, err := Load(LoadOptions{File: file, Env: []string{}})
	if err != nil || c.CLI.Token != "pmt_abc" || c.CLI.TokenFile != tokenFile || c.CLI.Server != "https://proxmops.example.com:8080" {
		t.Fatalf("%v %+v", err, c.CLI)
	}
	if c.Redacted().CLI.Token != "(set)" {
		t.Fatalf("the CLI token is not redacted")
	}
	if _, _, err := Load(LoadOptions{Env: []string{"PROXMOPS_CLI_SERVER=proxmops:8080"}}); err == nil || !strings.Contains(err.Error(), "cli.server") {
		t.Fatalf("a server without a scheme: %v", err)
	}
}
