package main

import (
	"encoding/json"
	"fmt"

	"github.com/proxmops/proxmops/internal/buildinfo"
	"github.com/spf13/cobra"
)

func init() {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print version, commit and build date",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := buildinfo.Get()
			out := cmd.OutOrStdout()
			if output == "json" {
				return json.NewEncoder(out).Encode(info)
			}
			fmt.Fprintf(out, "proxmops %s (commit %s, built %s, %s)\n", info.Version, info.Commit, info.Date, info.GoVersion)
			return nil
		},
	}
	outputFlag(cmd, &output)
	rootCmd.AddCommand(cmd)
}
