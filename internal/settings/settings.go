package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/api"
)

// Values are effective settings, secrets in clear (in memory only).
type Values struct {
	Cluster   Cluster
	Source    Source
	Reconcile Reconcile
}

// Cluster is the Proxmox VE connection.
type Cluster struct {
	Endpoint           string
	TokenID            string
	TokenSecret        string
	InsecureSkipVerify bool
	Fingerprint        string
	CAFile             string
}

// Source is the Git source.
type Source struct {
	RepoURL       string
	Path          string
	Revision      string
	Username      string
	Token         string
	SSHKey        string
	Submodules    bool
	WebhookSecret string
}

// Reconcile tunes the control loop.
type Reconcile struct {
	Interval    time.Duration
	AutoSync    bool
	Prune       bool
	Concurrency int
	DryRun      bool
}

// Overrides are the settings saved from the UI. A nil field was never saved
// and leaves the file's value in force; a non-nil one wins, including an
// empty secret (cleared on purpose). Its JSON form is what the store encrypts.
type Overrides struct {
	Cluster   ClusterOverrides   `json:"cluster"`
	Source    SourceOverrides    `json:"source"`
	Reconcile ReconcileOverrides `json:"reconcile"`
}

// ClusterOverrides is the saved "cluster" section.
type ClusterOverrides struct {
	Endpoint           *string `json:"endpoint,omitempty"`
	TokenID            *string `json:"tokenId,omitempty"`
	TokenSecret        *string `json:"tokenSecret,omitempty"`
	InsecureSkipVerify *bool   `json:"insecureSkipVerify,omitempty"`
	Fingerprint        *string `json:"fingerprint,omitempty"`
	CAFile             *string `json:"caFile,omitempty"`
}

// SourceOverrides is the saved "source" section.
type SourceOverrides struct {
	RepoURL       *string `json:"repoURL,omitempty"`
	Path          *string `json:"path,omitempty"`
	Revision      *string `json:"revision,omitempty"`
	Username      *string `json:"username,omitempty"`
	Token         *string `json:"token,omitempty"`
	SSHKey        *string `json:"sshKey,omitempty"`
	Submodules    *bool   `json:"submodules,omitempty"`
	WebhookSecret *string `json:"webhookSecret,omitempty"`
}

// ReconcileOverrides is the saved "reconcile" section. Interval is a Go
// duration string ("60s").
type ReconcileOverrides struct {
	Interval    *string `json:"interval,omitempty"`
	AutoSync    *bool   `json:"autoSync,omitempty"`
	Prune       *bool   `json:"prune,omitempty"`
	Concurrency *int    `json:"concurrency,omitempty"`
	DryRun      *bool   `json:"dryRun,omitempty"`
}

// Merge returns base with every saved field of o in its place.
func Merge(base Values, o Overrides) Values {
	v := base
	set(&v.Cluster.Endpoint, o.Cluster.Endpoint)
	set(&v.Cluster.TokenID, o.Cluster.TokenID)
	set(&v.Cluster.TokenSecret, o.Cluster.TokenSecret)
	set(&v.Cluster.InsecureSkipVerify, o.Cluster.InsecureSkipVerify)
	set(&v.Cluster.Fingerprint, o.Cluster.Fingerprint)
	set(&v.Cluster.CAFile, o.Cluster.CAFile)
	set(&v.Source.RepoURL, o.Source.RepoURL)
	set(&v.Source.Path, o.Source.Path)
	set(&v.Source.Revision, o.Source.Revision)
	set(&v.Source.Username, o.Source.Username)
	set(&v.Source.Token, o.Source.Token)
	set(&v.Source.SSHKey, o.Source.SSHKey)
	set(&v.Source.Submodules, o.Source.Submodules)
	set(&v.Source.WebhookSecret, o.Source.WebhookSecret)
	if o.Reconcile.Interval != nil {
		if d, err := time.ParseDuration(*o.Reconcile.Interval); err == nil {
			v.Reconcile.Interval = d
		}
	}
	set(&v.Reconcile.AutoSync, o.Reconcile.AutoSync)
	set(&v.Reconcile.Prune, o.Reconcile.Prune)
	set(&v.Reconcile.Concurrency, o.Reconcile.Concurrency)
	set(&v.Reconcile.DryRun, o.Reconcile.DryRun)
	return v
}

func set[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

// Update returns o with every field given in patch saved over it.
func (o Overrides) Update(patch Overrides) Overrides {
	m := o
	upd(&m.Cluster.Endpoint, patch.Cluster.Endpoint)
	upd(&m.Cluster.TokenID, patch.Cluster.TokenID)
	upd(&m.Cluster.TokenSecret, patch.Cluster.TokenSecret)
	upd(&m.Cluster.InsecureSkipVerify, patch.Cluster.InsecureSkipVerify)
	upd(&m.Cluster.Fingerprint, patch.Cluster.Fingerprint)
	upd(&m.Cluster.CAFile, patch.Cluster.CAFile)
	upd(&m.Source.RepoURL, patch.Source.RepoURL)
	upd(&m.Source.Path, patch.Source.Path)
	upd(&m.Source.Revision, patch.Source.Revision)
	upd(&m.Source.Username, patch.Source.Username)
	upd(&m.Source.Token, patch.Source.Token)
	upd(&m.Source.SSHKey, patch.Source.SSHKey)
	upd(&m.Source.Submodules, patch.Source.Submodules)
	upd(&m.Source.WebhookSecret, patch.Source.WebhookSecret)
	upd(&m.Reconcile.Interval, patch.Reconcile.Interval)
	upd(&m.Reconcile.AutoSync, patch.Reconcile.AutoSync)
	upd(&m.Reconcile.Prune, patch.Reconcile.Prune)
	upd(&m.Reconcile.Concurrency, patch.Reconcile.Concurrency)
	upd(&m.Reconcile.DryRun, patch.Reconcile.DryRun)
	return m
}

func upd[T any](dst **T, src *T) {
	if src != nil {
		v := *src
		*dst = &v
	}
}

// Document is v as the API shows it: secrets only as "set" or "not set".
func Document(v Values) api.SettingsDocument {
	return api.SettingsDocument{
		Cluster: api.ClusterSettings{
			Endpoint:           v.Cluster.Endpoint,
			TokenID:            v.Cluster.TokenID,
			TokenSecret:        mask(v.Cluster.TokenSecret),
			InsecureSkipVerify: v.Cluster.InsecureSkipVerify,
			Fingerprint:        v.Cluster.Fingerprint,
			CAFile:             v.Cluster.CAFile,
		},
		Source: api.SourceSettings{
			RepoURL:       v.Source.RepoURL,
			Path:          v.Source.Path,
			Revision:      v.Source.Revision,
			Username:      v.Source.Username,
			Token:         mask(v.Source.Token),
			SSHKey:        mask(v.Source.SSHKey),
			Submodules:    v.Source.Submodules,
			WebhookSecret: mask(v.Source.WebhookSecret),
		},
		Reconcile: api.ReconcileSettings{
			Interval:    v.Reconcile.Interval.String(),
			AutoSync:    v.Reconcile.AutoSync,
			Prune:       v.Reconcile.Prune,
			Concurrency: v.Reconcile.Concurrency,
			DryRun:      v.Reconcile.DryRun,
		},
	}
}

func mask(secret string) string {
	if secret == "" {
		return api.SecretNotSet
	}
	return api.SecretSet
}

// ParsePatch decodes a PUT /api/v1/settings body (the settings document,
// any subset of its fields) into the fields to save. A secret given as "set"
// or "not set", or left out, keeps its saved value; "" clears it. Unknown
// fields and invalid values are errors that name the field.
func ParsePatch(body []byte) (Overrides, error) {
	var p Overrides
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Overrides{}, fmt.Errorf("settings: %w", err)
	}
	for _, s := range []**string{&p.Cluster.TokenSecret, &p.Source.Token, &p.Source.SSHKey, &p.Source.WebhookSecret} {
		if *s != nil && (**s == api.SecretSet || **s == api.SecretNotSet) {
			*s = nil
		}
	}
	if err := p.Validate(); err != nil {
		return Overrides{}, err
	}
	return p, nil
}

// Validate checks the fields that are present.
func (o Overrides) Validate() error {
	var errs []error
	if o.Cluster.Endpoint != nil && *o.Cluster.Endpoint != "" {
		u, err := url.Parse(*o.Cluster.Endpoint)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("cluster.endpoint: %q is not an http(s) URL such as https://pve.example.com:8006/api2/json", *o.Cluster.Endpoint))
		}
	}
	if o.Cluster.TokenID != nil && *o.Cluster.TokenID != "" && !strings.Contains(*o.Cluster.TokenID, "!") {
		errs = append(errs, fmt.Errorf("cluster.tokenId: %q is not an API token id such as proxmops@pve!gitops", *o.Cluster.TokenID))
	}
	if o.Source.Path != nil {
		for _, part := range strings.Split(*o.Source.Path, "/") {
			if part == ".." {
				errs = append(errs, fmt.Errorf("source.path: %q leaves the repository", *o.Source.Path))
				break
			}
		}
	}
	if o.Reconcile.Interval != nil {
		d, err := time.ParseDuration(*o.Reconcile.Interval)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("reconcile.interval: %q is not a duration such as 60s or 5m", *o.Reconcile.Interval))
		case d < time.Second:
			errs = append(errs, fmt.Errorf("reconcile.interval: %s is shorter than one second", d))
		}
	}
	if o.Reconcile.Concurrency != nil && (*o.Reconcile.Concurrency < 1 || *o.Reconcile.Concurrency > 256) {
		errs = append(errs, fmt.Errorf("reconcile.concurrency: %d is not between 1 and 256", *o.Reconcile.Concurrency))
	}
	return errors.Join(errs...)
}

// Fields lists the keys ("cluster.endpoint", ...) present in o, for logs
// that must not show values.
func (o Overrides) Fields() []string {
	var out []string
	add := func(name string, present bool) {
		if present {
			out = append(out, name)
		}
	}
	add("cluster.endpoint", o.Cluster.Endpoint != nil)
	add("cluster.tokenId", o.Cluster.TokenID != nil)
	add("cluster.tokenSecret", o.Cluster.TokenSecret != nil)
	add("cluster.insecureSkipVerify", o.Cluster.InsecureSkipVerify != nil)
	add("cluster.fingerprint", o.Cluster.Fingerprint != nil)
	add("cluster.caFile", o.Cluster.CAFile != nil)
	add("source.repoURL", o.Source.RepoURL != nil)
	add("source.path", o.Source.Path != nil)
	add("source.revision", o.Source.Revision != nil)
	add("source.username", o.Source.Username != nil)
	add("source.token", o.Source.Token != nil)
	add("source.sshKey", o.Source.SSHKey != nil)
	add("source.submodules", o.Source.Submodules != nil)
	add("source.webhookSecret", o.Source.WebhookSecret != nil)
	add("reconcile.interval", o.Reconcile.Interval != nil)
	add("reconcile.autoSync", o.Reconcile.AutoSync != nil)
	add("reconcile.prune", o.Reconcile.Prune != nil)
	add("reconcile.concurrency", o.Reconcile.Concurrency != nil)
	add("reconcile.dryRun", o.Reconcile.DryRun != nil)
	return out
}
