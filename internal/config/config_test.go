package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// envCase is a configuration given by environment variables alone: either
// Load fails mentioning errorHas, or check holds and the warnings are none
// (warning "") or mention warning.
type envCase struct {
	name     string
	env      []string
	check    func(*Config) bool
	warning  string
	errorHas string
}

func runEnvCases(t *testing.T, tests []envCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, warnings, err := Load(LoadOptions{Env: tt.env})
			if tt.errorHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errorHas) {
					t.Fatalf("err = %v, want mention of %q", err, tt.errorHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Errorf("unexpected config %+v", c.Redacted())
			}
			joined := strings.Join(warnings, "\n")
			if tt.warning == "" && len(warnings) > 0 {
				t.Errorf("unexpected warnings %v", warnings)
			}
			if tt.warning != "" && !strings.Contains(joined, tt.warning) {
				t.Errorf("warnings %v lack %q", warnings, tt.warning)
			}
		})
	}
}

// warningsSaying is the warnings that contain word, in order.
func warningsSaying(warnings []string, word string) []string {
	var out []string
	for _, w := range warnings {
		if strings.Contains(w, word) {
			out = append(out, w)
		}
	}
	return out
}

func TestDefaults(t *testing.T) {
	c, warnings, err := Load(LoadOptions{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %v", warnings)
	}
	if c.Reconcile.Interval != 60*time.Second || !c.Reconcile.AutoSync || c.Reconcile.Prune ||
		c.Reconcile.Concurrency != 4 || c.Reconcile.DriftCheckInterval != 10*time.Minute || c.Server.Addr != ":8080" || c.Server.DatabasePath != "proxmops.db" ||
		c.Log.Format != "text" || c.Log.Level != "info" || !c.Source.Submodules || c.Source.Username != "x-access-token" ||
		c.Source.CacheDir == "" {
		t.Errorf("unexpected defaults: %+v", c)
	}
}

func TestLoadProductExample(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "git-token", "ghp_secret\n")
	writeFile(t, dir, "ca.pem", "x")
	cfg := writeFile(t, dir, "proxmops.yaml", `
cluster:
  endpoint: https://pve.example.com:8006/api2/json
  tokenId: proxmops@pve!gitops
  tokenSecret: ${PROXMOPS_CLUSTER_TOKENSECRET}   # ${VAR} expands from the environment
  insecureSkipVerify: false
  fingerprint: "ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67:89"
  caFile: ca.pem
source:
  repoURL: https://github.com/you/homelab.git
  path: proxmox/
  revision: main
  tokenFile: git-token
  submodules: true
reconcile:
  interval: 90s
  autoSync: true
  prune: false
  concurrency: 8
  dryRun: false
server:
  addr: :9090
  databasePath: /var/lib/proxmops/proxmops.db
log:
  format: json
  level: debug
`)
	// The environment variable used by ${...} is also the variable that sets
	// the key directly; both routes give the same value.
	c, warnings, err := Load(LoadOptions{File: cfg, Env: []string{"PROXMOPS_CLUSTER_TOKENSECRET=uuid-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %v", warnings)
	}
	want := map[string]any{
		"endpoint":    c.Cluster.Endpoint == "https://pve.example.com:8006/api2/json",
		"tokenId":     c.Cluster.TokenID == "proxmops@pve!gitops",
		"tokenSecret": c.Cluster.TokenSecret == "uuid-1",
		"fingerprint": strings.HasPrefix(c.Cluster.Fingerprint, "AB:CD:EF:01"),
		"caFile":      c.Cluster.CAFile == filepath.Join(dir, "ca.pem"),
		"path":        c.Source.Path == "proxmox",
		"token":       c.Source.Token == "ghp_secret",
		"interval":    c.Reconcile.Interval == 90*time.Second,
		"concurrency": c.Reconcile.Concurrency == 8,
		"addr":        c.Server.Addr == ":9090",
		"log":         c.Log.Format == "json" && c.Log.Level == "debug",
	}
	for k, ok := range want {
		if ok != true {
			t.Errorf("%s wrong: %+v", k, c)
		}
	}
}

func TestFileErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		env  []string
		want []string // substrings of the error, each required
	}{
		{"misspelt key", "cluster:\n  endpont: https://x\n", nil,
			[]string{":2:3:", "unknown key `endpont`", "did you mean `endpoint`?"}},
		{"wrong case", "cluster:\n  tokenid: a@pve!b\n", nil,
			[]string{":2:3:", "did you mean `tokenId`?"}},
		{"misspelt section", "reconcle:\n  prune: true\n", nil,
			[]string{":1:1:", "unknown section `reconcle`", "did you mean `reconcile`?"}},
		{"wrong type", "reconcile:\n  concurrency: many\n", nil,
			[]string{":2:16:", "reconcile.concurrency", "not a whole number"}},
		{"bad duration", "reconcile:\n  interval: soon\n", nil,
			[]string{":2:13:", "not a duration"}},
		{"duplicate key", "server:\n  addr: :1\n  addr: :2\n", nil,
			[]string{":3:", "duplicate"}},
		{"syntax", "cluster: [\n", nil, []string{"YAML syntax"}},
		{"unset variable", "cluster:\n  tokenSecret: ${NOPE}\n", nil,
			[]string{":2:16:", "NOPE is not set"}},
		{"section not a mapping", "cluster: 3\n", nil, []string{"expected a mapping"}},
		{"value not scalar", "source:\n  path: [a, b]\n", nil, []string{"source.path", "expected a single value"}},
		{"alias", "a: &x 1\n", nil, []string{"unknown section `a`"}},
		{"alias value", "server:\n  addr: &a :1\n  databasePath: *a\n", nil, []string{"aliases are not allowed"}},
		{"every problem reported", "cluster:\n  endpont: x\nsource:\n  revison: main\n", nil,
			[]string{"2 problems", "endpont", "revison", "did you mean `revision`?"}},
		{"not a mapping", "- a\n- b\n", nil, []string{"must be a mapping of sections"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := writeFile(t, t.TempDir(), "c.yaml", tt.yaml)
			_, _, err := Load(LoadOptions{File: cfg, Env: tt.env})
			if err == nil {
				t.Fatal("no error")
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error is %T, want *config.Error", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestMissingFile(t *testing.T) {
	_, _, err := Load(LoadOptions{File: filepath.Join(t.TempDir(), "none.yaml"), Env: []string{}})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("err = %v", err)
	}
}

func TestEnvironmentExpansion(t *testing.T) {
	env := func(name string) (string, bool) {
		v, ok := map[string]string{"A": "1", "EMPTY": ""}[name]
		return v, ok
	}
	tests := []struct {
		in, want string
		err      bool
	}{
		{"plain", "plain", false},
		{"${A}", "1", false},
		{"x${A}y${A}", "x1y1", false},
		{"${B:-def}", "def", false},
		{"${EMPTY:-def}", "def", false},
		{"${EMPTY}", "", false},
		{"$${A}", "${A}", false},
		{"pa$$word$", "pa$$word$", false},
		{"${B}", "", true},
		{"${A", "", true},
		{"${1A}", "", true},
	}
	for _, tt := range tests {
		got, _, err := expandEnv(tt.in, env)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("expandEnv(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestPrecedenceFileEnvFlags(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "c.yaml", "server:\n  addr: :1000\nreconcile:\n  prune: false\n  concurrency: 2\n  interval: 30s\n")
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	flags := BindFlags(fs, "server.addr", "reconcile.prune", "reconcile.interval", "reconcile.concurrency")
	if err := fs.Parse([]string{"--config", cfg, "--addr", "127.0.0.1:3000"}); err != nil {
		t.Fatal(err)
	}
	if flags.ConfigFile() != cfg {
		t.Fatalf("ConfigFile = %q", flags.ConfigFile())
	}
	c, _, err := Load(LoadOptions{File: flags.ConfigFile(), Flags: flags, Env: []string{
		"PROXMOPS_SERVER_ADDR=:2000", "PROXMOPS_RECONCILE_PRUNE=true", "PROXMOPS_RECONCILE_CONCURRENCY=6",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Addr != "127.0.0.1:3000" {
		t.Errorf("addr %q: the flag must win", c.Server.Addr)
	}
	if !c.Reconcile.Prune || c.Reconcile.Concurrency != 6 {
		t.Errorf("env must win over the file: %+v", c.Reconcile)
	}
	if c.Reconcile.Interval != 30*time.Second {
		t.Errorf("an unset flag must not override the file: %s", c.Reconcile.Interval)
	}
}

func TestEnvironment(t *testing.T) {
	dir := t.TempDir()
	keyFile := writeFile(t, dir, "key", "-----BEGIN KEY-----\nabc\n-----END KEY-----\n")
	tests := []envCase{
		{"git token", []string{"PROXMOPS_GIT_TOKEN=t1"}, func(c *Config) bool { return c.Source.Token == "t1" }, "", ""},
		{"specific token wins", []string{"PROXMOPS_GIT_TOKEN=t1", "PROXMOPS_SOURCE_TOKEN=t2"}, func(c *Config) bool { return c.Source.Token == "t2" }, "", ""},
		{"database path", []string{"PROXMOPS_SERVER_DATABASEPATH=/tmp/x.db"}, func(c *Config) bool { return c.Server.DatabasePath == "/tmp/x.db" }, "", ""},
		{"postgres database", []string{"PROXMOPS_SERVER_DATABASE=postgres://proxmops@db/proxmops", "PROXMOPS_SERVER_KEYFILE=/etc/proxmops/db.key"}, func(c *Config) bool {
			return c.Server.Database == "postgres://proxmops@db/proxmops" && c.Server.DatabasePath == "" && c.Server.KeyFile == "/etc/proxmops/db.key"
		}, "", ""},
		{"postgresql scheme", []string{"PROXMOPS_SERVER_DATABASE=postgresql:///proxmops?host=/run/postgresql"}, func(c *Config) bool { return c.Server.DatabasePath == "" }, "", ""},
		{"database not postgres", []string{"PROXMOPS_SERVER_DATABASE=mysql://u:hunter2@db/p"}, nil, "", "not a postgres:// or postgresql:// URL"},
		{"database and databasePath", []string{"PROXMOPS_SERVER_DATABASE=postgres://db/p", "PROXMOPS_SERVER_DATABASEPATH=/var/lib/proxmops/p.db"}, nil, "", "server.databasePath (SQLite, /var/lib/proxmops/p.db) are both set"},
		{"ssh key file", []string{"PROXMOPS_SOURCE_SSHKEYFILE=" + keyFile}, func(c *Config) bool {
			return strings.HasPrefix(c.Source.SSHKey, "-----BEGIN KEY-----") && strings.HasSuffix(c.Source.SSHKey, "-----\n")
		}, "", ""},
		{"interval as seconds", []string{"PROXMOPS_RECONCILE_INTERVAL=15"}, func(c *Config) bool { return c.Reconcile.Interval == 15*time.Second }, "", ""},
		{"unknown variable", []string{"PROXMOPS_CLUSTER_TOKEN_SECRET=x"}, func(*Config) bool { return true }, "did you mean `PROXMOPS_CLUSTER_TOKENSECRET`?", ""},
		{"unrelated variable ignored", []string{"PROXMOPS_DEMO_SPEED=2"}, func(*Config) bool { return true }, "", ""},
		{"bad bool", []string{"PROXMOPS_RECONCILE_PRUNE=maybe"}, nil, "", "PROXMOPS_RECONCILE_PRUNE"},
		{"missing secret file", []string{"PROXMOPS_CLUSTER_TOKENSECRETFILE=" + filepath.Join(dir, "nope")}, nil, "", "cluster.tokenSecretFile"},
	}
	runEnvCases(t, tests)
}

func TestInlineSecretWarnings(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", "cluster:\n  tokenSecret: abc\nsource:\n  token: \"${T}\"\n  sshKey: |\n    -----BEGIN-----\n")
	c, warnings, err := Load(LoadOptions{File: cfg, Env: []string{"T=tok"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster.TokenSecret != "abc" || c.Source.Token != "tok" || c.Source.SSHKey != "-----BEGIN-----\n" {
		t.Fatalf("secrets not loaded: %+v", c)
	}
	joined := strings.Join(warnings, "\n")
	if !strings.Contains(joined, ":2: cluster.tokenSecret is written inline") || !strings.Contains(joined, "cluster.tokenSecretFile") {
		t.Errorf("missing tokenSecret warning: %v", warnings)
	}
	if !strings.Contains(joined, ":5: source.sshKey is written inline") {
		t.Errorf("missing sshKey warning: %v", warnings)
	}
	if strings.Contains(joined, "source.token ") {
		t.Errorf("a ${VAR} secret must not warn: %v", warnings)
	}
	if r := c.Redacted(); r.Cluster.TokenSecret != "(set)" || c.Cluster.TokenSecret != "abc" {
		t.Errorf("Redacted changed the original or did not redact")
	}
}

func TestValidation(t *testing.T) {
	tests := []envCase{
		{"endpoint without path", []string{"PROXMOPS_CLUSTER_ENDPOINT=https://pve:8006"}, func(c *Config) bool { return c.Cluster.Endpoint == "https://pve:8006/api2/json" }, "", ""},
		{"endpoint trailing slash", []string{"PROXMOPS_CLUSTER_ENDPOINT=https://pve:8006/api2/json/"}, func(c *Config) bool { return c.Cluster.Endpoint == "https://pve:8006/api2/json" }, "", ""},
		{"endpoint behind proxy", []string{"PROXMOPS_CLUSTER_ENDPOINT=https://h/pve"}, func(c *Config) bool { return c.Cluster.Endpoint == "https://h/pve/api2/json" }, "", ""},
		{"endpoint scheme", []string{"PROXMOPS_CLUSTER_ENDPOINT=pve:8006"}, nil, "", "must start with https://"},
		{"endpoint ftp", []string{"PROXMOPS_CLUSTER_ENDPOINT=ftp://pve"}, nil, "", "must start with https://"},
		{"token id", []string{"PROXMOPS_CLUSTER_TOKENID=root@pam"}, nil, "", "USER@REALM!TOKENID"},
		{"token id ok", []string{"PROXMOPS_CLUSTER_TOKENID=root@pam!proxmops"}, func(c *Config) bool { return true }, "", ""},
		{"interval zero", []string{"PROXMOPS_RECONCILE_INTERVAL=0s"}, nil, "", "greater than zero"},
		{"concurrency zero", []string{"PROXMOPS_RECONCILE_CONCURRENCY=0"}, nil, "", "at least 1"},
		{"drift check every pass", []string{"PROXMOPS_RECONCILE_DRIFTCHECKINTERVAL=0"}, func(c *Config) bool { return c.Reconcile.DriftCheckInterval == 0 }, "", ""},
		{"drift check as seconds", []string{"PROXMOPS_RECONCILE_DRIFTCHECKINTERVAL=300"}, func(c *Config) bool { return c.Reconcile.DriftCheckInterval == 5*time.Minute }, "", ""},
		{"drift check negative", []string{"PROXMOPS_RECONCILE_DRIFTCHECKINTERVAL=-1m"}, nil, "", "reconcile.driftCheckInterval: must be zero (every pass) or more"},
		{"log format", []string{"PROXMOPS_LOG_FORMAT=xml"}, nil, "", "text or json"},
		{"log level warning", []string{"PROXMOPS_LOG_LEVEL=WARNING"}, func(c *Config) bool { return c.Log.Level == "warn" }, "", ""},
		{"addr", []string{"PROXMOPS_SERVER_ADDR=8080"}, nil, "", "not host:port"},
		{"tls half", []string{"PROXMOPS_SERVER_TLSCERTFILE=/x"}, nil, "", "set both or neither"},
		{"fingerprint", []string{"PROXMOPS_CLUSTER_FINGERPRINT=abc"}, nil, "", "SHA-256"},
		{"path escapes", []string{"PROXMOPS_SOURCE_PATH=../x"}, nil, "", "outside the repository"},
		{"path absolute", []string{"PROXMOPS_SOURCE_PATH=/x"}, nil, "", "relative"},
		{"path dot", []string{"PROXMOPS_SOURCE_PATH=./"}, func(c *Config) bool { return c.Source.Path == "" }, "", ""},
		{"repo scheme", []string{"PROXMOPS_SOURCE_REPOURL=ftp://h/x"}, nil, "", "not supported"},
		{"repo password", []string{"PROXMOPS_SOURCE_REPOURL=https://u:p@h/x"}, nil, "", "must not hold a password"},
		{"repo scp", []string{"PROXMOPS_SOURCE_REPOURL=git@h:org/x.git"}, func(c *Config) bool { return c.Source.RepoURL == "git@h:org/x.git" }, "", ""},
		{"several at once", []string{"PROXMOPS_RECONCILE_CONCURRENCY=0", "PROXMOPS_LOG_FORMAT=xml"}, nil, "", "2 problems"},
	}
	runEnvCases(t, tests)
}

func TestRequire(t *testing.T) {
	c, _, err := Load(LoadOptions{Env: []string{"PROXMOPS_CLUSTER_TOKENID=a@pve!b"}})
	if err != nil {
		t.Fatal(err)
	}
	err = c.RequireCluster()
	if err == nil || !strings.Contains(err.Error(), "cluster.endpoint") || !strings.Contains(err.Error(), "cluster.tokenSecret") ||
		strings.Contains(err.Error(), "cluster.tokenId") {
		t.Errorf("RequireCluster: %v", err)
	}
	if err := c.RequireSource(); err == nil || !strings.Contains(err.Error(), "source.repoURL") {
		t.Errorf("RequireSource: %v", err)
	}
}

func TestRelativePathsFollowTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "secret", "s3cret")
	cfg := writeFile(t, dir, "c.yaml", "cluster:\n  tokenSecretFile: secret\nsource:\n  repoURL: ./manifests\nserver:\n  databasePath: data/p.db\n")
	c, _, err := Load(LoadOptions{File: cfg, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster.TokenSecret != "s3cret" || c.Source.RepoURL != filepath.Join(dir, "manifests") || c.Server.DatabasePath != filepath.Join(dir, "data/p.db") {
		t.Errorf("paths not resolved against %s: %+v", dir, c)
	}
}

func TestOverlay(t *testing.T) {
	base, _, err := Load(LoadOptions{Env: []string{"PROXMOPS_CLUSTER_ENDPOINT=https://a:8006", "PROXMOPS_SOURCE_REVISION=main"}})
	if err != nil {
		t.Fatal(err)
	}
	o, err := ParseOverlay([]byte(`{"cluster":{"endpoint":"https://b:8006","tokenSecret":"ui-secret"},"source":{"token":"ui-token","submodules":false},"reconcile":{"interval":"2m","prune":true,"driftCheckInterval":"0s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := base.WithOverlay(o)
	if err != nil {
		t.Fatal(err)
	}
	if n.Cluster.Endpoint != "https://b:8006/api2/json" || n.Cluster.TokenSecret != "ui-secret" || n.Source.Token != "ui-token" ||
		n.Source.Submodules || n.Source.Revision != "main" || n.Reconcile.Interval != 2*time.Minute || !n.Reconcile.Prune ||
		n.Reconcile.DriftCheckInterval != 0 {
		t.Errorf("overlay not applied: %+v", n)
	}
	if base.Cluster.Endpoint != "https://a:8006/api2/json" || base.Reconcile.Prune {
		t.Errorf("WithOverlay changed its receiver")
	}
	if _, err := ParseOverlay([]byte(`{"cluster":{"endpont":"x"}}`)); err == nil || !strings.Contains(err.Error(), "did you mean `endpoint`?") {
		t.Errorf("ParseOverlay unknown key: %v", err)
	}
	bad := "0s"
	if _, _, err := base.WithOverlay(Overlay{Reconcile: &ReconcileOverlay{Interval: &bad}}); err == nil {
		t.Error("an invalid overlay must be refused")
	}
	never := "often"
	if _, _, err := base.WithOverlay(Overlay{Reconcile: &ReconcileOverlay{DriftCheckInterval: &never}}); err == nil ||
		!strings.Contains(err.Error(), "reconcile.driftCheckInterval") {
		t.Errorf("an unreadable driftCheckInterval must be refused naming the key: %v", err)
	}
}

func TestBindFlags(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	BindFlags(fs, "server.addr", "source.revision", "reconcile.dryRun", "cluster.tokenId", "log.level", "server.databasePath", "source.repoURL")
	for _, name := range []string{"config", "addr", "revision", "dry-run", "token-id", "log-level", "database", "repo"} {
		if fs.Lookup(name) == nil {
			t.Errorf("flag --%s missing", name)
		}
	}
	if got := FlagName("server.tlsCertFile"); got != "tls-cert-file" {
		t.Errorf("FlagName = %q", got)
	}
	for _, bad := range []string{"cluster.tokenSecret", "no.such"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("BindFlags(%q) did not panic", bad)
				}
			}()
			BindFlags(pflag.NewFlagSet("y", pflag.ContinueOnError), bad)
		}()
	}
}

func TestKeysAndEnvNames(t *testing.T) {
	keys := Keys()
	for _, want := range []string{"cluster.tokenSecretFile", "source.sshKeyFile", "reconcile.historyTotal", "server.trustProxy", "log.format"} {
		if !slices.Contains(keys, want) {
			t.Errorf("key %s missing", want)
		}
	}
	if EnvName("cluster.tokenSecret") != "PROXMOPS_CLUSTER_TOKENSECRET" || EnvName("server.databasePath") != "PROXMOPS_SERVER_DATABASEPATH" {
		t.Error("env names wrong")
	}
}

func TestPrivileges(t *testing.T) {
	granted := map[string]bool{}
	for _, n := range RequiredPrivilegeNames() {
		granted[n] = true
	}
	if m := MissingPrivileges(granted); len(m) != 0 {
		t.Errorf("missing %v", m)
	}
	delete(granted, "VM.Clone")
	if m := MissingPrivileges(granted); len(m) != 1 || m[0].Name != "VM.Clone" {
		t.Errorf("missing %v", m)
	}
	for _, p := range RequiredPrivileges {
		if p.Name == "VM.Monitor" {
			t.Error("VM.Monitor does not exist on Proxmox VE 9")
		}
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"endpoint", "tokenId", "tokenSecret", "tokenSecretFile"}
	tests := map[string]string{"endpont": "endpoint", "TOKENID": "tokenId", "tokensecretfle": "tokenSecretFile", "zzz": ""}
	for in, want := range tests {
		if got := suggest(in, names); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMetricsTokenIsASecretFromEnvOrFile(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "metrics-token")
	os.WriteFile(tokFile, []byte("scrape-token-1\n"), 0o600)
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("server:\n  metricsTokenFile: metrics-token\n"), 0o600)
	c, _, err := Load(LoadOptions{File: cfg, Env: []string{}})
	if err != nil || c.Server.MetricsToken != "scrape-token-1" {
		t.Fatalf("from the file: %q %v", c.Server.MetricsToken, err)
	}
	if r := c.Redacted(); r.Server.MetricsToken != "(set)" {
		t.Fatalf("not redacted: %q", r.Server.MetricsToken)
	}
	c, _, err = Load(LoadOptions{Env: []string{"PROXMOPS_SERVER_METRICSTOKEN=from-env"}})
	if err != nil || c.Server.MetricsToken != "from-env" {
		t.Fatalf("from the environment: %q %v", c.Server.MetricsToken, err)
	}
	os.WriteFile(cfg, []byte("server:\n  metricsToken: inline\n"), 0o600)
	_, warnings, _ := Load(LoadOptions{File: cfg, Env: []string{}})
	if !strings.Contains(strings.Join(warnings, "\n"), "server.metricsTokenFile") {
		t.Fatalf("an inline token does not warn: %v", warnings)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("server.metricsToken became a flag")
		}
	}()
	BindFlags(pflag.NewFlagSet("m", pflag.ContinueOnError), "server.metricsToken")
}

func TestDatabaseURLPasswordNeverShown(t *testing.T) {
	for _, u := range []string{"postgres://proxmops:hunter2@db:5432/p", "postgres://db/p?password=hunter2&sslmode=require", "mysql://u:hunter2@db/p"} {
		c := Defaults()
		c.Server.Database = u
		if r := c.Redacted().Server.Database; strings.Contains(r, "hunter2") || !strings.Contains(r, "db") {
			t.Errorf("redacted %q", r)
		}
		if err := CheckDatabaseURL(u); err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error shows the password: %v", err)
		}
	}
}

// A setting saved in the UI that overrides a value the file, environment or
// a flag gave is named in a warning (logged at start, listed by the Settings
// page); one that only replaces a default, or agrees, is not. Secrets are
// named without their values.
func TestOverlayNamesTheSettingsThatShadowTheConfiguration(t *testing.T) {
	base, _, err := Load(LoadOptions{Env: []string{"PROXMOPS_SOURCE_REVISION=main", "PROXMOPS_SOURCE_TOKEN=file-token",
		"PROXMOPS_RECONCILE_INTERVAL=90s", "PROXMOPS_RECONCILE_PRUNE=true"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, overlay string
		want          []string
	}{
		{"a value over the configuration's", `{"source":{"revision":"dev"}}`,
			[]string{`source.revision saved in the UI (dev) shadows the configuration's (main)`}},
		{"a secret over the configuration's", `{"source":{"token":"ui-token"}}`,
			[]string{`source.token saved in the UI shadows the configuration's: the UI's is in force`}},
		{"a duration and a bool", `{"reconcile":{"interval":"2m","prune":false}}`,
			[]string{`reconcile.interval saved in the UI (2m0s) shadows the configuration's (1m30s)`, `reconcile.prune saved in the UI (false) shadows the configuration's (true)`}},
		{"the same value", `{"source":{"revision":"main"}}`, nil},
		{"over a default", `{"source":{"path":"proxmox"},"reconcile":{"autoSync":false}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := ParseOverlay([]byte(tt.overlay))
			if err != nil {
				t.Fatal(err)
			}
			_, warnings, err := base.WithOverlay(o)
			if err != nil {
				t.Fatal(err)
			}
			shadows := warningsSaying(warnings, "shadows")
			for _, w := range shadows {
				if strings.Contains(w, "ui-token") || strings.Contains(w, "file-token") {
					t.Errorf("a warning shows a secret: %s", w)
				}
			}
			if len(shadows) != len(tt.want) {
				t.Fatalf("warnings %q, want %d naming %q", shadows, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(shadows[i], w) {
					t.Errorf("warning %q, want it to say %q", shadows[i], w)
				}
			}
		})
	}
}
