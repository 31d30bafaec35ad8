package main

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/proxmops/proxmops/pvesim"
	"github.com/spf13/cobra"
)

func init() {
	var (
		listen, tokenID, tokenSecret, faults, stateFile, rootPassword, tokenPrivs string
		guestRoot                                                                 string
		nodes, guestSSHPort                                                       int
		plainHTTP, allowRemote                                                    bool
		taskSpeed                                                                 float64
		seed                                                                      int64
		statusInterval, agentDelay                                                time.Duration
	)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run a simulated Proxmox VE API server",
		Long: "sim serves a simulated Proxmox VE cluster under /api2/json, for trying automation offline.\n" +
			"Once it is ready it prints a line with its URL and certificate fingerprint, then a line with\n" +
			"the API token it accepts (--token-secret, or a random secret made for this run).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tokenID == "" {
				return fmt.Errorf("--token-id must not be empty")
			}
			if tokenSecret == "" {
				// A fresh secret per run: a fixed default would be a known
				// password on any simulator listening beyond loopback.
				tokenSecret = rand.Text()
			}
			f, err := pvesim.ParseFaults(faults)
			if err != nil {
				return fmt.Errorf("--faults: %w", err)
			}
			if statusInterval < 0 {
				return fmt.Errorf("--status-interval must not be negative")
			}
			if guestSSHPort < 0 || guestSSHPort > 65535 {
				return fmt.Errorf("--guest-ssh-port must be a port number (0 = off)")
			}
			if guestRoot == "" && guestSSHPort > 0 && stateFile != "" {
				// The guests' files live beside the state that names them.
				guestRoot = stateFile + ".guests"
			}
			if statusInterval == 0 {
				statusInterval = -1 // no lag
			}
			if agentDelay < 0 {
				return fmt.Errorf("--agent-start-delay must not be negative")
			}
			if agentDelay == 0 {
				agentDelay = -1 // the agent answers at once
			}
			var privs []string
			if cmd.Flags().Changed("token-privileges") {
				if privs, err = pvesim.ParsePrivilegeList(tokenPrivs); err != nil {
					return fmt.Errorf("--token-privileges: %w", err)
				}
				if privs == nil {
					privs = []string{}
				}
			}
			srv := pvesim.New(pvesim.Options{StatusInterval: statusInterval, TokenPrivileges: privs,
				Nodes: nodes, TokenID: tokenID, TokenSecret: tokenSecret, RootPassword: rootPassword,
				TaskSpeed: taskSpeed, Seed: seed, Faults: f, AllowRemoteDownloads: allowRemote,
				AuthFailureDelay: time.Duration(3 * float64(time.Second) * taskSpeed),
				GuestSSHPort:     guestSSHPort, GuestRoot: guestRoot, AgentStartDelay: agentDelay,
			})
			if stateFile != "" {
				if err := srv.LoadState(stateFile); err != nil && !os.IsNotExist(err) {
					return err
				}
			}
			if plainHTTP {
				err = srv.Start(listen)
			} else {
				err = srv.StartTLS(listen)
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if plainHTTP {
				fmt.Fprintf(out, "pvesim listening on %s\n", srv.APIURL())
			} else {
				fmt.Fprintf(out, "pvesim listening on %s fingerprint %s\n", srv.APIURL(), srv.Fingerprint())
			}
			fmt.Fprintf(out, "pvesim token %s secret %s (header Authorization: PVEAPIToken=%s=%s)\n", tokenID, tokenSecret, tokenID, tokenSecret)
			if guestSSHPort > 0 {
				fmt.Fprintf(out, "pvesim guest SSH on port %d of each running guest's 127.x.y.z address, guest files under %s\n", guestSSHPort, srv.GuestRootDir())
			}
			ctx, stop := signal.NotifyContext(commandContext(cmd), os.Interrupt, syscall.SIGTERM)
			<-ctx.Done()
			stop()
			err = srv.Close()
			if stateFile != "" {
				if serr := srv.SaveState(stateFile); serr != nil {
					return serr
				}
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&listen, "listen", "127.0.0.1:8006", "address to listen on")
	fl.StringVar(&tokenID, "token-id", "root@pam!sim", "API token id accepted")
	fl.StringVar(&tokenSecret, "token-secret", "", "secret of the API token (default: a random secret, printed at start)")
	fl.StringVar(&tokenPrivs, "token-privileges", "", "comma-separated privileges the token holds on / (privilege-separated token); default: all of its user's")
	fl.StringVar(&rootPassword, "root-password", "", "password for ticket login as root@pam (disabled when empty)")
	fl.IntVar(&nodes, "nodes", 3, "number of cluster nodes (pve1..pveN)")
	fl.BoolVar(&plainHTTP, "http", false, "serve plain HTTP instead of HTTPS")
	fl.Float64Var(&taskSpeed, "task-speed", 1.0, "scale of task durations (0 = instant)")
	fl.DurationVar(&statusInterval, "status-interval", pvesim.DefaultStatusInterval,
		"how often guest name, status and template reach /cluster/resources, as pvestatd reports them (0 = at once)")
	fl.StringVar(&faults, "faults", "", "faults to inject, e.g. error-rate=0.1,drop-rate=0.05,latency=20ms,task-fail-rate=0.1,lock-timeout-rate=0.05,offline=pve2")
	fl.Int64Var(&seed, "seed", 1, "seed for generated values and injected faults")
	fl.BoolVar(&allowRemote, "allow-remote-downloads", false, "let download-url fetch from any address (by default only loopback addresses are fetched)")
	fl.StringVar(&stateFile, "state", "", "file to restore the state from at start and save it to at exit")
	fl.IntVar(&guestSSHPort, "guest-ssh-port", 0, "serve SSH on this port of every running guest whose NIC has a static 127.0.0.0/8 address (0 = off)")
	fl.DurationVar(&agentDelay, "agent-start-delay", pvesim.DefaultAgentStartDelay,
		"how long after a VM starts its QEMU guest agent answers, when its config enables one (0 = at once)")
	fl.StringVar(&guestRoot, "guest-root", "", "folder keeping guest G's files under G/ (default: STATE.guests with --state, else a temporary folder)")
	rootCmd.AddCommand(cmd)
}
