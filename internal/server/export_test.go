package server

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/export"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/pvesim"
)

// exportingBackend is the fake backend with the controller's Export over
// a simulated cluster.
type exportingBackend struct {
	*fakeBackend
	client *pve.Client
}

func (b exportingBackend) Export(ctx context.Context, o export.Options) (*export.Result, error) {
	res, err := export.Run(ctx, b.client, o)
	if errors.Is(err, export.ErrOptions) {
		return nil, fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	return res, err
}

// GET /api/v1/export answers the exported tree as a tar.gz, for admins
// only; bad options are a 400 naming the problem.
func TestExportRouteServesATarGzOfTheTree(t *testing.T) {
	sim := simtest.Start(t, pvesim.Options{Nodes: 1, TokenID: "root@pam!srv", TokenSecret: "s", TaskSpeed: 0.01})
	if err := sim.AddGuest(pvesim.GuestSpec{VMID: 150, Node: "pve1", Config: map[string]string{
		"name": "legacy-01", "cores": "2", "scsi0": "local-lvm:vm-150-disk-0,size=4G", "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}}); err != nil {
		t.Fatal(err)
	}
	client, err := pve.New(pve.Config{Endpoint: sim.APIURL(), TokenID: "root@pam!srv", TokenSecret: "s", TaskPollMin: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	e := newEnv(t, func(o *Options) { o.Backend = exportingBackend{e0(o), client} })
	admin := e.admin()
	resp, body := admin.req("GET", "/api/v1/export?all=true&kind=vm", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/gzip" ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), "proxmops-export-") || resp.Header.Get("X-Proxmops-Manifests") != "1" {
		t.Fatalf("export: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	gz, err := gzip.NewReader(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name[strings.Index(h.Name, "/")+1:]] = string(b)
	}
	if y := files["vms/legacy-01.yaml"]; !strings.Contains(y, "vmid: 150") || !strings.Contains(y, "proxmops.dev/adopt: \"true\"") {
		t.Fatalf("archive: %v", files)
	}
	if b := admin.expect(400, "GET", "/api/v1/export?vmid=abc", nil); !strings.Contains(string(b), "is not a VMID") {
		t.Fatalf("bad vmid: %s", b)
	}
	admin.expect(400, "GET", "/api/v1/export?all=maybe", nil)
	e.viewer(admin).expect(403, "GET", "/api/v1/export?all=true", nil)
}

// A backend that cannot export answers 501.
func TestExportRouteWithoutExporter(t *testing.T) {
	e := newEnv(t)
	e.admin().expect(501, "GET", "/api/v1/export?all=true", nil)
}

func e0(o *Options) *fakeBackend { return o.Backend.(*fakeBackend) }
