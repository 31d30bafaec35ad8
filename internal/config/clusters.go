package config

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DefaultClusterName names the cluster of the single `cluster:` section.
const DefaultClusterName = "default"

// ClusterEntry is one cluster of the `clusters:` list: a name, the keys
// of the `cluster:` section and the sub-directory of the source it follows.
type ClusterEntry struct {
	// Name is a DNS label, unique in the list; it labels the cluster's
	// resources, history, metrics and API answers.
	Name string `yaml:"name" json:"name"`
	Cluster
	// Path is the directory of this cluster's manifests, relative to
	// source.path; clusters' paths never overlap.
	Path string `yaml:"path" json:"path"`
}

// clusterNamePattern is a DNS label (RFC 1123), as manifest names are.
var clusterNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// MultiCluster tells whether the configuration uses the `clusters:` list.
func (c *Config) MultiCluster() bool { return len(c.Clusters) > 0 }

// Targets lists the clusters to reconcile: the `clusters:` entries, or the
// `cluster:` section as one cluster named "default" following source.path
// itself.
func (c *Config) Targets() []ClusterEntry {
	if len(c.Clusters) > 0 {
		return slices.Clone(c.Clusters)
	}
	return []ClusterEntry{{Name: DefaultClusterName, Cluster: c.Cluster}}
}

// ClusterNames lists the names of Targets.
func (c *Config) ClusterNames() []string {
	var out []string
	for _, t := range c.Targets() {
		out = append(out, t.Name)
	}
	return out
}

// ForCluster returns the configuration one cluster runs with: a copy whose
// `cluster:` section is that cluster's and whose source.path is the
// cluster's sub-directory of it. False when there is no such cluster.
func (c *Config) ForCluster(name string) (*Config, bool) {
	for _, t := range c.Targets() {
		if t.Name != name {
			continue
		}
		n := c.Clone()
		n.Cluster = t.Cluster
		n.Clusters = nil
		n.Source.Path = JoinSourcePath(c.Source.Path, t.Path)
		return n, true
	}
	return nil, false
}

// JoinSourcePath joins source.path and a cluster's path ("" for the root).
func JoinSourcePath(base, sub string) string {
	p := path.Join(base, sub)
	if p == "." {
		return ""
	}
	return p
}

// clusterKeys are the keys a `clusters:` entry takes besides name and path.
func clusterKeys() []key { return keysOf("cluster") }

func entryKey(i int, e ClusterEntry, name string) string {
	if e.Name != "" {
		return fmt.Sprintf("clusters[%s].%s", e.Name, name)
	}
	return fmt.Sprintf("clusters[%d].%s", i, name)
}

// clusters decodes the `clusters:` list: a sequence of mappings.
func (l *fileLayer) clusters(c *Config, n *yaml.Node) {
	if n.Kind == yaml.AliasNode {
		l.problem(n, "clusters", "YAML aliases are not allowed in the config file")
		return
	}
	items, ok := l.sequence(n, "clusters", "a list of clusters (- name: ...)")
	if !ok {
		return
	}
	names := []string{"name", "path"}
	for _, k := range clusterKeys() {
		names = append(names, k.name)
	}
	for i, item := range items {
		where := fmt.Sprintf("clusters[%d]", i)
		pairs, ok := l.mapping(item, where)
		if !ok {
			continue
		}
		tmp := &Config{}
		var e ClusterEntry
		for _, mv := range pairs {
			name, ktk := mv.Key.Value, mv.Key
			switch name {
			case "name", "path":
				text, ok := l.scalar(mv.Value, where+"."+name)
				if !ok {
					continue
				}
				if name == "name" {
					e.Name = text
				} else {
					e.Path = text
				}
				continue
			}
			k, ok := keyByPath["cluster."+name]
			if !ok {
				l.problem(ktk, where+"."+name, "unknown key `%s` in a cluster of clusters%s", name, didYouMean(name, names))
				continue
			}
			text, ok := l.scalar(mv.Value, where+"."+name)
			if !ok {
				continue
			}
			if err := k.set(tmp, text); err != nil {
				l.problem(mv.Value, where+"."+name, "%v", err)
				continue
			}
			if k.secret && text != "" && !strings.Contains(mv.Value.Value, "${") {
				l.warnings = append(l.warnings, fmt.Sprintf("%s:%d: %s.%s is written inline in the config file; prefer %sFile or ${VAR}",
					l.name, mv.Value.Line, where, name, name))
			}
		}
		e.Cluster = tmp.Cluster
		c.Clusters = append(c.Clusters, e)
	}
	l.set["clusters"] = true
}

// scalar reads a single value with ${VAR} expanded; false after a problem.
func (l *fileLayer) scalar(n *yaml.Node, keyPath string) (string, bool) {
	switch {
	case isNull(n):
		return "", true
	case n.Kind == yaml.ScalarNode:
		return l.expand(n.Value, n, keyPath)
	case n.Kind == yaml.AliasNode:
		l.problem(n, keyPath, "YAML aliases are not allowed in the config file")
	default:
		l.problem(n, keyPath, "expected a single value, found %s", nodeType(n))
	}
	return "", false
}

func (l *fileLayer) expand(text string, n *yaml.Node, keyPath string) (string, bool) {
	out, _, err := expandEnv(text, l.lookup)
	if err != nil {
		l.problem(n, keyPath, "%v", err)
		return "", false
	}
	return out, true
}

// resolveClusterPaths makes the entries' file names relative to the config
// file's directory, as resolvePaths does for the sections.
func resolveClusterPaths(c *Config, dir string) {
	for i := range c.Clusters {
		for _, p := range []*string{&c.Clusters[i].TokenSecretFile, &c.Clusters[i].CAFile} {
			if *p != "" && !filepath.IsAbs(*p) && !strings.HasPrefix(*p, "~") {
				*p = filepath.Join(dir, *p)
			}
		}
	}
}

// ClusterEnvName is the environment variable overriding key (a key of the
// `cluster:` section, or "path") of the `clusters:` entry named name:
// PROXMOPS_CLUSTERS_<NAME>_<KEY>, upper-cased, a dash becoming "_".
func ClusterEnvName(name, key string) string {
	return "PROXMOPS_CLUSTERS_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_" + strings.ToUpper(key)
}

// applyClusterEnv overrides the keys of clusters listed in the file from
// PROXMOPS_CLUSTERS_<NAME>_<KEY>; it marks those names known.
func applyClusterEnv(c *Config, env map[string]string, probs *problems, known map[string]bool) {
	for i := range c.Clusters {
		e := &c.Clusters[i]
		if e.Name == "" {
			continue
		}
		if v, ok := env[ClusterEnvName(e.Name, "path")]; ok {
			e.Path = v
		}
		known[ClusterEnvName(e.Name, "path")] = true
		tmp := &Config{Cluster: e.Cluster}
		for _, k := range clusterKeys() {
			name := ClusterEnvName(e.Name, k.name)
			known[name] = true
			v, ok := env[name]
			if !ok {
				continue
			}
			if err := k.set(tmp, v); err != nil {
				probs.add(Problem{Key: entryKey(i, *e, k.name), Message: fmt.Sprintf("environment variable %s: %v", name, err)})
			}
		}
		e.Cluster = tmp.Cluster
	}
}

// readClusterSecrets reads each entry's tokenSecretFile.
func (c *Config) readClusterSecrets(read func(valueKey string, value *string, file string)) {
	for i := range c.Clusters {
		e := &c.Clusters[i]
		read(entryKey(i, *e, "tokenSecret"), &e.TokenSecret, e.TokenSecretFile)
	}
}

// validateClusters checks the `clusters:` list: names, paths that neither
// overlap nor nest, each entry's cluster keys; and that it is not given
// together with `cluster:`.
func (c *Config) validateClusters(probs *problems) []string {
	if len(c.Clusters) == 0 {
		return nil
	}
	var warnings []string
	if c.Cluster != (Cluster{}) {
		probs.addf("clusters", "cluster and clusters are both set: use clusters alone (the single cluster section is one cluster named %q following source.path)", DefaultClusterName)
	}
	seen := map[string]int{}
	for i := range c.Clusters {
		e := &c.Clusters[i]
		switch {
		case e.Name == "":
			probs.addf(fmt.Sprintf("clusters[%d].name", i), "is required: a lower-case DNS label such as home or office")
		case !clusterNamePattern.MatchString(e.Name):
			probs.addf(fmt.Sprintf("clusters[%d].name", i), "%q is not a lower-case DNS label (a-z, 0-9 and -, at most 63 characters)", e.Name)
		default:
			if j, dup := seen[e.Name]; dup {
				probs.addf(fmt.Sprintf("clusters[%d].name", i), "%q is also the name of clusters[%d]; names must be unique", e.Name, j)
			}
			seen[e.Name] = i
		}
		p, err := CleanSourcePath(e.Path)
		if err != nil {
			probs.addf(entryKey(i, *e, "path"), "%v", err)
		} else {
			e.Path = p
		}
		warnings = append(warnings, validateCluster(entryKey(i, *e, ""), &e.Cluster, probs)...)
	}
	for i := range c.Clusters {
		for j := i + 1; j < len(c.Clusters); j++ {
			a, b := c.Clusters[i], c.Clusters[j]
			if pathsOverlap(a.Path, b.Path) {
				probs.addf(entryKey(j, b, "path"), "%q and the path %q of cluster %q overlap: each cluster needs a directory of its own (e.g. clusters/%s)",
					b.Path, a.Path, a.Name, b.Name)
			}
		}
	}
	return warnings
}

// pathsOverlap tells whether one directory is, or is inside, the other
// ("" is the whole source).
func pathsOverlap(a, b string) bool {
	if a == "" || b == "" || a == b {
		return true
	}
	return strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}
