package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/proxmops/proxmops/internal/importer"
	"github.com/spf13/cobra"
)

// import turns another tool's repository into manifests. Its flags are the
// parent's, so that every importer shares them (and `import --help` shows them).
func init() {
	var out string
	var offset int
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Write manifests from another tool's repository (proxmox-gitops)",
		Long: "import reads another tool's repository and writes proxmops manifests that validate,\n" +
			"with a report of everything it could not map (also printed to stderr).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&out, "out", "", "directory to write the manifests and the report to (default DIR/proxmops)")
	cmd.PersistentFlags().IntVar(&offset, "vmid-offset", 0, "add N to every imported VMID (Proxmox's VMIDs start at 100)")
	pg := &cobra.Command{
		Use:   "proxmox-gitops DIR",
		Short: "Containers and cookbooks of a Proxmox-GitOps monorepo (libs/*/container.env)",
		Long: "proxmox-gitops reads a Proxmox-GitOps monorepo: libs/NAME/container.env (IP, ID, CORES,\n" +
			"MEMORY, SWAP, DISK, BOOT, MOUNT; container.local.env over it), the global env.json or\n" +
			"globals.json and local/config.json (node, bridge, gateway, mask, interface, template\n" +
			"storage and name), and writes one Container per lib, provisioned with the lib's Cinc\n" +
			"cookbook (copied next to the manifests), and their ContainerTemplate. Nothing is\n" +
			"written when a value cannot be used (a VMID below 100 among them). See docs/migrating.md.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			dest := out
			if dest == "" {
				dest = filepath.Join(dir, "proxmops")
			}
			if err := importer.CheckOut(dir, dest); err != nil {
				return err
			}
			imp, err := importer.ProxmoxGitOps(dir, importer.Options{VMIDOffset: offset})
			var ie *importer.Error
			if errors.As(err, &ie) {
				for _, p := range ie.Problems {
					fmt.Fprintln(cmd.ErrOrStderr(), p.String())
				}
				noun := "problems"
				if len(ie.Problems) == 1 {
					noun = "problem"
				}
				return &exitError{code: 1, msg: fmt.Sprintf("%d %s in %s; nothing written", len(ie.Problems), noun, dir)}
			}
			if err != nil {
				return err
			}
			if err := imp.Write(dest); err != nil {
				return err
			}
			imp.Report.WriteFindings(cmd.ErrOrStderr())
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "imported %d containers from %s into %s\n", len(imp.Containers), dir, dest)
			fmt.Fprintf(w, "report: %s (%d not mapped)\n", filepath.Join(dest, importer.ReportFile), len(imp.Report.Findings))
			return nil
		},
	}
	cmd.AddCommand(pg)
	rootCmd.AddCommand(cmd)
}
