package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/proxmops/proxmops/internal/config"
)

// healthcheck is the container image's HEALTHCHECK: an image from scratch
// has no curl, so the binary asks its own daemon, found through the same
// configuration (file, PROXMOPS_* variables, flags) that serve reads.
func init() {
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when the local daemon answers GET /healthz (for container health checks)",
		Long: "healthcheck asks the daemon on this machine, at server.addr (HTTPS when server.tlsCertFile is set),\n" +
			"for /healthz and exits 0 when it answers 200, 1 otherwise.",
		Args: cobra.NoArgs,
	}
	flags := config.BindFlags(cmd.Flags(), "server.addr", "server.tlsCertFile", "server.tlsKeyFile")
	timeout := cmd.Flags().Duration("timeout", 5*time.Second, "how long to wait for the answer")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, _, err := flags.Load()
		if err != nil {
			return err
		}
		url, err := healthURL(cfg.Server)
		if err != nil {
			return err
		}
		// The daemon's own certificate names its public host, not loopback:
		// liveness is what is checked here, not identity.
		hc := &http.Client{Timeout: *timeout, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback liveness probe
		}}
		resp, err := hc.Get(url)
		if err != nil {
			return fmt.Errorf("healthcheck: %w", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("healthcheck: %s answered %s", url, resp.Status)
		}
		fmt.Fprintln(cmd.OutOrStdout(), "ok")
		return nil
	}
	rootCmd.AddCommand(cmd)
}

// healthURL is the /healthz URL of a daemon listening on srv.Addr, reached
// over loopback when it listens on every address.
func healthURL(srv config.Server) (string, error) {
	host, port, err := net.SplitHostPort(srv.Addr)
	if err != nil {
		return "", fmt.Errorf("server.addr %q: %w", srv.Addr, err)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	scheme := "http"
	if srv.TLSCertFile != "" {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/healthz", nil
}
