package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/daemon"
)

func init() {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon: reconcile loop, HTTP API and web UI",
		Long: "serve keeps the cluster matching the Git repository, continuously, and serves the API and the web UI.\n" +
			"It starts even when the cluster or the repository are not configured yet: the UI's Settings page sets them.\n" +
			"On first start it prints a one-time setup token for creating the first admin.",
		Args: cobra.NoArgs,
	}
	flags := config.BindFlags(cmd.Flags(), slices.Concat(
		[]string{"server.addr", "server.databasePath", "server.database", "server.keyFile", "server.tlsCertFile", "server.tlsKeyFile"},
		clusterConnKeys,
		[]string{"source.repoURL", "source.path", "source.revision",
			"reconcile.interval", "reconcile.autoSync", "reconcile.prune", "reconcile.dryRun",
			"log.format", "log.level"})...)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, warnings, err := flags.Load()
		if err != nil {
			return err
		}
		logger, ring, err := daemon.NewLogger(cfg.Log, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		for _, w := range warnings {
			logger.Warn(w)
		}
		ctx, stop := signal.NotifyContext(commandContext(cmd), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err = daemon.Run(ctx, daemon.Options{
			Config: cfg, Logger: logger, Logs: ring, SetupOutput: cmd.OutOrStdout(), UI: uiFS(),
		})
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		return nil
	}
	rootCmd.AddCommand(cmd)
}

// commandContext is the command's context, or a background one when cobra
// was run without one.
func commandContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
