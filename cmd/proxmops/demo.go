package main

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/proxmops/proxmops/internal/demo"
)

func init() {
	var (
		addr, dir, logLevel    string
		guestSSHPort, clusters int
		taskSpeed              float64
		interval               time.Duration
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Try proxmops: a simulated cluster, an example Git repository and the daemon, in one process",
		Long: "demo starts a simulated three-node Proxmox VE cluster, makes a Git repository from the examples\n" +
			"and runs the daemon against both. It prints the UI's address, how to log in and where the\n" +
			"repository is: commit a change there and the simulated cluster follows within seconds.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(commandContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return demo.Run(ctx, demo.Options{
				Addr: addr, Dir: dir, TaskSpeed: taskSpeed, Interval: interval, LogLevel: logLevel,
				Out: cmd.OutOrStdout(), Log: cmd.ErrOrStderr(), UI: uiFS(), GuestSSHPort: guestSSHPort, Clusters: clusters,
			})
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address of the UI and API")
	cmd.Flags().StringVar(&dir, "dir", "", "keep the demo's state (repository, database, cluster) in this directory; default: a temporary one, removed on exit")
	cmd.Flags().Float64Var(&taskSpeed, "task-speed", 1, "simulated task durations: 1 is realistic, 0 is instant")
	cmd.Flags().DurationVar(&interval, "interval", 5*time.Second, "time between reconcile passes")
	cmd.Flags().IntVar(&guestSSHPort, "guest-ssh-port", 2222, "SSH port of the simulated guests that have a static 127.0.0.0/8 address, which the examples that declare provision get (0 = any free port)")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	cmd.Flags().IntVar(&clusters, "clusters", 1, "number of simulated clusters; with more than 1 the repository has one directory per cluster (clusters/lab-1, clusters/lab-2, ...)")
	rootCmd.AddCommand(cmd)
}
