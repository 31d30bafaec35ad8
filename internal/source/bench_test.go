package source

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkSyncNewCommit measures one sync that finds a new commit in a
// repository of 500 manifests (fetch over file:// and a fresh tree).
func BenchmarkSyncNewCommit(b *testing.B) {
	r := newTestRepo(b)
	files := map[string]string{}
	for i := range 500 {
		files[fmt.Sprintf("proxmox/vm-%03d.yaml", i)] = fmt.Sprintf("apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata:\n  name: vm-%03d\n", i)
	}
	r.Commit("many", files)
	s, ctx := syncedSource(b, r.URL()), context.Background()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		r.Commit(fmt.Sprintf("change %d", i), map[string]string{"proxmox/vm-000.yaml": fmt.Sprintf("# %d\n", i)})
		b.StartTimer()
		if _, err := s.Sync(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSyncUnchanged measures the idle case of every reconcile pass:
// ask the server for its refs and find nothing new.
func BenchmarkSyncUnchanged(b *testing.B) {
	r := newTestRepo(b)
	r.Commit("one", map[string]string{"proxmox/a.yaml": "a: 1\n"})
	s, ctx := syncedSource(b, r.URL()), context.Background()
	b.ResetTimer()
	for range b.N {
		if _, err := s.Sync(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// syncedSource follows the proxmox folder of the repository at url, synced
// once.
func syncedSource(b *testing.B, url string) *Syncer {
	b.Helper()
	s, err := New(Options{URL: url, Path: "proxmox", CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s
}
