// Package render writes plans and apply results as text for the terminal
// (`proxmops plan`, `apply`, `adopt`): the engine keeps the data, this
// package its reading.
package render

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
)

// ANSI colours for the text plan.
const (
	ansiReset   = "\x1b[0m"
	ansiBold    = "\x1b[1m"
	ansiRed     = "\x1b[31m"
	ansiGreen   = "\x1b[32m"
	ansiYellow  = "\x1b[33m"
	ansiMagenta = "\x1b[35m"
	ansiCyan    = "\x1b[36m"
	ansiDim     = "\x1b[2m"
)

type painter bool

func (p painter) paint(color, s string) string {
	if !p || s == "" {
		return s
	}
	return color + s + ansiReset
}

// symbol returns the leading sign and colour of an action, terraform-style.
func symbol(a *engine.Action) (string, string) {
	switch {
	case a.Conflicted():
		return "!", ansiMagenta
	case a.Waits():
		return "…", ansiDim
	case a.Waits():
		return "…", ansiDim
	case a.Acts() && a.BlockedBy == "" && a.Action == vocab.ActionCreate:
		return "+", ansiGreen
	case a.Acts() && a.BlockedBy == "" && a.Action == vocab.ActionUpdate:
		return "~", ansiYellow
	case a.Acts() && a.BlockedBy == "" && a.Action == vocab.ActionReboot:
		return "↻", ansiCyan
	case a.Acts() && a.BlockedBy == "" && a.Action == vocab.ActionDelete:
		return "-", ansiRed
	case a.Status == vocab.StatusFailed || a.BlockedBy != "":
		return "x", ansiRed
	case a.Status == vocab.StatusOutOfSync:
		return "~", ansiDim
	}
	return " ", ""
}

// Plan writes a plan the way `terraform plan` reads: one block per
// resource that is not in sync, with its reason and field changes, and a
// summary line. color adds ANSI colours.
func Plan(w io.Writer, p *engine.Plan, color bool) {
	pt := painter(color)
	rev := p.Revision
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		rev = "(unknown revision)"
	}
	fmt.Fprintf(w, "proxmops plan for revision %s: %d resources\n\n", rev, len(p.Actions))
	shown := 0
	for _, a := range p.Actions {
		// A guest in sync is listed only when it is not on its declared
		// node: what moved it, and that it stays, is worth a line.
		moved := a.Status == vocab.StatusSynced && a.ManifestNode != ""
		if a.Status == vocab.StatusSynced && !moved || (a.Status == vocab.StatusUnknown && a.Action == vocab.ActionNone && a.Sync == vocab.SyncDisabled) {
			continue
		}
		if !moved {
			shown++
		}
		sign, col := symbol(a)
		verb := a.Action.String()
		switch {
		case moved:
			verb = "in sync, moved"
		case a.Conflicted():
			verb = "conflict"
		case a.Adopt && a.Status != vocab.StatusFailed:
			verb = "adopt"
		case a.BlockedBy != "":
			verb += ", blocked by " + a.BlockedBy
		case a.Waits():
			verb += ", " + a.Waiting.Text()
		case a.Waits():
			verb += ", " + a.Waiting.Text()
		case a.Status == vocab.StatusFailed:
			verb += " (cannot be planned)"
		case a.Action == vocab.ActionNone && a.Status == vocab.StatusOutOfSync:
			verb = "out of sync, no action"
		case a.Action == vocab.ActionNone && a.Status == vocab.StatusProgressing:
			verb = "in progress"
		case a.Action == vocab.ActionNone:
			verb = strings.ToLower(a.Status.String())
		}
		if a.Sync == vocab.SyncManual && a.Action != vocab.ActionNone {
			verb += " (sync: manual, not applied)"
		}
		if a.NeedsReboot {
			verb += " (needs reboot)"
		}
		where := ""
		switch {
		case a.Node != "" && a.VMID > 0 && a.HA != "":
			where = fmt.Sprintf(" (%s, vmid %d, HA-managed as %s)", a.Node, a.VMID, a.HA)
		case a.Node != "" && a.VMID > 0:
			where = fmt.Sprintf(" (%s, vmid %d)", a.Node, a.VMID)
		case a.Node != "":
			where = fmt.Sprintf(" (%s)", a.Node)
		}
		fmt.Fprintf(w, "  %s %s%s: %s\n", pt.paint(col+ansiBold, sign), pt.paint(ansiBold, a.Key()), where, pt.paint(col, verb))
		if a.Reason != "" {
			fmt.Fprintf(w, "      %s\n", a.Reason)
		}
		for _, c := range a.Changes {
			csign, ccol := "~", ansiYellow
			switch {
			case a.Action == vocab.ActionCreate || c.From == "" && c.To != "":
				csign, ccol = "+", ansiGreen
			case a.Action == vocab.ActionDelete || c.To == "" && c.From != "":
				csign, ccol = "-", ansiRed
			}
			fmt.Fprintf(w, "      %s %s\n", pt.paint(ccol, csign), c.String())
		}
		fmt.Fprintln(w)
	}
	if shown == 0 {
		fmt.Fprintln(w, pt.paint(ansiGreen, "No changes. The cluster matches the repository."))
		fmt.Fprintln(w)
	}
	Summary(w, p.Summary, color)
}

// Summary writes the plan's two summary lines: the actions a sync
// would carry out, then every resource by status (engine.Summarize), so that
// "in sync" counts Synced resources only.
func Summary(w io.Writer, s engine.Summary, color bool) {
	pt := painter(color)
	fmt.Fprintf(w, "Plan: %s to create, %s to update, %s to reboot, %s to delete.\n",
		pt.paint(ansiGreen, fmt.Sprint(s.Create)), pt.paint(ansiYellow, fmt.Sprint(s.Update)),
		pt.paint(ansiCyan, fmt.Sprint(s.Reboot)), pt.paint(ansiRed, fmt.Sprint(s.Delete)))
	st := s.Statuses
	outOfSync := fmt.Sprintf("%d out of sync", st[vocab.StatusOutOfSync])
	if s.NeedsReboot > 0 {
		outOfSync += fmt.Sprintf(" (%d pending a reboot)", s.NeedsReboot)
	}
	fmt.Fprintf(w, "Status: %s in sync, %s, %d in progress, %s failed, %s conflict(s), %d unknown.\n",
		pt.paint(ansiGreen, fmt.Sprint(st[vocab.StatusSynced])), outOfSync, st[vocab.StatusProgressing],
		pt.paint(ansiRed, fmt.Sprint(st[vocab.StatusFailed])), pt.paint(ansiMagenta, fmt.Sprint(st[vocab.StatusConflict])),
		st[vocab.StatusUnknown])
}

// Result writes one progress or result line of an apply.
func Result(w io.Writer, a *engine.Action, r engine.Result, color bool) {
	pt := painter(color)
	switch r.Status {
	case vocab.StatusSynced:
		fmt.Fprintf(w, "%s %s: %s done in %s\n", pt.paint(ansiGreen, "✓"), a.Key(), a.Action, r.Duration.Round(10*time.Millisecond))
	case vocab.StatusFailed:
		if r.Action == vocab.ActionNone {
			fmt.Fprintf(w, "%s %s: %s\n", pt.paint(ansiRed, "✗"), a.Key(), r.Error)
			break
		}
		fmt.Fprintf(w, "%s %s: %s failed: %s\n", pt.paint(ansiRed, "✗"), a.Key(), a.Action, r.Error)
	default:
		fmt.Fprintf(w, "%s %s: %s skipped: %s\n", pt.paint(ansiDim, "-"), a.Key(), a.Action, r.Error)
	}
}
