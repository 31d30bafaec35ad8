package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/export"
	"github.com/proxmops/proxmops/internal/gittest"
)

// The daemon exports with its own cluster connection; bad options are
// api.ErrInvalid (a 400), not a server error.
func TestDaemonExportsWithItsConnection(t *testing.T) {
	sim := startSim(t, 0.1, pvesimGuest(441, "legacy"))
	repo := gittest.New(t)
	repo.Commit("empty", map[string]string{"README.md": "x\n"})
	e := newEnv(t, sim, repo, "")
	res, err := e.c.Export(context.Background(), export.Options{VMIDs: "441"})
	if err != nil || len(res.Files) != 1 || res.Files[0].Path != "vms/legacy.yaml" || !strings.Contains(string(res.Files[0].Data), "vmid: 441") {
		t.Fatalf("export: %v %+v", err, res)
	}
	if _, err := e.c.Export(context.Background(), export.Options{VMIDs: "4x"}); !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("bad vmid: %v", err)
	}
}

// The daemon's backend is a Fleet: it exports the request's cluster, the
// only one without a name, and refuses to guess among several.
func TestFleetExportsTheRequestsCluster(t *testing.T) {
	alpha, beta := startSim(t, 0.1), startSim(t, 0.1)
	if err := beta.AddGuest(pvesimGuest(441, "legacy")); err != nil {
		t.Fatal(err)
	}
	repo := gittest.New(t)
	repo.Commit("empty", map[string]string{"README.md": "x\n"})
	e := newFleetEnv(t, repo, map[string]string{"alpha": alpha.APIURL(), "beta": beta.APIURL()})
	var _ interface {
		Export(context.Context, export.Options) (*export.Result, error)
	} = e.f
	res, err := e.f.Export(api.WithCluster(context.Background(), "beta"), export.Options{VMIDs: "441"})
	if err != nil || len(res.Files) != 1 || !strings.Contains(string(res.Files[0].Data), "vmid: 441") {
		t.Fatalf("beta's export: %v %+v", err, res)
	}
	if _, err := e.f.Export(context.Background(), export.Options{All: true}); !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("an export naming no cluster of two: %v", err)
	}
	if _, err := e.f.Export(api.WithCluster(context.Background(), "gamma"), export.Options{All: true}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("an export of an unknown cluster: %v", err)
	}
}
