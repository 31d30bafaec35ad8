package config

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Overlay holds settings saved from the UI. They use the config file's
// keys; a nil field is not set and leaves the underlying configuration
// alone. For the daemon they take precedence over file, environment and
// flags. Server and log settings are not in it: they need a restart.
type Overlay struct {
	Cluster   *ClusterOverlay   `json:"cluster,omitempty"`
	Source    *SourceOverlay    `json:"source,omitempty"`
	Reconcile *ReconcileOverlay `json:"reconcile,omitempty"`
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
	setStr := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	setBool := func(dst *bool, src *bool) {
		if src != nil {
			*dst = *src
		}
	}
	setInt := func(dst *int, src *int) {
		if src != nil {
			*dst = *src
		}
	}
	var warnings []string
	if oc := o.Cluster; oc != nil && len(n.Clusters) > 0 {
		warnings = append(warnings, "the cluster settings saved from the UI are ignored: the configuration lists clusters")
	} else if oc != nil {
		setStr(&n.Cluster.Endpoint, oc.Endpoint)
		setStr(&n.Cluster.TokenID, oc.TokenID)
		setStr(&n.Cluster.TokenSecret, oc.TokenSecret)
		setBool(&n.Cluster.InsecureSkipVerify, oc.InsecureSkipVerify)
		setStr(&n.Cluster.Fingerprint, oc.Fingerprint)
		setStr(&n.Cluster.CAFile, oc.CAFile)
	}
	if os := o.Source; os != nil {
		setStr(&n.Source.RepoURL, os.RepoURL)
		setStr(&n.Source.Path, os.Path)
		setStr(&n.Source.Revision, os.Revision)
		setStr(&n.Source.Username, os.Username)
		setStr(&n.Source.Token, os.Token)
		setStr(&n.Source.SSHKey, os.SSHKey)
		setStr(&n.Source.KnownHostsFile, os.KnownHostsFile)
		setBool(&n.Source.InsecureIgnoreHostKey, os.InsecureIgnoreHostKey)
		setBool(&n.Source.Submodules, os.Submodules)
	}
	if or := o.Reconcile; or != nil {
		if or.Interval != nil {
			d, err := parseDuration(*or.Interval)
			if err != nil {
				probs.addf("reconcile.interval", "%v", err)
			} else {
				n.Reconcile.Interval = d
			}
		}
		setBool(&n.Reconcile.AutoSync, or.AutoSync)
		setBool(&n.Reconcile.Prune, or.Prune)
		setInt(&n.Reconcile.Concurrency, or.Concurrency)
		setBool(&n.Reconcile.DryRun, or.DryRun)
		if or.DriftCheckInterval != nil {
			d, err := parseDuration(*or.DriftCheckInterval)
			if err != nil {
				probs.addf("reconcile.driftCheckInterval", "%v", err)
			} else {
				n.Reconcile.DriftCheckInterval = d
			}
		}
		setInt(&n.Reconcile.HistoryPerResource, or.HistoryPerResource)
		setInt(&n.Reconcile.HistoryTotal, or.HistoryTotal)
	}
	warnings = append(warnings, n.validate(&probs)...)
	if err := probs.err(); err != nil {
		return nil, warnings, err
	}
	return n, warnings, nil
}
