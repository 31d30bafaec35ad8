package export

import (
	"slices"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/manifest"
)

func TestVMIDListsTakeSinglesAndRanges(t *testing.T) {
	in, err := ParseVMIDs("100, 105-110,200")
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int]bool{100: true, 101: false, 105: true, 110: true, 111: false, 200: true} {
		if in(id) != want {
			t.Errorf("%d: %v", id, !want)
		}
	}
	for _, bad := range []string{"", "abc", "99", "110-105", "100-", ","} {
		if _, err := ParseVMIDs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestKindsAcceptManifestNamesAndShortForms(t *testing.T) {
	got, err := ParseKinds([]string{"vm,Template", "sdn", "vms"})
	want := []manifest.Kind{manifest.KindVirtualMachine, manifest.KindTemplate, manifest.KindSdnZone, manifest.KindSdnVnet}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("%v %v", got, err)
	}
	if got, _ := ParseKinds(nil); !slices.Equal(got, GuestKinds) {
		t.Fatalf("default: %v", got)
	}
	if _, err := ParseKinds([]string{"Iso"}); err == nil || !strings.Contains(err.Error(), "not a kind export writes") {
		t.Fatalf("Iso: %v", err)
	}
}
