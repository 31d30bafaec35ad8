package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// outputFlag adds -o/--output, text or json, to cmd.
func outputFlag(cmd *cobra.Command, output *string) {
	cmd.Flags().StringVarP(output, "output", "o", "text", "output format: text or json")
}

// checkOutput refuses an --output other than text or json.
func checkOutput(output string) error {
	if output != "text" && output != "json" {
		return fmt.Errorf("--output must be text or json, not %q", output)
	}
	return nil
}

// writeJSONDoc prints v as an indented JSON document.
func writeJSONDoc(out io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, string(b))
	return err
}
