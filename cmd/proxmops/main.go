// Command proxmops is declarative GitOps for Proxmox VE. Each subcommand lives
// in its own file of this package and registers itself with the root command;
// the work is done by the internal packages, so this package stays thin.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries a specific exit code out of a command (2 for
// `plan --detailed-exitcode` with changes). Its message may be empty when the
// command already reported everything it had to say.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

var rootCmd = &cobra.Command{
	Use:           "proxmops",
	Short:         "Declarative GitOps for Proxmox VE",
	Long:          "proxmops keeps a Proxmox VE cluster matching the manifests in a Git repository.",
	SilenceUsage:  true,
	SilenceErrors: true,
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes the CLI and maps errors to exit codes: 0 success, the code of
// an exitError, 1 for any other error (printed to stderr).
func run(args []string) int {
	rootCmd.SetArgs(args)
	err := rootCmd.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(os.Stderr, "Error:", ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "Error:", err)
	return 1
}
