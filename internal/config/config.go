package config

import (
	"os"
	"path/filepath"
	"time"
)

// Config is the whole configuration. Field tags name the keys of the YAML
// file; the same names (upper-cased) make the PROXMOPS_<SECTION>_<KEY>
// environment variables.
type Config struct {
	Cluster Cluster `yaml:"cluster" json:"cluster"`
	// Clusters lists several clusters instead of Cluster, each following
	// its own sub-directory of the one source (clusters.go).
	Clusters  []ClusterEntry `yaml:"clusters" json:"clusters,omitempty"`
	Source    Source         `yaml:"source" json:"source"`
	Reconcile Reconcile      `yaml:"reconcile" json:"reconcile"`
	Server    Server         `yaml:"server" json:"server"`
	Log       Log            `yaml:"log" json:"log"`
	Provision Provision      `yaml:"provision" json:"provision"`
	HA        HA             `yaml:"ha" json:"ha"`
	// Notifications lists where transitions are announced
	// (notifications.go).
	Notifications []Notification `yaml:"notifications" json:"notifications,omitempty"`
	CLI           CLI            `yaml:"cli" json:"cli"`
	Forge         Forge          `yaml:"forge" json:"forge"`
	Auth          Auth           `yaml:"auth" json:"auth"`

	// defaultDatabasePath is server.databasePath's default in force (the
	// service's with the service's file): only the default gives way to
	// server.database.
	defaultDatabasePath string
}

// CLI says how the command line reaches the daemon. With Server set, apply,
// adopt, rollback and sync act through the daemon's API, so the daemon
// stays the one writer of the cluster and of the history.
type CLI struct {
	// Server is the daemon's URL, e.g. https://proxmops.example.com:8080.
	Server string `yaml:"server" json:"server"`
	// Token is an API token of the daemon (pmt_…, made in the UI or with
	// POST /api/v1/tokens); after Load it holds the token however it was given.
	Token     string `yaml:"token" json:"token" secret:"true"`
	TokenFile string `yaml:"tokenFile" json:"tokenFile" path:"true"`
	// CAFile is a PEM bundle of CAs to trust for the daemon's HTTPS.
	CAFile string `yaml:"caFile" json:"caFile" path:"true"`
}

// Forge says where the repository's pull requests live, for plan previews
// on them (docs/operations.md, "Pull-request previews").
type Forge struct {
	// Type is github, gitea (Forgejo too) or gitlab.
	Type string `yaml:"type" json:"type"`
	// APIURL is the forge's API base: https://api.github.com (the
	// default for github), the instance's address for Gitea and GitLab.
	APIURL string `yaml:"apiURL" json:"apiURL"`
	// Repository is owner/name; for GitLab the project's full path.
	Repository string `yaml:"repository" json:"repository"`
	// Token may comment on requests and set commit statuses; after Load it
	// holds the token however it was given.
	Token     string `yaml:"token" json:"token" secret:"true"`
	TokenFile string `yaml:"tokenFile" json:"tokenFile" path:"true"`
	// PullRequestPreviews plans every open request's head and posts the
	// plan on it.
	PullRequestPreviews bool `yaml:"pullRequestPreviews" json:"pullRequestPreviews"`
}

// Forge types.
const (
	ForgeGitHub = "github"
	ForgeGitea  = "gitea"
	ForgeGitLab = "gitlab"
)

// DefaultGitHubAPI is forge.apiURL's default for github.
const DefaultGitHubAPI = "https://api.github.com"

// Auth configures how people log in besides the local accounts.
type Auth struct {
	OIDC OIDC `yaml:"oidc" json:"oidc"`
}

// OIDC configures single sign-on with an OpenID Connect provider
// (docs/sso.md): on when Issuer is set.
type OIDC struct {
	// Issuer is the provider's issuer URL (its discovery document is at
	// <issuer>/.well-known/openid-configuration).
	Issuer   string `yaml:"issuer" json:"issuer"`
	ClientID string `yaml:"clientID" json:"clientID"`
	// ClientSecret is the client's secret; after Load it holds the secret
	// however it was given.
	ClientSecret     string `yaml:"clientSecret" json:"clientSecret" secret:"true"`
	ClientSecretFile string `yaml:"clientSecretFile" json:"clientSecretFile" path:"true"`
	// RedirectURL is proxmops' callback as registered at the provider
	// (default: <the URL the browser used>/api/v1/auth/oidc/callback).
	RedirectURL string `yaml:"redirectURL" json:"redirectURL"`
	// Name is the provider's name on the login button (default "SSO").
	Name string `yaml:"name" json:"name"`
	// RoleClaim is the ID token claim listing the user's groups (default
	// "groups").
	RoleClaim string `yaml:"roleClaim" json:"roleClaim"`
	// AdminGroups and ViewerGroups map groups to roles; admin wins.
	AdminGroups  []string `yaml:"adminGroups" json:"adminGroups"`
	ViewerGroups []string `yaml:"viewerGroups" json:"viewerGroups"`
	// Scopes are requested besides openid (default: profile, email, groups).
	Scopes []string `yaml:"scopes" json:"scopes"`
}

// Enabled tells whether single sign-on is configured.
func (o OIDC) Enabled() bool { return o.Issuer != "" }

// DefaultOIDCRoleClaim is auth.oidc.roleClaim's default.
const DefaultOIDCRoleClaim = "groups"

// HA configures a replica among several daemons on one PostgreSQL
// database (docs/ha.md); SQLite ignores it.
type HA struct {
	// Replica names this replica in the UI, /readyz and /metrics (default:
	// the host name).
	Replica string `yaml:"replica" json:"replica"`
	// AdvertiseURL is where the other replicas reach this one's API when
	// it leads (default: http(s)://<host name>:<port of server.addr>).
	AdvertiseURL string `yaml:"advertiseURL" json:"advertiseURL"`
	// FailoverTimeout bounds the time from the leader's death or cut-off
	// to a follower leading.
	FailoverTimeout time.Duration `yaml:"failoverTimeout" json:"failoverTimeout"`
}

// DefaultFailoverTimeout is ha.failoverTimeout's default.
const DefaultFailoverTimeout = 15 * time.Second

// Provision configures spec.provision's SSH connections to guests.
type Provision struct {
	// SSHKeyFile is the private key proxmops logs in to guests with
	// (OpenSSH or PEM, without a passphrase); empty: an ed25519 key is
	// generated on first use and kept encrypted in the database.
	SSHKeyFile string `yaml:"sshKeyFile" json:"sshKeyFile" path:"true"`
}

// Cluster says how to reach the Proxmox VE API.
type Cluster struct {
	// Endpoint is the API base URL, always ending in /api2/json after Load.
	Endpoint string `yaml:"endpoint" json:"endpoint"`
	// TokenID is USER@REALM!TOKENID.
	TokenID string `yaml:"tokenId" json:"tokenId"`
	// TokenSecret is the token's secret UUID; after Load it holds the
	// secret whichever way it was given (inline, environment or file).
	TokenSecret     string `yaml:"tokenSecret" json:"tokenSecret" secret:"true"`
	TokenSecretFile string `yaml:"tokenSecretFile" json:"tokenSecretFile" path:"true"`
	// InsecureSkipVerify turns off TLS certificate verification entirely.
	InsecureSkipVerify bool `yaml:"insecureSkipVerify" json:"insecureSkipVerify"`
	// Fingerprint pins the server certificate by its SHA-256 fingerprint,
	// normalised by Load to upper-case hex pairs separated by colons.
	Fingerprint string `yaml:"fingerprint" json:"fingerprint"`
	// CAFile is a PEM bundle of CAs to trust for the cluster.
	CAFile string `yaml:"caFile" json:"caFile" path:"true"`
}

// Source says where the manifests live.
type Source struct {
	// RepoURL is an https://, http://, ssh://, scp-like (git@host:path),
	// git://, file:// URL, or a local directory read in place.
	RepoURL string `yaml:"repoURL" json:"repoURL"`
	// Path is the directory of manifests inside the repository ("" or "."
	// for its root).
	Path string `yaml:"path" json:"path"`
	// Revision is a branch, a tag or a commit hash; empty means the
	// remote's default branch.
	Revision string `yaml:"revision" json:"revision"`
	// Username goes with Token for HTTPS; default "x-access-token".
	Username string `yaml:"username" json:"username"`
	// Token is the HTTPS password or access token; after Load it holds the
	// token whichever way it was given (settings, PROXMOPS_GIT_TOKEN,
	// PROXMOPS_SOURCE_TOKEN or tokenFile).
	Token     string `yaml:"token" json:"token" secret:"true"`
	TokenFile string `yaml:"tokenFile" json:"tokenFile" path:"true"`
	// SSHKey is a PEM private key; after Load it holds the key whichever way
	// it was given (settings, environment or sshKeyFile).
	SSHKey     string `yaml:"sshKey" json:"sshKey" secret:"true"`
	SSHKeyFile string `yaml:"sshKeyFile" json:"sshKeyFile" path:"true"`
	// KnownHostsFile lists the SSH host keys to accept; empty means
	// $SSH_KNOWN_HOSTS, ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts.
	KnownHostsFile string `yaml:"knownHostsFile" json:"knownHostsFile" path:"true"`
	// InsecureIgnoreHostKey accepts any SSH host key (not recommended).
	InsecureIgnoreHostKey bool `yaml:"insecureIgnoreHostKey" json:"insecureIgnoreHostKey"`
	// Submodules checks out Git submodules recursively.
	Submodules bool `yaml:"submodules" json:"submodules"`
	// CacheDir holds the clones; one subdirectory per repository URL and
	// revision.
	CacheDir string `yaml:"cacheDir" json:"cacheDir" path:"true"`
}

// Reconcile tunes the control loop.
type Reconcile struct {
	Interval    time.Duration `yaml:"interval" json:"interval"`
	AutoSync    bool          `yaml:"autoSync" json:"autoSync"`
	Prune       bool          `yaml:"prune" json:"prune"`
	Concurrency int           `yaml:"concurrency" json:"concurrency"`
	DryRun      bool          `yaml:"dryRun" json:"dryRun"`
	// DriftCheckInterval is how often the daemon reads each owned guest's
	// full configuration at the latest (0: on every pass); in between, a
	// pass compares what /cluster/resources shows with the last full read.
	DriftCheckInterval time.Duration `yaml:"driftCheckInterval" json:"driftCheckInterval"`
	// HistoryPerResource and HistoryTotal cap the stored history events.
	HistoryPerResource int `yaml:"historyPerResource" json:"historyPerResource"`
	HistoryTotal       int `yaml:"historyTotal" json:"historyTotal"`
}

// Server configures the daemon's HTTP side and its database.
type Server struct {
	Addr         string `yaml:"addr" json:"addr"`
	DatabasePath string `yaml:"databasePath" json:"databasePath" path:"true"`
	// Database, instead of DatabasePath, is a PostgreSQL URL
	// (postgres://…): several replicas can share it.
	Database string `yaml:"database" json:"database"`
	// KeyFile holds the encryption key of the database's secrets: default
	// <databasePath>.key with SQLite, required with PostgreSQL unless
	// PROXMOPS_ENCRYPTION_KEY gives the key.
	KeyFile     string `yaml:"keyFile" json:"keyFile" path:"true"`
	TLSCertFile string `yaml:"tlsCertFile" json:"tlsCertFile" path:"true"`
	TLSKeyFile  string `yaml:"tlsKeyFile" json:"tlsKeyFile" path:"true"`
	// TrustProxy makes the server believe X-Forwarded-For/-Proto.
	TrustProxy bool `yaml:"trustProxy" json:"trustProxy"`
	// WebhookSecret verifies forge webhooks (GitHub HMAC, Gitea HMAC,
	// GitLab token); after Load it holds the secret however it was given.
	WebhookSecret     string `yaml:"webhookSecret" json:"webhookSecret" secret:"true"`
	WebhookSecretFile string `yaml:"webhookSecretFile" json:"webhookSecretFile" path:"true"`
	// MetricsToken, when set, is the bearer token GET /metrics requires;
	// after Load it holds the token however it was given.
	MetricsToken     string `yaml:"metricsToken" json:"metricsToken" secret:"true"`
	MetricsTokenFile string `yaml:"metricsTokenFile" json:"metricsTokenFile" path:"true"`
	// PublicURL is where people open the UI (https://proxmops.lan); links
	// in notifications point there.
	PublicURL string `yaml:"publicURL" json:"publicURL"`
}

// Log configures log/slog output.
type Log struct {
	Format string `yaml:"format" json:"format"` // text or json
	Level  string `yaml:"level" json:"level"`   // debug, info, warn, error
}

// Default values, also listed in docs/configuration.md.
const (
	DefaultInterval           = 60 * time.Second
	DefaultConcurrency        = 4
	DefaultDriftCheckInterval = 10 * time.Minute
	DefaultAddr               = ":8080"
	DefaultDatabasePath       = "proxmops.db"
	DefaultGitUsername        = "x-access-token"
	DefaultHistoryPerResource = 100
	DefaultHistoryTotal       = 10000
)

// Defaults returns the configuration used when nothing is set.
func Defaults() *Config {
	return &Config{
		Source: Source{
			Username:   DefaultGitUsername,
			Submodules: true,
			CacheDir:   DefaultCacheDir(),
		},
		Reconcile: Reconcile{
			Interval:           DefaultInterval,
			AutoSync:           true,
			Concurrency:        DefaultConcurrency,
			DriftCheckInterval: DefaultDriftCheckInterval,
			HistoryPerResource: DefaultHistoryPerResource,
			HistoryTotal:       DefaultHistoryTotal,
		},
		Server: Server{
			Addr:         DefaultAddr,
			DatabasePath: DefaultDatabasePath,
		},
		Log:                 Log{Format: "text", Level: "info"},
		HA:                  HA{FailoverTimeout: DefaultFailoverTimeout},
		defaultDatabasePath: DefaultDatabasePath,
	}
}

// DefaultCacheDir is $XDG_CACHE_HOME/proxmops/git (~/.cache/proxmops/git),
// or proxmops-git-cache in the temporary directory when there is no home.
func DefaultCacheDir() string {
	if dir, err := os.UserCacheDir(); err == nil && dir != "" {
		return filepath.Join(dir, "proxmops", "git")
	}
	return filepath.Join(os.TempDir(), "proxmops-git-cache")
}

// Clone returns a deep copy.
func (c *Config) Clone() *Config {
	cp := *c
	cp.Clusters = append([]ClusterEntry(nil), c.Clusters...)
	cp.Notifications = cloneNotifications(c.Notifications)
	o := &cp.Auth.OIDC
	o.AdminGroups = append([]string(nil), o.AdminGroups...)
	o.ViewerGroups = append([]string(nil), o.ViewerGroups...)
	o.Scopes = append([]string(nil), o.Scopes...)
	return &cp
}

// Redacted returns a copy with every secret replaced by "(set)" when it is
// set, fit for logs and for showing settings.
func (c *Config) Redacted() *Config {
	cp := c.Clone()
	secrets := []*string{&cp.Cluster.TokenSecret, &cp.Source.Token, &cp.Source.SSHKey, &cp.Server.WebhookSecret, &cp.Server.MetricsToken, &cp.CLI.Token,
		&cp.Forge.Token, &cp.Auth.OIDC.ClientSecret}
	for i := range cp.Clusters {
		secrets = append(secrets, &cp.Clusters[i].TokenSecret)
	}
	for _, s := range secrets {
		if *s != "" {
			*s = "(set)"
		}
	}
	if cp.Server.Database != "" {
		cp.Server.Database = RedactDatabaseURL(cp.Server.Database)
	}
	for i := range cp.Notifications {
		cp.Notifications[i].URL = RedactNotificationURL(cp.Notifications[i].URL)
	}
	return cp
}
