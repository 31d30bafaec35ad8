package settings

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
)

// Document is c as the API shows it: secrets only as "set" or "not set".
func Document(c *config.Config, warnings []string) api.SettingsDocument {
	return api.SettingsDocument{
		Cluster: api.ClusterSettings{
			Endpoint:           c.Cluster.Endpoint,
			TokenID:            c.Cluster.TokenID,
			TokenSecret:        mask(c.Cluster.TokenSecret),
			InsecureSkipVerify: c.Cluster.InsecureSkipVerify,
			Fingerprint:        c.Cluster.Fingerprint,
			CAFile:             c.Cluster.CAFile,
		},
		Source: api.SourceSettings{
			RepoURL:               c.Source.RepoURL,
			Path:                  c.Source.Path,
			Revision:              c.Source.Revision,
			Username:              c.Source.Username,
			Token:                 mask(c.Source.Token),
			SSHKey:                mask(c.Source.SSHKey),
			KnownHostsFile:        c.Source.KnownHostsFile,
			InsecureIgnoreHostKey: c.Source.InsecureIgnoreHostKey,
			Submodules:            c.Source.Submodules,
		},
		Reconcile: api.ReconcileSettings{
			Interval:           FormatDuration(c.Reconcile.Interval),
			AutoSync:           c.Reconcile.AutoSync,
			Prune:              c.Reconcile.Prune,
			Concurrency:        c.Reconcile.Concurrency,
			DryRun:             c.Reconcile.DryRun,
			DriftCheckInterval: FormatDuration(c.Reconcile.DriftCheckInterval),
			HistoryPerResource: c.Reconcile.HistoryPerResource,
			HistoryTotal:       c.Reconcile.HistoryTotal,
		},
		Forge: api.ForgeSettings{
			Type:                c.Forge.Type,
			APIURL:              c.Forge.APIURL,
			Repository:          c.Forge.Repository,
			Token:               mask(c.Forge.Token),
			PullRequestPreviews: c.Forge.PullRequestPreviews,
		},
		Warnings: warnings,
	}
}

// FormatDuration writes whole seconds as "60s" rather than "1m0s".
func FormatDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

func mask(secret string) string {
	if secret == "" {
		return api.SecretNotSet
	}
	return api.SecretSet
}

// ParsePatch decodes a PUT /api/v1/settings body (the settings document,
// any subset of its fields) into the fields to save. A secret given as
// "set" or "not set", or left out, keeps its saved value; "" clears it.
// Unknown keys are errors with a suggestion. Values are checked when the
// overlay is applied (config.Config.WithOverlay).
func ParsePatch(body []byte) (config.Overlay, error) {
	o, err := config.ParseOverlay(body)
	if err != nil {
		return config.Overlay{}, err
	}
	keep := func(p **string) {
		if *p != nil && (**p == api.SecretSet || **p == api.SecretNotSet) {
			*p = nil
		}
	}
	if o.Cluster != nil {
		keep(&o.Cluster.TokenSecret)
	}
	if o.Source != nil {
		keep(&o.Source.Token)
		keep(&o.Source.SSHKey)
	}
	if o.Forge != nil {
		keep(&o.Forge.Token)
	}
	return o, nil
}

// Update returns saved with every field present in patch put over it.
func Update(saved, patch config.Overlay) (config.Overlay, error) {
	a, err := toMap(saved)
	if err != nil {
		return config.Overlay{}, err
	}
	b, err := toMap(patch)
	if err != nil {
		return config.Overlay{}, err
	}
	for section, fields := range b {
		if a[section] == nil {
			a[section] = map[string]json.RawMessage{}
		}
		for k, v := range fields {
			a[section][k] = v
		}
	}
	j, err := json.Marshal(a)
	if err != nil {
		return config.Overlay{}, err
	}
	return config.ParseOverlay(j)
}

// Fields lists the keys ("cluster.endpoint", ...) present in o, for logs
// that must not show values.
func Fields(o config.Overlay) []string {
	m, err := toMap(o)
	if err != nil {
		return nil
	}
	var out []string
	for section, fields := range m {
		for k := range fields {
			out = append(out, section+"."+k)
		}
	}
	sort.Strings(out)
	return out
}

func toMap(o config.Overlay) (map[string]map[string]json.RawMessage, error) {
	j, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	m := map[string]map[string]json.RawMessage{}
	return m, json.Unmarshal(j, &m)
}
