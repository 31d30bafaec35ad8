package main

import (
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/spf13/cobra"
)

func init() {
	rootCmd.AddCommand(&cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema (draft 2020-12) of all manifest kinds, for editors",
		Long: "schema prints the JSON Schema of proxmops manifests. Save it and point your YAML\n" +
			"language server at it, e.g. with a first line\n" +
			"  # yaml-language-server: $schema=./proxmops.schema.json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(manifest.SchemaJSON())
			return err
		},
	})
}
