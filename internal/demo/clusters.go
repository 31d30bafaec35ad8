package demo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/pvesim"
)

// clusterName is the name of the demo's i-th cluster (from 1).
func clusterName(i int) string { return fmt.Sprintf("lab-%d", i) }

// extraCluster is a further simulated cluster of a demo with --clusters.
type extraCluster struct {
	name  string
	sim   *pvesim.Server
	state string
}

// startExtraClusters starts clusters 2..n, each an independent simulator
// with its state kept in dir (cluster-lab-2.json, ...).
func startExtraClusters(dir string, n int, secret string, taskSpeed float64) ([]*extraCluster, error) {
	var out []*extraCluster
	for i := 2; i <= n; i++ {
		name := clusterName(i)
		sim := pvesim.New(pvesim.Options{Nodes: 3, TokenID: simTokenID, TokenSecret: secret,
			TaskSpeed: taskSpeed, Seed: time.Now().UnixNano() + int64(i), StatusInterval: pvesim.DefaultStatusInterval})
		state := filepath.Join(dir, "cluster-"+name+".json")
		if err := sim.LoadState(state); err != nil && !errors.Is(err, fs.ErrNotExist) {
			stopExtraClusters(out)
			return nil, fmt.Errorf("simulated cluster %s state: %w", name, err)
		}
		if err := sim.Start("127.0.0.1:0"); err != nil {
			stopExtraClusters(out)
			return nil, err
		}
		out = append(out, &extraCluster{name: name, sim: sim, state: state})
	}
	return out, nil
}

// stopExtraClusters saves each cluster's state and stops it.
func stopExtraClusters(cs []*extraCluster) error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.sim.SaveState(c.state))
		c.sim.Close()
	}
	return errors.Join(errs...)
}

// clustersConfig lists the demo's clusters: lab-1 on the first simulator
// following clusters/lab-1 (the examples), the others following their own
// directories.
func clustersConfig(first *pvesim.Server, extra []*extraCluster, secret string) []config.ClusterEntry {
	entry := func(name, url string) config.ClusterEntry {
		return config.ClusterEntry{Name: name, Path: "clusters/" + name,
			Cluster: config.Cluster{Endpoint: url, TokenID: simTokenID, TokenSecret: secret}}
	}
	out := []config.ClusterEntry{entry(clusterName(1), first.APIURL())}
	for _, c := range extra {
		out = append(out, entry(c.name, c.sim.APIURL()))
	}
	return out
}

// extraManifests are the guests of the demo's further clusters: small
// VMs and a container with blank disks, so they need no downloads.
func extraManifests(name string) map[string]string {
	vm := func(vm string, vmid, cores int, node string) string {
		return fmt.Sprintf(`apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: %s
  node: %s
  tags: [%s]
spec:
  vmid: %d
  cores: %d
  memory: 1024
  disks:
    - storage: local-lvm
      size: 8G
  net:
    - bridge: vmbr0
  state: running
`, vm, node, name, vmid, cores)
	}
	return map[string]string{
		"clusters/" + name + "/web.yaml": vm("web", 200, 2, "pve1"),
		"clusters/" + name + "/db.yaml":  vm("db", 201, 4, "pve2"),
		"clusters/" + name + "/README.md": "Manifests of the simulated cluster " + name +
			". Each directory under clusters/ is one cluster: commit here and only " + name + " changes.\n",
	}
}

// writeExtraManifests adds the further clusters' manifests to a new demo
// repository.
func writeExtraManifests(repoDir string, n int) error {
	for i := 2; i <= n; i++ {
		for p, content := range extraManifests(clusterName(i)) {
			dst := filepath.Join(repoDir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if _, err := os.Stat(dst); err == nil {
				continue // keep what the user changed
			}
			if err := os.WriteFile(dst, []byte(content), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
