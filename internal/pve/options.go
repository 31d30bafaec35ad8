package pve

import "context"

// ClusterOptions is what GET /cluster/options says about guest tags
// (pve-manager API2/Cluster.pm get_options, parsed as pve-cluster
// DataCenterConfig.pm parse_datacenter_config leaves it). UserTagAccess and
// RegisteredTags are given to callers with Sys.Audit on / only.
type ClusterOptions struct {
	TagStyle struct {
		CaseSensitive Int    `json:"case-sensitive"`
		Ordering      string `json:"ordering"`
	} `json:"tag-style"`
	UserTagAccess *struct {
		UserAllow     string   `json:"user-allow"`
		UserAllowList []string `json:"user-allow-list"`
	} `json:"user-tag-access"`
	RegisteredTags []string `json:"registered-tags"`
	// AllowedTags are the tags the caller may set (get_allowed_tags).
	AllowedTags []string `json:"allowed-tags"`
}

// ClusterOptions reads the datacenter options.
func (c *Client) ClusterOptions(ctx context.Context) (ClusterOptions, error) {
	var o ClusterOptions
	err := c.Get(ctx, "cluster/options", nil, &o)
	return o, err
}
