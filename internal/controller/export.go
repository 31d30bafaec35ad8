package controller

import (
	"context"
	"errors"
	"fmt"

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
