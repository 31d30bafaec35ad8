package config

import (
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// tokenIDPattern is USER@REALM!TOKENID as Proxmox VE accepts it: a user name
// without whitespace, colon or slash, a realm starting with a letter, and a
// token name starting with a letter.
var tokenIDPattern = regexp.MustCompile(`^[^\s:/@!]+@[A-Za-z][A-Za-z0-9.\-_]*![A-Za-z][A-Za-z0-9.\-_]*$`)

// validate normalises c and reports every problem, section by section in
// the file's order; it returns warnings.
func (c *Config) validate(probs *problems) []string {
	var warnings []string
	warnings = append(warnings, validateCluster("cluster.", &c.Cluster, probs)...)
	warnings = append(warnings, c.validateClusters(probs)...)
	warnings = append(warnings, c.validateNotifications(probs)...)
	if u := c.Server.PublicURL; u != "" {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			probs.addf("server.publicURL", "%q is not an http(s):// URL with a host, such as https://proxmops.lan", u)
		}
	}
	if c.Provision.SSHKeyFile != "" {
		if _, err := os.Stat(c.Provision.SSHKeyFile); err != nil {
			probs.addf("provision.sshKeyFile", "%v", err)
		}
	}
	warnings = append(warnings, c.Source.validate(probs)...)
	c.CLI.validate(probs)
	c.Reconcile.validate(probs)
	c.validateServer(probs)
	warnings = append(warnings, c.Auth.OIDC.validate(probs)...)
	c.HA.validate(probs)
	c.Log.validate(probs)
	return append(warnings, c.Forge.validate(probs, c.Server.PublicURL)...)
}

// validate checks the source section and fills its defaults (Git user
// name, cache directory); a token over plain http is a warning.
func (s *Source) validate(probs *problems) []string {
	var warnings []string
	if s.RepoURL != "" {
		if err := checkRepoURL(s.RepoURL); err != nil {
			probs.addf("source.repoURL", "%v", err)
		} else if strings.HasPrefix(strings.ToLower(s.RepoURL), "http://") && s.Token != "" {
			warnings = append(warnings, "source.repoURL uses plain http: the Git token is sent unencrypted")
		}
	}
	if p, err := CleanSourcePath(s.Path); err != nil {
		probs.addf("source.path", "%v", err)
	} else {
		s.Path = p
	}
	if s.Username == "" {
		s.Username = DefaultGitUsername
	}
	if s.KnownHostsFile != "" {
		if _, err := os.Stat(s.KnownHostsFile); err != nil {
			probs.addf("source.knownHostsFile", "%v", err)
		}
	}
	if s.CacheDir == "" {
		s.CacheDir = DefaultCacheDir()
	}
	return warnings
}

// validate checks the daemon's URL the command line talks to.
func (c *CLI) validate(probs *problems) {
	if c.Server == "" {
		return
	}
	u, err := url.Parse(c.Server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		probs.addf("cli.server", "%q is not the daemon's URL: want http(s)://host:port", c.Server)
	}
}

// validate checks the reconcile section's intervals and limits.
func (r *Reconcile) validate(probs *problems) {
	if r.Interval <= 0 {
		probs.addf("reconcile.interval", "must be greater than zero, got %s", r.Interval)
	}
	if r.Concurrency < 1 {
		probs.addf("reconcile.concurrency", "must be at least 1, got %d", r.Concurrency)
	}
	if r.DriftCheckInterval < 0 {
		probs.addf("reconcile.driftCheckInterval", "must be zero (every pass) or more, got %s", r.DriftCheckInterval)
	}
	if r.HistoryPerResource < 1 {
		probs.addf("reconcile.historyPerResource", "must be at least 1, got %d", r.HistoryPerResource)
	}
	if r.HistoryTotal < 1 {
		probs.addf("reconcile.historyTotal", "must be at least 1, got %d", r.HistoryTotal)
	}
}

// validateServer checks the server section: the listen address, one
// database (PostgreSQL or SQLite; PostgreSQL clears SQLite's default
// path) and the TLS files, both or neither.
func (c *Config) validateServer(probs *problems) {
	s := &c.Server
	if _, port, err := net.SplitHostPort(s.Addr); err != nil {
		probs.addf("server.addr", "%q is not host:port (e.g. :8080 or 127.0.0.1:8080)", s.Addr)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		probs.addf("server.addr", "port %q of %q is not a number from 0 to 65535", port, s.Addr)
	}
	switch {
	case s.Database != "":
		if err := CheckDatabaseURL(s.Database); err != nil {
			probs.addf("server.database", "%v", err)
		}
		// databasePath keeps meaning SQLite: only its default gives way.
		if s.DatabasePath != "" && s.DatabasePath != DefaultDatabasePath && s.DatabasePath != c.defaultDatabasePath {
			probs.addf("server.database", "server.database (PostgreSQL) and server.databasePath (SQLite, %s) are both set: keep one", s.DatabasePath)
		} else {
			s.DatabasePath = ""
		}
	case s.DatabasePath == "":
		probs.addf("server.databasePath", "must not be empty")
	}
	if (s.TLSCertFile == "") != (s.TLSKeyFile == "") {
		probs.addf("server.tlsCertFile", "tlsCertFile and tlsKeyFile go together: set both or neither")
	}
	for _, f := range []struct{ key, file string }{{"server.tlsCertFile", s.TLSCertFile}, {"server.tlsKeyFile", s.TLSKeyFile}} {
		if f.file != "" {
			if _, err := os.Stat(f.file); err != nil {
				probs.addf(f.key, "%v", err)
			}
		}
	}
}

// validate checks the high-availability section.
func (h *HA) validate(probs *problems) {
	if h.FailoverTimeout < time.Second {
		probs.addf("ha.failoverTimeout", "%s is below 1s", h.FailoverTimeout)
	}
	if u := h.AdvertiseURL; u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		probs.addf("ha.advertiseURL", "%q is not an http:// or https:// URL", u)
	}
}

// validate lower-cases the log format and level (warning reads as warn)
// and checks them.
func (l *Log) validate(probs *problems) {
	l.Format = strings.ToLower(l.Format)
	if l.Format != "text" && l.Format != "json" {
		probs.addf("log.format", "%q is not text or json", l.Format)
	}
	l.Level = strings.ToLower(l.Level)
	if l.Level == "warning" {
		l.Level = "warn"
	}
	switch l.Level {
	case "debug", "info", "warn", "error":
	default:
		probs.addf("log.level", "%q is not debug, info, warn or error", l.Level)
	}
}

// validate normalises and checks the forge section: nothing is needed
// unless pull-request previews are on.
func (f *Forge) validate(probs *problems, publicURL string) []string {
	f.Type = strings.ToLower(strings.TrimSpace(f.Type))
	f.APIURL = strings.TrimRight(strings.TrimSpace(f.APIURL), "/")
	f.Repository = strings.Trim(strings.TrimSpace(f.Repository), "/")
	switch f.Type {
	case "":
	case ForgeGitHub:
		if f.APIURL == "" {
			f.APIURL = DefaultGitHubAPI
		}
	case ForgeGitea, ForgeGitLab:
		if f.APIURL == "" && f.PullRequestPreviews {
			probs.addf("forge.apiURL", "%s needs the instance's address (https://git.example.com)", f.Type)
		}
	default:
		probs.addf("forge.type", "%q is not github, gitea or gitlab", f.Type)
	}
	if p, err := url.Parse(f.APIURL); f.APIURL != "" && (err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "") {
		probs.addf("forge.apiURL", "%q is not an http:// or https:// URL", f.APIURL)
	}
	if !f.PullRequestPreviews {
		return nil
	}
	if f.Type == "" {
		probs.addf("forge.type", "pull-request previews need the forge's type: github, gitea or gitlab")
	}
	if owner, name, ok := strings.Cut(f.Repository, "/"); !ok || owner == "" || name == "" {
		probs.addf("forge.repository", "%q is not owner/name (GitLab: the project's path)", f.Repository)
	}
	if f.Token == "" {
		probs.addf("forge.token", "pull-request previews need a token that may comment and set commit statuses (forge.tokenFile or PROXMOPS_FORGE_TOKEN)")
	}
	var warnings []string
	if publicURL == "" {
		warnings = append(warnings, "server.publicURL is not set: the commit status of a preview links nowhere")
	}
	return warnings
}

// validateCluster normalises and checks the keys of one cluster; prefix
// ("cluster." or "clusters[home].") names them in problems.
func validateCluster(prefix string, cl *Cluster, probs *problems) []string {
	var warnings []string
	if cl.Endpoint != "" {
		ep, w, err := NormalizeEndpoint(cl.Endpoint)
		if err != nil {
			probs.addf(prefix+"endpoint", "%v", err)
		} else {
			cl.Endpoint = ep
			warnings = append(warnings, w...)
		}
	}
	if cl.TokenID != "" && !tokenIDPattern.MatchString(cl.TokenID) {
		probs.addf(prefix+"tokenId", "%q is not an API token id; the form is USER@REALM!TOKENID, e.g. proxmops@pve!gitops", cl.TokenID)
	}
	if cl.Fingerprint != "" {
		fp, err := NormalizeFingerprint(cl.Fingerprint)
		if err != nil {
			probs.addf(prefix+"fingerprint", "%v", err)
		} else {
			cl.Fingerprint = fp
		}
	}
	if cl.CAFile != "" {
		if _, err := os.Stat(cl.CAFile); err != nil {
			probs.addf(prefix+"caFile", "%v", err)
		}
	}
	if cl.InsecureSkipVerify && cl.Fingerprint == "" {
		warnings = append(warnings, prefix+"insecureSkipVerify is on: the cluster's certificate is not verified; pin it with "+prefix+"fingerprint instead")
	}
	return warnings
}

// NormalizeEndpoint checks a Proxmox VE API URL and returns it ending in
// /api2/json, which is appended when missing ("https://pve:8006" becomes
// "https://pve:8006/api2/json"). Warnings mention plain http.
func NormalizeEndpoint(raw string) (string, []string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", nil, fmt.Errorf("%q is not a URL: %v", raw, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return "", nil, fmt.Errorf("%q must start with https:// (e.g. https://pve.example.com:8006/api2/json)", raw)
	}
	if u.Host == "" {
		return "", nil, fmt.Errorf("%q has no host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", nil, fmt.Errorf("%q must not carry a query, fragment or user name", raw)
	}
	p := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(p, "/api2/json") {
		p += "/api2/json"
	}
	u.Path = p
	u.RawPath = ""
	var warnings []string
	if u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		warnings = append(warnings, fmt.Sprintf("cluster.endpoint %s uses plain http: the API token is sent unencrypted", u.String()))
	}
	return u.String(), warnings, nil
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// NormalizeFingerprint accepts a SHA-256 certificate fingerprint as hex
// with or without colons (as `pvenode cert info` or openssl print it) and
// returns it upper-case with colons.
func NormalizeFingerprint(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if i := strings.Index(s, "="); i >= 0 { // "SHA256 Fingerprint=AB:CD..."
		s = s[i+1:]
	}
	s = strings.NewReplacer(":", "", " ", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		return "", fmt.Errorf("%q is not a SHA-256 fingerprint (32 hex bytes, e.g. AB:CD:...)", raw)
	}
	parts := make([]string, len(b))
	for i, x := range b {
		parts[i] = fmt.Sprintf("%02X", x)
	}
	return strings.Join(parts, ":"), nil
}

// CleanSourcePath normalises source.path: slash-separated, relative, inside
// the repository; "" and "." both mean the repository's root and become "".
func CleanSourcePath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	q := strings.ReplaceAll(p, "\\", "/")
	if strings.HasPrefix(q, "/") {
		return "", fmt.Errorf("%q must be relative to the repository root", p)
	}
	q = path.Clean(q)
	if q == "." {
		return "", nil
	}
	if q == ".." || strings.HasPrefix(q, "../") {
		return "", fmt.Errorf("%q points outside the repository", p)
	}
	return q, nil
}

// isLocalPath reports whether a repoURL is a local directory rather than a
// URL or scp-like address.
func isLocalPath(s string) bool {
	if strings.Contains(s, "://") {
		return false
	}
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "~") {
		return true
	}
	// Git's rule: a colon before the first slash makes it scp-like.
	colon := strings.IndexByte(s, ':')
	slash := strings.IndexByte(s, '/')
	return colon < 0 || (slash >= 0 && slash < colon)
}

func checkRepoURL(s string) error {
	if strings.TrimSpace(s) != s {
		return fmt.Errorf("%q has leading or trailing spaces", s)
	}
	if isLocalPath(s) {
		return nil
	}
	if !strings.Contains(s, "://") {
		return nil // scp-like user@host:path
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", s, err)
	}
	switch u.Scheme {
	case "https", "http", "ssh", "git":
		if u.Host == "" {
			return fmt.Errorf("%q has no host", s)
		}
	case "file":
		if u.Path == "" {
			return fmt.Errorf("%q has no path", s)
		}
	default:
		return fmt.Errorf("scheme %q is not supported; use https, http, ssh, git, file or a local directory", u.Scheme)
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		return fmt.Errorf("the URL must not hold a password; use source.tokenFile or %s", EnvGitToken)
	}
	return nil
}

// RequireCluster reports what is missing to talk to the clusters; commands
// that need them (serve, plan, apply) call it after Load.
func (c *Config) RequireCluster() error {
	var probs problems
	if len(c.Clusters) == 0 {
		requireClusterKeys(&probs, "cluster.", c.Cluster, func(k string) string { return EnvName("cluster." + k) })
		return probs.err()
	}
	for i, e := range c.Clusters {
		requireClusterKeys(&probs, entryKey(i, e, ""), e.Cluster, func(k string) string { return ClusterEnvName(e.Name, k) })
	}
	return probs.err()
}

func requireClusterKeys(probs *problems, prefix string, cl Cluster, env func(string) string) {
	if cl.Endpoint == "" {
		probs.addf(prefix+"endpoint", "is required (or %s)", env("endpoint"))
	}
	if cl.TokenID == "" {
		probs.addf(prefix+"tokenId", "is required (or %s)", env("tokenId"))
	}
	if cl.TokenSecret == "" {
		probs.addf(prefix+"tokenSecret", "is required: set %stokenSecretFile or %s", prefix, env("tokenSecret"))
	}
}

// RequireSource reports what is missing to read the repository.
func (c *Config) RequireSource() error {
	var probs problems
	if c.Source.RepoURL == "" {
		probs.addf("source.repoURL", "is required (or %s)", EnvName("source.repoURL"))
	}
	return probs.err()
}

// CheckDatabaseURL tells whether u is a PostgreSQL URL (postgres:// or
// postgresql://); errors never show its password.
func CheckDatabaseURL(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("not a URL: %s", strings.ReplaceAll(err.Error(), u, RedactDatabaseURL(u)))
	}
	if p.Scheme != "postgres" && p.Scheme != "postgresql" {
		return fmt.Errorf("%q is not a postgres:// or postgresql:// URL", RedactDatabaseURL(u))
	}
	return nil
}

// RedactDatabaseURL is u with its password (in the user part or the query)
// hidden, for messages, logs and the settings shown in the UI.
func RedactDatabaseURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	if q := p.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		p.RawQuery = q.Encode()
	}
	return p.Redacted()
}

// validate checks auth.oidc and fills its defaults when it is on.
func (o *OIDC) validate(probs *problems) []string {
	if !o.Enabled() {
		if o.ClientID != "" || len(o.AdminGroups) > 0 || len(o.ViewerGroups) > 0 {
			return []string{"auth.oidc is set without auth.oidc.issuer: single sign-on stays off"}
		}
		return nil
	}
	var warnings []string
	u, err := url.Parse(o.Issuer)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		probs.addf("auth.oidc.issuer", "%q is not an https:// URL", o.Issuer)
	case u.Scheme == "http":
		warnings = append(warnings, "auth.oidc.issuer uses plain http: tokens travel unencrypted")
	}
	if o.ClientID == "" {
		probs.addf("auth.oidc.clientID", "is required with auth.oidc.issuer")
	}
	if r := o.RedirectURL; r != "" && !strings.HasPrefix(r, "https://") && !strings.HasPrefix(r, "http://") {
		probs.addf("auth.oidc.redirectURL", "%q is not an http:// or https:// URL", r)
	}
	if len(o.AdminGroups) == 0 && len(o.ViewerGroups) == 0 {
		probs.addf("auth.oidc.adminGroups", "list the groups of auth.oidc.adminGroups or auth.oidc.viewerGroups: without them nobody can log in with single sign-on")
	}
	if o.RoleClaim == "" {
		o.RoleClaim = DefaultOIDCRoleClaim
	}
	if o.Name == "" {
		o.Name = "SSO"
	}
	if len(o.Scopes) == 0 {
		o.Scopes = []string{"profile", "email", "groups"}
	}
	return warnings
}
