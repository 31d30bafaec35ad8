package engine_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
)

// observedOf is the subset of an action's Observed map under keys.
func observedOf(a *engine.Action, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		if v, ok := a.Observed[k]; ok {
			out[k] = v
		}
	}
	return out
}

// A downloaded ISO's observed state says what the engine compares, in the
// form of its changes: the storage, the source its download task logged
// and the checksum it was asked to verify, which is left out when no
// record of the download says it (a new engine proves the download from
// the task history alone).
func TestIsoObservedHasSourceStorageAndRecordedChecksum(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{}, "isos/debian-12.yaml", seedIso)
	keys := []string{"storage", "filename", "source", "checksum", "node"}
	src := e.files.URL + "/isos/debian-12-amd64-netinst.iso"
	want := map[string]any{"storage": "local", "filename": "debian-12-amd64-netinst.iso", "source": src,
		"checksum": "sha256:" + strings.ToLower(e.isoSum), "node": "pve1"}
	if got := observedOf(e.assertInSync(eng).Find(engine.KindIso, "debian-12"), keys...); !reflect.DeepEqual(got, want) {
		t.Fatalf("observed %v, want %v", got, want)
	}
	delete(want, "checksum")
	if got := observedOf(e.assertInSync(e.engine(engine.Options{})).Find(engine.KindIso, "debian-12"), keys...); !reflect.DeepEqual(got, want) {
		t.Fatalf("a new engine observes %v, want %v (no checksum it does not know)", got, want)
	}
}

// A template's observed state has its storage and file name, and the
// source (a download) or the appliance file name (the catalogue).
func TestContainerTemplateObservedHasSourceAndFilename(t *testing.T) {
	e := newEnv(t)
	filesURL, sum := writeExampleTemplates(t, e)
	eng := e.engine(engine.Options{})
	e.converge(eng)
	p := e.assertInSync(eng)
	keys := []string{"storage", "filename", "source", "checksum", "appliance"}
	want := map[string]any{"storage": "nfs-shared", "filename": "alpine-3.20-default_20241201_amd64.tar.xz",
		"source": filesURL + "/images/alpine/3.20/amd64/default/20241201_13%3A00/rootfs.tar.xz", "checksum": "sha256:" + sum}
	if got := observedOf(p.Find(engine.KindContainerTemplate, "alpine-3-20"), keys...); !reflect.DeepEqual(got, want) {
		t.Fatalf("alpine observed %v, want %v", got, want)
	}
	want = map[string]any{"storage": "local", "filename": "debian-12-standard_12.7-1_amd64.tar.zst", "appliance": "debian-12-standard_12.7-1_amd64.tar.zst"}
	if got := observedOf(p.Find(engine.KindContainerTemplate, "debian-12-standard"), keys...); !reflect.DeepEqual(got, want) {
		t.Fatalf("debian observed %v, want %v", got, want)
	}
}
