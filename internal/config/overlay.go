package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Overlay holds settings saved from the UI. They use the config file's
// keys; a nil field is not set and leaves the underlying configuration
// alone. For the daemon they take precedence over file, environment and
// flags. Server and log settings are not in it: they need a restart.
// Forge settings apply to the next webhook.
type Overlay struct {
	Cluster   *ClusterOverlay   `json:"cluster,omitempty"`
	Source    *SourceOverlay    `json:"source,omitempty"`
	Reconcile *ReconcileOverlay `json:"reconcile,omitempty"`
	Forge     *ForgeOverlay     `json:"forge,omitempty"`
}

// ForgeOverlay is the forge section of an Overlay; Token is the secret
// itself (the store keeps it encrypted).
type ForgeOverlay struct {
	Type                *string `json:"type,omitempty"`
	APIURL              *string `json:"apiURL,omitempty"`
	Repository          *string `json:"repository,omitempty"`
	Token               *string `json:"token,omitempty"`
	PullRequestPreviews *bool   `json:"pullRequestPreviews,omitempty"`
}

// ClusterOverlay is the cluster section of an Overlay.
type ClusterOverlay struct {
	Endpoint           *string `json:"endpoint,omitempty"`
	TokenID            *string `json:"tokenId,omitempty"`
	TokenSecret        *string `json:"tokenSecret,omitempty"`
	InsecureSkipVerify *bool   `json:"insecureSkipVerify,omitempty"`
	Fingerprint        *string `json:"fingerprint,omitempty"`
	CAFile             *string `json:"caFile,omitempty"`
}

// SourceOverlay is the source section of an Overlay. Token and SSHKey hold
// the secrets themselves (the store keeps them encrypted).
type SourceOverlay struct {
	RepoURL               *string `json:"repoURL,omitempty"`
	Path                  *string `json:"path,omitempty"`
	Revision              *string `json:"revision,omitempty"`
	Username              *string `json:"username,omitempty"`
	Token                 *string `json:"token,omitempty"`
	SSHKey                *string `json:"sshKey,omitempty"`
	KnownHostsFile        *string `json:"knownHostsFile,omitempty"`
	InsecureIgnoreHostKey *bool   `json:"insecureIgnoreHostKey,omitempty"`
	Submodules            *bool   `json:"submodules,omitempty"`
}

// ReconcileOverlay is the reconcile section of an Overlay. Interval is a
// duration string such as "60s".
type ReconcileOverlay struct {
	Interval           *string `json:"interval,omitempty"`
	AutoSync           *bool   `json:"autoSync,omitempty"`
	Prune              *bool   `json:"prune,omitempty"`
	Concurrency        *int    `json:"concurrency,omitempty"`
	DryRun             *bool   `json:"dryRun,omitempty"`
	DriftCheckInterval *string `json:"driftCheckInterval,omitempty"`
	HistoryPerResource *int    `json:"historyPerResource,omitempty"`
	HistoryTotal       *int    `json:"historyTotal,omitempty"`
}

// ParseOverlay decodes saved settings strictly: an unknown key is an error
// naming it, with a suggestion.
func ParseOverlay(data []byte) (Overlay, error) {
	var o Overlay
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return Overlay{}, fmt.Errorf("settings: %s", explainJSONError(err))
	}
	return o, nil
}

func explainJSONError(err error) string {
	msg := err.Error()
	const prefix = "json: unknown field \""
	if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		name := msg[len(prefix) : len(msg)-1]
		var names []string
		for _, k := range allKeys {
			names = append(names, k.name)
		}
		names = append(names, sectionNames...)
		return fmt.Sprintf("unknown key `%s`%s", name, didYouMean(name, names))
	}
	return msg
}

// WithOverlay returns a copy of c with the overlay's settings applied,
// normalised and validated as Load does; c is not changed. A secret set in
// the overlay replaces one read from a file.
func (c *Config) WithOverlay(o Overlay) (*Config, []string, error) {
	n := c.Clone()
	var probs problems
	var warnings []string
	def := Defaults()
	if oc := o.Cluster; oc != nil && len(n.Clusters) > 0 {
		warnings = append(warnings, "the cluster settings saved from the UI are ignored: the configuration lists clusters")
	} else if oc != nil {
		overlayField(&warnings, "cluster.endpoint", &n.Cluster.Endpoint, def.Cluster.Endpoint, oc.Endpoint, false)
		overlayField(&warnings, "cluster.tokenId", &n.Cluster.TokenID, def.Cluster.TokenID, oc.TokenID, false)
		overlayField(&warnings, "cluster.tokenSecret", &n.Cluster.TokenSecret, def.Cluster.TokenSecret, oc.TokenSecret, true)
		overlayField(&warnings, "cluster.insecureSkipVerify", &n.Cluster.InsecureSkipVerify, def.Cluster.InsecureSkipVerify, oc.InsecureSkipVerify, false)
		overlayField(&warnings, "cluster.fingerprint", &n.Cluster.Fingerprint, def.Cluster.Fingerprint, oc.Fingerprint, false)
		overlayField(&warnings, "cluster.caFile", &n.Cluster.CAFile, def.Cluster.CAFile, oc.CAFile, false)
	}
	if os := o.Source; os != nil {
		overlayField(&warnings, "source.repoURL", &n.Source.RepoURL, def.Source.RepoURL, os.RepoURL, false)
		overlayField(&warnings, "source.path", &n.Source.Path, def.Source.Path, os.Path, false)
		overlayField(&warnings, "source.revision", &n.Source.Revision, def.Source.Revision, os.Revision, false)
		overlayField(&warnings, "source.username", &n.Source.Username, def.Source.Username, os.Username, false)
		overlayField(&warnings, "source.token", &n.Source.Token, def.Source.Token, os.Token, true)
		overlayField(&warnings, "source.sshKey", &n.Source.SSHKey, def.Source.SSHKey, os.SSHKey, true)
		overlayField(&warnings, "source.knownHostsFile", &n.Source.KnownHostsFile, def.Source.KnownHostsFile, os.KnownHostsFile, false)
		overlayField(&warnings, "source.insecureIgnoreHostKey", &n.Source.InsecureIgnoreHostKey, def.Source.InsecureIgnoreHostKey, os.InsecureIgnoreHostKey, false)
		overlayField(&warnings, "source.submodules", &n.Source.Submodules, def.Source.Submodules, os.Submodules, false)
	}
	if or := o.Reconcile; or != nil {
		overlayDuration(&warnings, &probs, "reconcile.interval", &n.Reconcile.Interval, def.Reconcile.Interval, or.Interval)
		overlayField(&warnings, "reconcile.autoSync", &n.Reconcile.AutoSync, def.Reconcile.AutoSync, or.AutoSync, false)
		overlayField(&warnings, "reconcile.prune", &n.Reconcile.Prune, def.Reconcile.Prune, or.Prune, false)
		overlayField(&warnings, "reconcile.concurrency", &n.Reconcile.Concurrency, def.Reconcile.Concurrency, or.Concurrency, false)
		overlayField(&warnings, "reconcile.dryRun", &n.Reconcile.DryRun, def.Reconcile.DryRun, or.DryRun, false)
		overlayDuration(&warnings, &probs, "reconcile.driftCheckInterval", &n.Reconcile.DriftCheckInterval, def.Reconcile.DriftCheckInterval, or.DriftCheckInterval)
		overlayField(&warnings, "reconcile.historyPerResource", &n.Reconcile.HistoryPerResource, def.Reconcile.HistoryPerResource, or.HistoryPerResource, false)
		overlayField(&warnings, "reconcile.historyTotal", &n.Reconcile.HistoryTotal, def.Reconcile.HistoryTotal, or.HistoryTotal, false)
	}
	if of := o.Forge; of != nil {
		overlayField(&warnings, "forge.type", &n.Forge.Type, def.Forge.Type, of.Type, false)
		overlayField(&warnings, "forge.apiURL", &n.Forge.APIURL, def.Forge.APIURL, of.APIURL, false)
		overlayField(&warnings, "forge.repository", &n.Forge.Repository, def.Forge.Repository, of.Repository, false)
		overlayField(&warnings, "forge.token", &n.Forge.Token, def.Forge.Token, of.Token, true)
		overlayField(&warnings, "forge.pullRequestPreviews", &n.Forge.PullRequestPreviews, def.Forge.PullRequestPreviews, of.PullRequestPreviews, false)
	}
	warnings = append(warnings, n.validate(&probs)...)
	if err := probs.err(); err != nil {
		return nil, warnings, err
	}
	return n, warnings, nil
}

// overlayField applies one saved setting. When the configuration (file,
// environment or flag) gave the key a value of its own and the UI's differs,
// the UI's wins, and a warning says so: the daemon logs it at start and the
// Settings page lists it, so an edit of the file that changes nothing is
// explained. Secrets are named, never shown.
func overlayField[T comparable](warnings *[]string, key string, dst *T, def T, src *T, secret bool) {
	if src == nil {
		return
	}
	if *dst != def && *src != *dst {
		if secret {
			*warnings = append(*warnings, fmt.Sprintf("%s saved in the UI shadows the configuration's: the UI's is in force; clear it under Settings to use the configuration's", key))
		} else {
			*warnings = append(*warnings, fmt.Sprintf("%s saved in the UI (%v) shadows the configuration's (%v): the UI's is in force; clear it under Settings to use the configuration's", key, *src, *dst))
		}
	}
	*dst = *src
}

// overlayDuration is overlayField for a duration saved as text ("60s"); a
// text that is no duration is a problem of key.
func overlayDuration(warnings *[]string, probs *problems, key string, dst *time.Duration, def time.Duration, src *string) {
	if src == nil {
		return
	}
	d, err := parseDuration(*src)
	if err != nil {
		probs.addf(key, "%v", err)
		return
	}
	overlayField(warnings, key, dst, def, &d, false)
}
