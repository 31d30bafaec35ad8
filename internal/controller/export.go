package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/export"
)

// Export reads the cluster and renders the manifests of what is on it
// (GET /api/v1/export; `proxmops export` is the same without a daemon).
func (c *Controller) Export(ctx context.Context, o export.Options) (*export.Result, error) {
	rt := c.currentRuntime()
	if rt.client == nil {
		return nil, fmt.Errorf("%s: %w", rt.clusterErr, api.ErrNotReady)
	}
	res, err := export.Run(ctx, rt.client, o)
	if errors.Is(err, export.ErrOptions) {
		return nil, fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	return res, err
}

// Export renders the manifests of one cluster's guests: the request's
// (?cluster=), or the only one. Without it the daemon's export route
// answered 501, its Settings download included.
func (f *Fleet) Export(ctx context.Context, o export.Options) (*export.Result, error) {
	cs, err := f.pick(ctx)
	if err != nil {
		return nil, err
	}
	if len(cs) != 1 {
		return nil, fmt.Errorf("an export reads one cluster: name one with ?cluster= (clusters: %s): %w", strings.Join(f.names, ", "), api.ErrInvalid)
	}
	return cs[0].Export(ctx, o)
}
