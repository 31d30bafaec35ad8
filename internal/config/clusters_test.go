package config

import (
	"strings"
	"testing"
)

func TestClustersListLoadsEachClusterWithItsPath(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "home-token", "home-secret\n")
	writeFile(t, dir, "ca.pem", "x")
	cfg := writeFile(t, dir, "c.yaml", `
clusters:
  - name: home
    endpoint: https://pve-home:8006
    tokenId: proxmops@pve!gitops
    tokenSecretFile: home-token
    caFile: ca.pem
    path: clusters/home/
  - name: office-1
    endpoint: https://pve-office:8006/api2/json
    tokenId: proxmops@pve!gitops
    tokenSecret: ${OFFICE_SECRET}
    fingerprint: "ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67:89"
    path: clusters/office
source:
  repoURL: https://example.invalid/r.git
  path: proxmox
`)
	c, warnings, err := Load(LoadOptions{File: cfg, Env: []string{"OFFICE_SECRET=office-secret", "PROXMOPS_CLUSTERS_OFFICE_1_TOKENID=other@pve!t"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %v", warnings)
	}
	if !c.MultiCluster() || len(c.Clusters) != 2 {
		t.Fatalf("clusters: %+v", c.Clusters)
	}
	home, office := c.Clusters[0], c.Clusters[1]
	if home.Endpoint != "https://pve-home:8006/api2/json" || home.TokenSecret != "home-secret" || home.Path != "clusters/home" || !strings.HasPrefix(home.CAFile, dir) {
		t.Errorf("home: %+v", home)
	}
	if office.TokenSecret != "office-secret" || office.TokenID != "other@pve!t" || !strings.HasPrefix(office.Fingerprint, "AB:CD:") {
		t.Errorf("office (env override, expansion, normalised fingerprint): %+v", office)
	}
	if err := c.RequireCluster(); err != nil {
		t.Errorf("RequireCluster: %v", err)
	}
	oc, ok := c.ForCluster("office-1")
	if !ok || oc.Cluster.Endpoint != office.Endpoint || oc.Source.Path != "proxmox/clusters/office" || oc.Clusters != nil {
		t.Errorf("ForCluster: %+v", oc)
	}
	if _, ok := c.ForCluster("nope"); ok {
		t.Error("ForCluster found a cluster not listed")
	}
	if got := strings.Join(c.ClusterNames(), ","); got != "home,office-1" {
		t.Errorf("names %q", got)
	}
	r := c.Redacted()
	if r.Clusters[0].TokenSecret != "(set)" || c.Clusters[0].TokenSecret != "home-secret" {
		t.Errorf("redaction shares the list: %q %q", r.Clusters[0].TokenSecret, c.Clusters[0].TokenSecret)
	}
}

func TestSingleClusterSectionIsOneClusterNamedDefault(t *testing.T) {
	c, _, err := Load(LoadOptions{Env: []string{"PROXMOPS_CLUSTER_ENDPOINT=https://pve:8006", "PROXMOPS_SOURCE_PATH=proxmox"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := c.Targets()
	if c.MultiCluster() || len(ts) != 1 || ts[0].Name != DefaultClusterName || ts[0].Endpoint != "https://pve:8006/api2/json" {
		t.Fatalf("targets: %+v", ts)
	}
	dc, ok := c.ForCluster(DefaultClusterName)
	if !ok || dc.Source.Path != "proxmox" {
		t.Fatalf("ForCluster(default): %+v", dc)
	}
}

func TestClustersListRefusesBadEntries(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"both cluster and clusters", "cluster:\n  endpoint: https://a:8006\nclusters:\n  - name: a\n    path: a\n",
			[]string{"cluster and clusters are both set"}},
		{"name missing and not a label", "clusters:\n  - path: a\n  - name: Home_1\n    path: b\n",
			[]string{"clusters[0].name: is required", `"Home_1" is not a lower-case DNS label`}},
		{"duplicate names", "clusters:\n  - name: a\n    path: a\n  - name: a\n    path: b\n",
			[]string{`"a" is also the name of clusters[0]`}},
		{"nested paths", "clusters:\n  - name: a\n    path: clusters/a\n  - name: b\n    path: clusters/a/b\n",
			[]string{`clusters[b].path: "clusters/a/b" and the path "clusters/a" of cluster "a" overlap`}},
		{"root path beside another", "clusters:\n  - name: a\n  - name: b\n    path: b\n",
			[]string{"overlap"}},
		{"path outside the repository", "clusters:\n  - name: a\n    path: ../x\n", []string{"clusters[a].path", "points outside"}},
		{"unknown key with suggestion", "clusters:\n  - name: a\n    endpont: https://a\n", []string{"clusters[0].endpont", "did you mean `endpoint`"}},
		{"bad token id", "clusters:\n  - name: a\n    tokenId: nope\n", []string{"clusters[a].tokenId"}},
		{"not a list", "clusters:\n  name: a\n", []string{"expected a list of clusters"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeFile(t, t.TempDir(), "c.yaml", tc.yaml)
			_, _, err := Load(LoadOptions{File: cfg, Env: []string{}})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestClustersRequireEachClustersCredentials(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "c.yaml", "clusters:\n  - name: home\n    endpoint: https://a:8006\n    path: home\n")
	c, _, err := Load(LoadOptions{File: cfg, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	err = c.RequireCluster()
	if err == nil || !strings.Contains(err.Error(), "clusters[home].tokenId: is required (or PROXMOPS_CLUSTERS_HOME_TOKENID)") {
		t.Fatalf("RequireCluster: %v", err)
	}
}

func TestUnknownClustersEnvironmentVariableWarns(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "c.yaml", "clusters:\n  - name: home\n    path: home\n")
	_, warnings, err := Load(LoadOptions{File: cfg, Env: []string{"PROXMOPS_CLUSTERS_OFFICE_ENDPOINT=https://x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(warnings, "\n"), "PROXMOPS_CLUSTERS_OFFICE_ENDPOINT is not a configuration key") {
		t.Fatalf("warnings: %v", warnings)
	}
}

func TestOverlayClusterIgnoredWithClustersList(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "c.yaml", "clusters:\n  - name: home\n    path: home\n")
	c, _, err := Load(LoadOptions{File: cfg, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	ep := "https://saved:8006"
	n, warnings, err := c.WithOverlay(Overlay{Cluster: &ClusterOverlay{Endpoint: &ep}})
	if err != nil || n.Cluster.Endpoint != "" || len(warnings) != 1 {
		t.Fatalf("overlay: %v %+v %v", err, n.Cluster, warnings)
	}
}
