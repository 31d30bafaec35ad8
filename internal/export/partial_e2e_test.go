package export_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/export"
)

// A partial export (--vmid) is checked as what it is, a part of the
// repository: the plan of the exported manifests reports on them alone,
// never every other owned guest as leaving the repository.
func TestPartialExportChecksOnlyWhatItExported(t *testing.T) {
	c := handMade(t)
	c.call("PUT", "/nodes/pve1/qemu/130/config", "tags", "app;managed-by-proxmops")
	c.call("PUT", "/nodes/pve1/lxc/200/config", "tags", "db;managed-by-proxmops")
	res := export1(t, c, export.Options{VMIDs: "100"})
	issues, err := res.Check(context.Background(), c.client)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range issues {
		if strings.Contains(s, "app-01") || strings.Contains(s, "db-01") || strings.Contains(s, "200") {
			t.Errorf("a guest the export left out is reported: %q", s)
		}
	}
}
