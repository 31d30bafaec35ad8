package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// The man command is hidden: release builds and packages run it to ship
// man pages; users read them with man(1).
func init() {
	var dir string
	cmd := &cobra.Command{
		Use:    "man",
		Short:  "Write the man pages (section 1) of every command into a directory",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			// The header date is SOURCE_DATE_EPOCH when set (cobra reads it), so a
			// release build makes the same pages every time.
			hdr := &doc.GenManHeader{Title: "PROXMOPS", Section: "1", Source: "proxmops", Manual: "proxmops manual"}
			if err := doc.GenManTree(rootCmd, hdr, dir); err != nil {
				return fmt.Errorf("man pages: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "manpages", "directory to write the pages to")
	rootCmd.AddCommand(cmd)
}
