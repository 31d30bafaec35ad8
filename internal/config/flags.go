package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// flagNames overrides the default flag name (the key in kebab case) where
// a shorter or clearer name reads better on a command line.
var flagNames = map[string]string{
	"server.addr":         "addr",
	"server.databasePath": "database",
	"server.database":     "database-url",
	"source.repoURL":      "repo",
	"source.path":         "path",
	"source.revision":     "revision",
	"reconcile.dryRun":    "dry-run",
	"log.format":          "log-format",
	"log.level":           "log-level",
}

// FlagName returns the command-line flag bound to a key by BindFlags.
func FlagName(path string) string {
	if n, ok := flagNames[path]; ok {
		return n
	}
	_, name, _ := strings.Cut(path, ".")
	var b strings.Builder
	for i, r := range name {
		if r == '.' { // a group's key: "oidc.clientID" -> "oidc-client-id"
			b.WriteByte('-')
			continue
		}
		if r >= 'A' && r <= 'Z' {
			// "tokenId" -> "token-id", "repoURL" -> "repo-url"
			if i > 0 && !(name[i-1] >= 'A' && name[i-1] <= 'Z') && name[i-1] != '.' {
				b.WriteByte('-')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Flags holds the flags one command bound with BindFlags; only flags the
// user actually gave override the file and the environment.
type Flags struct {
	fs         *pflag.FlagSet
	configFile string
	bound      []boundFlag
}

type boundFlag struct {
	key  key
	name string
	str  *string
	b    *bool
	n    *int
	d    *time.Duration
}

// BindFlags adds --config and one flag per key ("server.addr" gives
// --addr, see FlagName) to fs. Secrets cannot be bound: a command line is
// visible to every user of the machine. An unknown key panics, as it is a
// programming error caught by the command's first test.
func BindFlags(fs *pflag.FlagSet, keys ...string) *Flags {
	f := &Flags{fs: fs}
	fs.StringVar(&f.configFile, "config", "", "configuration file (YAML); default $PROXMOPS_CONFIG")
	def := Defaults()
	for _, path := range keys {
		k, ok := keyByPath[path]
		if !ok {
			panic(fmt.Sprintf("config.BindFlags: unknown key %q", path))
		}
		if k.secret {
			panic(fmt.Sprintf("config.BindFlags: %s is a secret and cannot be a flag", path))
		}
		bf := boundFlag{key: k, name: FlagName(path)}
		usage := fmt.Sprintf("%s (overrides %s and the config file)", flagUsage(path), k.EnvName())
		dv := k.field(def)
		switch {
		case k.typ == durationType:
			bf.d = fs.Duration(bf.name, time.Duration(dv.Int()), usage)
		case k.typ.Kind() == reflect.Bool:
			bf.b = fs.Bool(bf.name, dv.Bool(), usage)
		case k.typ.Kind() == reflect.Int:
			bf.n = fs.Int(bf.name, int(dv.Int()), usage)
		default:
			bf.str = fs.String(bf.name, dv.String(), usage)
		}
		f.bound = append(f.bound, bf)
	}
	return f
}

// ConfigFile is the value of --config, or "" when it was not given.
func (f *Flags) ConfigFile() string { return f.configFile }

// Load loads the configuration for a command: the --config file (or
// $PROXMOPS_CONFIG), the environment, then the flags given.
func (f *Flags) Load() (*Config, []string, error) {
	return Load(LoadOptions{File: f.configFile, Flags: f})
}

func (f *Flags) apply(c *Config) {
	for _, bf := range f.bound {
		if !f.fs.Changed(bf.name) {
			continue
		}
		v := bf.key.field(c)
		switch {
		case bf.d != nil:
			v.SetInt(int64(*bf.d))
		case bf.b != nil:
			v.SetBool(*bf.b)
		case bf.n != nil:
			v.SetInt(int64(*bf.n))
		default:
			v.SetString(*bf.str)
		}
	}
}

var flagUsageText = map[string]string{
	"cluster.endpoint":           "Proxmox VE API URL, e.g. https://pve:8006/api2/json",
	"cluster.tokenId":            "API token id, USER@REALM!TOKENID",
	"cluster.insecureSkipVerify": "do not verify the cluster's TLS certificate",
	"cluster.fingerprint":        "pin the cluster's certificate by SHA-256 fingerprint",
	"cluster.caFile":             "PEM file of CAs trusted for the cluster",
	"source.repoURL":             "Git repository URL or local directory of manifests",
	"source.path":                "directory of manifests inside the repository",
	"source.revision":            "branch, tag or commit to use",
	"source.submodules":          "check out Git submodules recursively",
	"source.cacheDir":            "directory for Git clones",
	"reconcile.interval":         "time between reconcile passes",
	"reconcile.autoSync":         "apply changes (false: detect and report only)",
	"reconcile.prune":            "delete owned resources whose manifest is gone",
	"reconcile.concurrency":      "actions run at once",
	"reconcile.dryRun":           "plan without acting",
	"server.addr":                "HTTP listen address",
	"server.databasePath":        "SQLite database file",
	"server.database":            "PostgreSQL URL (postgres://…) instead of the SQLite file",
	"server.keyFile":             "file holding the encryption key of the database's secrets",
	"server.tlsCertFile":         "serve HTTPS with this PEM certificate (chain); needs --tls-key-file",
	"server.tlsKeyFile":          "PEM private key of --tls-cert-file",
	"cli.server":                 "URL of the daemon to act through (its API token in PROXMOPS_CLI_TOKEN or cli.tokenFile)",
	"log.format":                 "log format: text or json",
	"log.level":                  "log level: debug, info, warn or error",
	"provision.sshKeyFile":       "private key proxmops logs in to guests with for spec.provision (default: generated, kept in the database)",
}

func flagUsage(path string) string {
	if u, ok := flagUsageText[path]; ok {
		return u
	}
	return path
}
