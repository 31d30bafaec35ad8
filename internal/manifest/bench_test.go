package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"
)

// benchTree writes files×perFile manifests (VMs, containers, templates and
// ISOs in rotation, some cloning the templates) and returns the directory.
func benchTree(b testing.TB, files, perFile int) string {
	b.Helper()
	dir := b.TempDir()
	n := 0
	for f := range files {
		var sb strings.Builder
		for range perFile {
			if sb.Len() > 0 {
				sb.WriteString("---\n")
			}
			id := 1000 + n
			node := fmt.Sprintf("pve%d", n%3+1)
			switch n % 10 {
			case 0:
				fmt.Fprintf(&sb, "apiVersion: proxmops.dev/v1\nkind: Template\nmetadata: {name: tpl-%d, node: %s}\nspec:\n  vmid: %d\n  image:\n    source: https://cloud.debian.org/images/cloud/bookworm/latest/debian-12-genericcloud-amd64.qcow2\n  cores: 2\n  memory: 2048\n  disks: [{storage: local-lvm, size: 10G}]\n  net: [{bridge: vmbr0}]\n", n, node, id)
			case 1:
				fmt.Fprintf(&sb, "apiVersion: proxmops.dev/v1\nkind: Iso\nmetadata: {name: iso-%d}\nspec:\n  source: https://cdimage.debian.org/cdimage/archive/12.8.0/amd64/iso-cd/debian-%d.iso\n  node: %s\n  storage: local\n  checksum: {algo: sha256, value: 04396d12b0f377958a070c38a923c227832fa3b3e18ddc013936ecf492e9fbb3}\n", n, n, node)
			case 2, 3:
				fmt.Fprintf(&sb, "apiVersion: proxmops.dev/v1\nkind: Container\nmetadata: {name: ct-%d, node: %s, tags: [lab]}\nspec:\n  vmid: %d\n  template: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n  cores: 1\n  memory: 512\n  rootfs: {storage: local-lvm, size: 8G}\n  net:\n    - {bridge: vmbr0, ip: 10.0.%d.%d/16, gw: 10.0.0.1}\n  features: {nesting: true}\n", n, node, id, n/250, n%250+2)
			default:
				tpl := n - n%10 // the template of this group of ten
				fmt.Fprintf(&sb, "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata:\n  name: vm-%d\n  node: pve%d\n  tags: [prod, app]\nspec:\n  vmid: %d\n  fromTemplate: {name: tpl-%d, linked: true}\n  cores: 2\n  memory: 2048\n  disks:\n    - {storage: local-lvm, size: 20G, discard: true}\n    - {slot: scsi1, storage: local-lvm, size: 50G}\n  net:\n    - {bridge: vmbr0, firewall: true}\n    - {bridge: vmbr1, tag: 40}\n  cloudInit:\n    user: debian\n    sshKeys: [ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAII9/UjT7L8VL54itcaiO2UWYIARFcav9TSUrKQks9xgm alice@laptop]\n    ipConfigs: [{ip: dhcp}, {ip: 10.40.%d.%d/16}]\n  state: running\n", n, tpl%3+1, id, tpl, n/250, n%250+2)
			}
			n++
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%04d.yaml", f)), []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakHeap samples the live heap every millisecond until stopped.
func peakHeap() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		return peak.Load()
	}
}

// BenchmarkLoad10k loads and validates 10,000 manifests in 1,000 files.
func BenchmarkLoad10k(b *testing.B) { benchLoad(b, 1000, 10) }

// BenchmarkLoad5k loads and validates 5,000 manifests in 500 files, the
// size of the repository `proxmops validate` is budgeted for.
func BenchmarkLoad5k(b *testing.B) { benchLoad(b, 500, 10) }

// TestWriteBenchTree writes BenchmarkLoad5k's manifests into the directory
// named by PROXMOPS_BENCH_TREE, to time `proxmops validate` on them
// (docs/benchmarks.md); without it the test is skipped.
func TestWriteBenchTree(t *testing.T) {
	out := os.Getenv("PROXMOPS_BENCH_TREE")
	if out == "" {
		t.Skip("PROXMOPS_BENCH_TREE not set")
	}
	dir := benchTree(t, 500, 10)
	if err := os.CopyFS(out, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
}

func benchLoad(b *testing.B, files, perFile int) {
	dir := benchTree(b, files, perFile)
	runtime.GC()
	b.ReportAllocs()
	stop := peakHeap()
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		set, err := LoadDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		if len(set.Resources) != files*perFile {
			b.Fatalf("%d resources", len(set.Resources))
		}
	}
	b.StopTimer()
	// CPU time per load, a figure that does not depend on how busy the
	// machine is (wall time on a shared 2-core machine does).
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(stop())/(1<<20), "peak-heap-MB")
}

// BenchmarkYAMLv3Floor10k measures go.yaml.in/yaml/v3 alone on the files
// of BenchmarkLoad10k, read beforehand and spread over all CPUs as LoadDir
// spreads them: one decoder per file, every document parsed into a
// yaml.Node. Nothing is converted, decoded or checked: the least a load
// costs (docs/benchmarks.md).
func BenchmarkYAMLv3Floor10k(b *testing.B) {
	parseFloor(b, benchFiles(b), func(data []byte) error {
		dec := yamlv3.NewDecoder(bytes.NewReader(data))
		for {
			var n yamlv3.Node
			if err := dec.Decode(&n); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
	})
}

// benchFiles reads the files of BenchmarkLoad10k's tree.
func benchFiles(b *testing.B) [][]byte {
	dir := benchTree(b, 1000, 10)
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(paths) != 1000 {
		b.Fatalf("%d files: %v", len(paths), err)
	}
	files := make([][]byte, len(paths))
	for i, p := range paths {
		if files[i], err = os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	}
	return files
}

// parseFloor runs parse on every file per iteration, on all CPUs.
func parseFloor(b *testing.B, files [][]byte, parse func([]byte) error) {
	runtime.GC()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		var next atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Value
		for range runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < len(files); i = int(next.Add(1) - 1) {
					if err := parse(files[i]); err != nil {
						failed.Store(err)
					}
				}
			})
		}
		wg.Wait()
		if err := failed.Load(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
}

// BenchmarkHostileFile measures ParseFile on 1 MiB files built to be slow
// to read: documents just under the token limit, documents at the size
// limit packed with tokens, and tens of thousands of tiny invalid documents
// (one error each, with its did-you-mean).
func BenchmarkHostileFile(b *testing.B) {
	dense := "---\n" + strings.Repeat("- a\n", (MaxDocumentSize-8)/4) + "\n"
	cases := []struct{ name, data string }{
		{"max-token-documents", manyMaxTokenDocuments()},
		{"max-size-documents", strings.Repeat(dense, MaxFileSize/len(dense))},
		{"tiny-invalid-documents", strings.Repeat("---\nkind: Nope\n", MaxFileSize/15)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			data := []byte(c.data)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				if _, errs := ParseFile("a.yaml", data); len(errs) == 0 {
					b.Fatal("no error")
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}
