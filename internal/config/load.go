package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// LoadOptions says where Load takes the configuration from.
type LoadOptions struct {
	// File is the config file. When empty, $PROXMOPS_CONFIG is used; when
	// that is empty too, the service's file (ServiceConfigFile) if it
	// exists; else there is no file and only defaults, environment and
	// flags apply. A named file that does not exist is an error.
	File string
	// Env is the environment as "KEY=value" strings; nil means os.Environ().
	Env []string
	// Flags are the command's flags from BindFlags; nil for none.
	Flags *Flags
}

// Env names that are not PROXMOPS_<SECTION>_<KEY>.
const (
	EnvConfigFile = "PROXMOPS_CONFIG"
	EnvGitToken   = "PROXMOPS_GIT_TOKEN"
)

// Load builds the configuration from defaults, the config file, the
// environment and the flags, in that order of precedence (last wins);
// then reads secrets from their files, normalises and validates. It
// returns warnings for the caller to log (inline secrets, unknown PROXMOPS_
// variables). Errors are *Error, listing every problem found.
func Load(opts LoadOptions) (*Config, []string, error) {
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	envMap := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			envMap[k] = v
		}
	}
	lookup := func(name string) (string, bool) {
		v, ok := envMap[name]
		return v, ok
	}

	c := Defaults()
	var warnings []string
	var probs problems

	file, err := configFile(opts.File, envMap[EnvConfigFile])
	if err != nil {
		return nil, nil, err
	}
	fileSet := map[string]bool{}
	if file != "" {
		if isServiceFile(file) {
			// The service's configuration means the service's state, for
			// the daemon and the CLI alike, unless the file says otherwise.
			c.Server.DatabasePath, c.Source.CacheDir = ServiceDatabasePath, ServiceCacheDir
			c.defaultDatabasePath = ServiceDatabasePath
		}
		data, err := os.ReadFile(file)
		if err != nil {
			msg := err.Error()
			if errors.Is(err, fs.ErrNotExist) {
				msg = "config file does not exist"
			}
			return nil, nil, &Error{Problems: []Problem{{File: file, Message: msg}}}
		}
		l := &fileLayer{name: file, lookup: lookup}
		l.apply(c, data)
		if err := l.probs.err(); err != nil {
			return nil, l.warnings, err
		}
		warnings = append(warnings, l.warnings...)
		resolvePaths(c, l.set, filepath.Dir(file))
		resolveClusterPaths(c, filepath.Dir(file))
		fileSet = l.set
	}

	warnings = append(warnings, envOverrides(c, envMap, fileSet, file)...)
	warnings = append(warnings, applyEnv(c, envMap, &probs)...)
	if opts.Flags != nil {
		opts.Flags.apply(c)
	}
	if err := probs.err(); err != nil {
		return nil, warnings, err
	}
	w, err := c.finish()
	warnings = append(warnings, w...)
	if err != nil {
		return nil, warnings, err
	}
	return c, warnings, nil
}

// The service's configuration file and state, as the installer, the
// packages and their systemd unit lay them out.
const (
	ServiceDatabasePath = "/var/lib/proxmops/proxmops.db"
	ServiceCacheDir     = "/var/cache/proxmops/git"
)

// ServiceConfigFile is read when neither --config nor PROXMOPS_CONFIG
// names a file and it exists, so the CLI on the daemon's machine shares
// the daemon's configuration and state. A variable for tests.
var ServiceConfigFile = "/etc/proxmops/proxmops.yaml"

// configFile is the config file to read: the one given, else
// $PROXMOPS_CONFIG, else the service's when it exists; "" for none.
func configFile(given, fromEnv string) (string, error) {
	if given != "" {
		return given, nil
	}
	if fromEnv != "" {
		return fromEnv, nil
	}
	_, err := os.Stat(ServiceConfigFile)
	switch {
	case err == nil:
		return ServiceConfigFile, nil
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	}
	return "", &Error{Problems: []Problem{{File: ServiceConfigFile, Message: fmt.Sprintf(
		"the service's configuration cannot be read (%v): run as root or a member of group proxmops, or name another file with --config or %s", err, EnvConfigFile)}}}
}

func isServiceFile(file string) bool {
	abs, err := filepath.Abs(file)
	return err == nil && abs == filepath.Clean(ServiceConfigFile)
}

// envOverrides warns of each environment variable that changes a key the
// config file sets (c holds the file's values): the file is then not what
// is in force, and says so.
func envOverrides(c *Config, env map[string]string, fileSet map[string]bool, file string) []string {
	var warnings []string
	for _, k := range allKeys {
		v, ok := env[k.EnvName()]
		if !ok || !fileSet[k.Path()] {
			continue
		}
		tmp := c.Clone()
		if k.set(tmp, v) == nil && !reflect.DeepEqual(k.field(tmp).Interface(), k.field(c).Interface()) {
			warnings = append(warnings, fmt.Sprintf("environment variable %s overrides %s set in %s", k.EnvName(), k.Path(), file))
		}
	}
	return warnings
}

// resolvePaths makes relative file names given in the config file relative
// to the file's own directory, so a config works from any working
// directory. A relative local repoURL is resolved the same way.
func resolvePaths(c *Config, set map[string]bool, dir string) {
	for _, k := range allKeys {
		if !set[k.Path()] || !(k.isPath || k.Path() == "source.repoURL") {
			continue
		}
		v := k.field(c)
		p := v.String()
		if p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "~") {
			continue
		}
		if k.Path() == "source.repoURL" && !isLocalPath(p) {
			continue
		}
		v.SetString(filepath.Join(dir, p))
	}
}

// applyEnv applies PROXMOPS_<SECTION>_<KEY> and PROXMOPS_GIT_TOKEN.
func applyEnv(c *Config, env map[string]string, probs *problems) []string {
	var warnings []string
	known := map[string]bool{EnvConfigFile: true, EnvGitToken: true}
	for _, k := range allKeys {
		known[k.EnvName()] = true
		v, ok := env[k.EnvName()]
		if !ok {
			continue
		}
		if err := k.set(c, v); err != nil {
			probs.add(Problem{Key: k.Path(), Message: fmt.Sprintf("environment variable %s: %v", k.EnvName(), err)})
		}
	}
	applyClusterEnv(c, env, probs, known)
	if tok, ok := env[EnvGitToken]; ok {
		if _, specific := env[keyByPath["source.token"].EnvName()]; !specific {
			c.Source.Token = tok
		}
	}
	var names []string
	for name := range known {
		names = append(names, name)
	}
	for name := range env {
		if !strings.HasPrefix(name, "PROXMOPS_") || known[name] {
			continue
		}
		// Only names that look like config keys are ours to judge; other
		// PROXMOPS_ variables may belong to scripts around proxmops.
		for _, s := range sectionNames {
			if strings.HasPrefix(name, "PROXMOPS_"+strings.ToUpper(s)+"_") {
				warnings = append(warnings, fmt.Sprintf("environment variable %s is not a configuration key%s", name, didYouMean(name, names)))
				break
			}
		}
	}
	slices.Sort(warnings)
	return warnings
}

// finish reads secrets from their files, normalises values and validates.
func (c *Config) finish() ([]string, error) {
	var warnings []string
	var probs problems
	readSecret := func(valueKey string, value *string, file string) {
		if file == "" {
			return
		}
		if *value != "" {
			warnings = append(warnings, fmt.Sprintf("%s and %sFile are both set; using %s", valueKey, valueKey, valueKey))
			return
		}
		data, err := os.ReadFile(file)
		if err != nil {
			probs.addf(valueKey+"File", "cannot read secret: %v", err)
			return
		}
		s := strings.TrimRight(string(data), "\r\n\t ")
		if s == "" {
			probs.addf(valueKey+"File", "%s is empty", file)
			return
		}
		*value = s
	}
	readSecret("cluster.tokenSecret", &c.Cluster.TokenSecret, c.Cluster.TokenSecretFile)
	c.readClusterSecrets(readSecret)
	readSecret("source.token", &c.Source.Token, c.Source.TokenFile)
	readSecret("server.webhookSecret", &c.Server.WebhookSecret, c.Server.WebhookSecretFile)
	readSecret("server.metricsToken", &c.Server.MetricsToken, c.Server.MetricsTokenFile)
	readSecret("cli.token", &c.CLI.Token, c.CLI.TokenFile)
	readSecret("forge.token", &c.Forge.Token, c.Forge.TokenFile)
	readSecret("auth.oidc.clientSecret", &c.Auth.OIDC.ClientSecret, c.Auth.OIDC.ClientSecretFile)
	if c.Source.SSHKeyFile != "" && c.Source.SSHKey == "" {
		// A key keeps its final newline: some parsers want it.
		readSecret("source.sshKey", &c.Source.SSHKey, c.Source.SSHKeyFile)
		if c.Source.SSHKey != "" {
			c.Source.SSHKey += "\n"
		}
	} else {
		readSecret("source.sshKey", &c.Source.SSHKey, c.Source.SSHKeyFile)
	}
	w := c.validate(&probs)
	warnings = append(warnings, w...)
	return warnings, probs.err()
}
