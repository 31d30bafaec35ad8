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

// simFlags are the flags of proxmops sim.
type simFlags struct {
	listen, tokenID, tokenSecret, faults, stateFile, rootPassword, tokenPrivs string
	guestRoot                                                                 string
	nodes, guestSSHPort                                                       int
	plainHTTP, allowRemote                                                    bool
	taskSpeed                                                                 float64
	seed                                                                      int64
	statusInterval, agentDelay                                                time.Duration
}

func init() {
	var f simFlags
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run a simulated Proxmox VE API server",
		Long: "sim serves a simulated Proxmox VE cluster under /api2/json, for trying automation offline.\n" +
			"Once it is ready it prints a line with its URL and certificate fingerprint, then a line with\n" +
			"the API token it accepts (--token-secret, or a random secret made for this run).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := f.options(cmd.Flags().Changed("token-privileges"))
			if err != nil {
				return err
			}
			return runSim(cmd, f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8006", "address to listen on")
	fl.StringVar(&f.tokenID, "token-id", "root@pam!sim", "API token id accepted")
	fl.StringVar(&f.tokenSecret, "token-secret", "", "secret of the API token (default: a random secret, printed at start)")
	fl.StringVar(&f.tokenPrivs, "token-privileges", "", "comma-separated privileges the token holds on / (privilege-separated token); default: all of its user's")
	fl.StringVar(&f.rootPassword, "root-password", "", "password for ticket login as root@pam (disabled when empty)")
	fl.IntVar(&f.nodes, "nodes", 3, "number of cluster nodes (pve1..pveN)")
	fl.BoolVar(&f.plainHTTP, "http", false, "serve plain HTTP instead of HTTPS")
	fl.Float64Var(&f.taskSpeed, "task-speed", 1.0, "scale of task durations (0 = instant)")
	fl.DurationVar(&f.statusInterval, "status-interval", pvesim.DefaultStatusInterval,
		"how often guest name, status and template reach /cluster/resources, as pvestatd reports them (0 = at once)")
	fl.StringVar(&f.faults, "faults", "", "faults to inject, e.g. error-rate=0.1,drop-rate=0.05,latency=20ms,task-fail-rate=0.1,lock-timeout-rate=0.05,offline=pve2")
	fl.Int64Var(&f.seed, "seed", 1, "seed for generated values and injected faults")
	fl.BoolVar(&f.allowRemote, "allow-remote-downloads", false, "let download-url fetch from any address (by default only loopback addresses are fetched)")
	fl.StringVar(&f.stateFile, "state", "", "file to restore the state from at start and save it to at exit")
	fl.IntVar(&f.guestSSHPort, "guest-ssh-port", 0, "serve SSH on this port of every running guest whose NIC has a static 127.0.0.0/8 address (0 = off)")
	fl.DurationVar(&f.agentDelay, "agent-start-delay", pvesim.DefaultAgentStartDelay,
		"how long after a VM starts its QEMU guest agent answers, when its config enables one (0 = at once)")
	fl.StringVar(&f.guestRoot, "guest-root", "", "folder keeping guest G's files under G/ (default: STATE.guests with --state, else a temporary folder)")
	rootCmd.AddCommand(cmd)
}

// options checks the flags and turns them into the simulator's options:
// a random token secret when none is given, the guests' files beside the
// state file, a zero delay as none, and the token's privileges when
// privsSet (an empty list holds none).
func (f simFlags) options(privsSet bool) (pvesim.Options, error) {
	if f.tokenID == "" {
		return pvesim.Options{}, fmt.Errorf("--token-id must not be empty")
	}
	if f.tokenSecret == "" {
		// A fresh secret per run: a fixed default would be a known
		// password on any simulator listening beyond loopback.
		f.tokenSecret = rand.Text()
	}
	faults, err := pvesim.ParseFaults(f.faults)
	if err != nil {
		return pvesim.Options{}, fmt.Errorf("--faults: %w", err)
	}
	if f.statusInterval < 0 {
		return pvesim.Options{}, fmt.Errorf("--status-interval must not be negative")
	}
	if f.guestSSHPort < 0 || f.guestSSHPort > 65535 {
		return pvesim.Options{}, fmt.Errorf("--guest-ssh-port must be a port number (0 = off)")
	}
	if f.guestRoot == "" && f.guestSSHPort > 0 && f.stateFile != "" {
		// The guests' files live beside the state that names them.
		f.guestRoot = f.stateFile + ".guests"
	}
	if f.statusInterval == 0 {
		f.statusInterval = -1 // no lag
	}
	if f.agentDelay < 0 {
		return pvesim.Options{}, fmt.Errorf("--agent-start-delay must not be negative")
	}
	if f.agentDelay == 0 {
		f.agentDelay = -1 // the agent answers at once
	}
	var privs []string
	if privsSet {
		if privs, err = pvesim.ParsePrivilegeList(f.tokenPrivs); err != nil {
			return pvesim.Options{}, fmt.Errorf("--token-privileges: %w", err)
		}
		if privs == nil {
			privs = []string{}
		}
	}
	return pvesim.Options{StatusInterval: f.statusInterval, TokenPrivileges: privs,
		Nodes: f.nodes, TokenID: f.tokenID, TokenSecret: f.tokenSecret, RootPassword: f.rootPassword,
		TaskSpeed: f.taskSpeed, Seed: f.seed, Faults: faults, AllowRemoteDownloads: f.allowRemote,
		AuthFailureDelay: time.Duration(3 * float64(time.Second) * f.taskSpeed),
		GuestSSHPort:     f.guestSSHPort, GuestRoot: f.guestRoot, AgentStartDelay: f.agentDelay,
	}, nil
}

// runSim starts the simulator (from the state file when there is one),
// prints its URL, fingerprint and token, serves until interrupted, then
// saves the state.
func runSim(cmd *cobra.Command, f simFlags, opts pvesim.Options) error {
	srv := pvesim.New(opts)
	if f.stateFile != "" {
		if err := srv.LoadState(f.stateFile); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	var err error
	if f.plainHTTP {
		err = srv.Start(f.listen)
	} else {
		err = srv.StartTLS(f.listen)
	}
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f.plainHTTP {
		fmt.Fprintf(out, "pvesim listening on %s\n", srv.APIURL())
	} else {
		fmt.Fprintf(out, "pvesim listening on %s fingerprint %s\n", srv.APIURL(), srv.Fingerprint())
	}
	fmt.Fprintf(out, "pvesim token %s secret %s (header Authorization: PVEAPIToken=%s=%s)\n", opts.TokenID, opts.TokenSecret, opts.TokenID, opts.TokenSecret)
	if opts.GuestSSHPort > 0 {
		fmt.Fprintf(out, "pvesim guest SSH on port %d of each running guest's 127.x.y.z address, guest files under %s\n", opts.GuestSSHPort, srv.GuestRootDir())
	}
	ctx, stop := signal.NotifyContext(commandContext(cmd), os.Interrupt, syscall.SIGTERM)
	<-ctx.Done()
	stop()
	err = srv.Close()
	if f.stateFile != "" {
		if serr := srv.SaveState(f.stateFile); serr != nil {
			return serr
		}
	}
	return err
}
