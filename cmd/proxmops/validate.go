package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/spf13/cobra"
)

// validateReport is the JSON document of `validate --output json`.
type validateReport struct {
	Valid     bool                `json:"valid"`
	Resources []manifest.Resource `json:"resources"`
	Errors    manifest.ErrorList  `json:"errors"`
}

func init() {
	var output, configFile, only string
	cmd := &cobra.Command{
		Use:   "validate [PATH]",
		Short: "Check the manifests under PATH (a directory, default ., or one file) offline; no cluster needed",
		Long: "validate loads every *.yaml and *.yml file under PATH (or the one file PATH), decodes each\n" +
			"document strictly and runs the cross-document checks. Every error is reported, sorted by\n" +
			"file and line. A file alone cannot refer to resources declared in other files.\n" +
			"With --config naming a configuration that lists clusters, PATH is the directory of\n" +
			"source.path and each cluster's path under it is validated on its own (or --cluster's).",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			root := "."
			if len(args) == 1 {
				root = args[0]
			}
			if configFile != "" {
				cfg, _, err := config.Load(config.LoadOptions{File: configFile})
				if err != nil {
					return err
				}
				if cfg.MultiCluster() {
					return validateClusters(cfg, root, only, output, cmd.OutOrStdout(), cmd.ErrOrStderr())
				}
			}
			if only != "" {
				return fmt.Errorf("--cluster needs --config naming a configuration that lists clusters")
			}
			set, err := manifest.LoadPath(root)
			var errs manifest.ErrorList
			if err != nil && !errors.As(err, &errs) {
				return err
			}
			if output == "json" {
				report := validateReport{Valid: len(errs) == 0, Resources: set.Resources, Errors: errs}
				if report.Resources == nil {
					report.Resources = []manifest.Resource{}
				}
				if report.Errors == nil {
					report.Errors = manifest.ErrorList{}
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(report); err != nil {
					return err
				}
			} else if len(errs) == 0 {
				printSummary(cmd.OutOrStdout(), set)
			}
			if len(errs) > 0 {
				for _, e := range errs {
					fmt.Fprintln(cmd.ErrOrStderr(), e.Error())
				}
				noun := "errors"
				if len(errs) == 1 {
					noun = "error"
				}
				return &exitError{code: 1, msg: fmt.Sprintf("%d %s in %s", len(errs), noun, root)}
			}
			return nil
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().StringVar(&configFile, "config", "", "a configuration listing clusters: validate each cluster's directory under PATH on its own")
	cmd.Flags().StringVar(&only, "cluster", "", "with --config: validate this cluster only")
	rootCmd.AddCommand(cmd)
}

// printSummary writes one line per kind present, then a total.
func printSummary(w io.Writer, set *manifest.Set) {
	counts := set.Counts()
	for _, k := range manifest.Kinds() {
		if n := counts[k]; n > 0 {
			fmt.Fprintf(w, "%-18s %d\n", k, n)
		}
	}
	fmt.Fprintf(w, "valid: %d resources in %d files\n", len(set.Resources), set.Files)
}
