package check

import (
	"fmt"
	"io"

	"github.com/proxmops/proxmops/internal/api"
)

// WriteText writes a report one line per check, "LEVEL  what: message",
// with " — fix" when there is something to do, and a count at the end.
func WriteText(w io.Writer, res api.TestResult) {
	counts := map[api.CheckLevel]int{}
	for _, c := range res.Checks {
		counts[c.Level]++
		line := fmt.Sprintf("%-4s  %s: %s", c.Level, c.Name, c.Message)
		if c.Fix != "" {
			line += " — " + c.Fix
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "%d OK, %d WARN, %d FAIL\n", counts[api.CheckOK], counts[api.CheckWarn], counts[api.CheckFail])
}

// Merge joins the reports of several clusters, each line's name prefixed
// with its cluster's.
func Merge(names []string, results []api.TestResult) api.TestResult {
	if len(results) == 1 {
		return results[0]
	}
	out := api.TestResult{OK: true, Checks: []api.Check{}}
	for i, r := range results {
		for _, c := range r.Checks {
			c.Name = names[i] + ": " + c.Name
			out.Checks = append(out.Checks, c)
		}
		out.OK = out.OK && r.OK
	}
	return out
}
