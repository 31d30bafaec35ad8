package forge

import (
	"fmt"
	"strings"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/vocab"
)

// maxCommentBytes keeps the comment under the forges' limits (GitHub:
// 65,536 characters) with room for the frame.
const maxCommentBytes = 60_000

// outcome is what a preview found: the plan, or why there is none.
type outcome struct {
	plan *api.Plan
	// loadErrors are the manifests' errors (file:line:column: message):
	// the request cannot be merged as it is.
	loadErrors []string
	// err is a failure to plan at all (a cluster unreachable).
	err string
}

// state is the commit status of an outcome: success when the plan can be
// carried out as it is, failure when its manifests do not load or a
// resource cannot be planned (a conflict, a missing privilege), error when
// no plan could be made.
func (o outcome) state() string {
	switch {
	case o.err != "":
		return "error"
	case len(o.loadErrors) > 0 || o.firstProblem() != "":
		return "failure"
	}
	return "success"
}

// firstProblem is the first resource the plan cannot carry out, in words.
func (o outcome) firstProblem() string {
	if o.plan == nil {
		return ""
	}
	for _, a := range o.plan.Actions {
		if a.Status == vocab.StatusFailed || a.Status == vocab.StatusConflict {
			return vocab.Key(a.Kind, a.Name) + ": " + a.Reason
		}
	}
	return ""
}

// description is the status's text: the counts, or the first error.
func (o outcome) description() string {
	var d string
	switch {
	case o.err != "":
		d = "no plan: " + o.err
	case len(o.loadErrors) > 0:
		d = o.loadErrors[0]
	case o.firstProblem() != "":
		d = o.firstProblem()
	default:
		d = counts(o.plan.Summary)
	}
	d, _, _ = strings.Cut(d, "\n")
	// GitHub takes 140 characters at most.
	if r := []rune(d); len(r) > 140 {
		d = string(r[:139]) + "…"
	}
	return d
}

func counts(s api.PlanSummary) string {
	return fmt.Sprintf("%d to create, %d to update, %d to reboot, %d to delete", s.Create, s.Update, s.Reboot, s.Delete)
}

// render writes the comment: the marker, a Terraform-style diff of what a
// merge would change, the counts, and what stands in the way.
func render(o outcome, commit, link string) string {
	var b strings.Builder
	b.WriteString(Marker + "\n")
	fmt.Fprintf(&b, "### proxmops plan for `%s`\n\n", short(commit))
	switch {
	case o.err != "":
		fmt.Fprintf(&b, "**No plan could be made:** %s\n", inline(o.err))
	case len(o.loadErrors) > 0:
		b.WriteString("**The manifests do not load:**\n\n")
		for _, e := range o.loadErrors {
			fmt.Fprintf(&b, "- `%s`\n", code(e))
		}
	default:
		renderPlan(&b, o.plan)
	}
	if link != "" {
		fmt.Fprintf(&b, "\n[Open this preview in proxmops](%s)\n", link)
	}
	return b.String()
}

func renderPlan(b *strings.Builder, p *api.Plan) {
	var diff strings.Builder
	var conflicts, failed, privileges []string
	shown := 0
	for _, a := range p.Actions {
		key := vocab.Key(a.Kind, a.Name)
		if a.Cluster != "" {
			key = a.Cluster + ": " + key
		}
		switch {
		case a.Status == vocab.StatusConflict:
			conflicts = append(conflicts, fmt.Sprintf("- `%s`: %s", code(key), inline(a.Reason)))
			continue
		case a.Status == vocab.StatusFailed && strings.Contains(a.Reason, "lacks"):
			privileges = append(privileges, fmt.Sprintf("- `%s`: %s", code(key), inline(a.Reason)))
			continue
		case a.Status == vocab.StatusFailed:
			failed = append(failed, fmt.Sprintf("- `%s`: %s", code(key), inline(a.Reason)))
			continue
		case a.Action == vocab.ActionNone:
			continue
		}
		if diff.Len() > maxCommentBytes/2 {
			shown++
			continue
		}
		writeAction(&diff, a, key)
	}
	if diff.Len() == 0 {
		b.WriteString("Nothing to create, update, reboot or delete.\n")
	} else {
		b.WriteString("```diff\n" + diff.String())
		if shown > 0 {
			fmt.Fprintf(b, "# … and %d more (the dashboard lists them all)\n", shown)
		}
		b.WriteString("```\n")
	}
	st := p.Summary.Statuses
	fmt.Fprintf(b, "\n**Plan:** %s. **Status:** %d in sync, %d out of sync, %d failed, %d conflict(s), %d unknown.\n",
		counts(p.Summary), st[vocab.StatusSynced], st[vocab.StatusOutOfSync], st[vocab.StatusFailed], st[vocab.StatusConflict], st[vocab.StatusUnknown])
	for _, sec := range []struct {
		title string
		items []string
	}{{"Conflicts", conflicts}, {"Missing privileges", privileges}, {"Cannot be planned", failed}} {
		if len(sec.items) > 0 {
			fmt.Fprintf(b, "\n#### %s\n\n%s\n", sec.title, strings.Join(sec.items, "\n"))
		}
	}
}

// writeAction is one resource in the diff: + create, ~ update (and
// reboot), - delete, its reason, then its changed fields.
func writeAction(w *strings.Builder, a api.PlanAction, key string) {
	sign := map[vocab.Action]string{vocab.ActionCreate: "+", vocab.ActionUpdate: "~", vocab.ActionReboot: "~", vocab.ActionDelete: "-"}[a.Action]
	verb := a.Action.String()
	if a.BlockedBy != "" {
		verb += ", blocked by " + a.BlockedBy
	}
	if a.NeedsReboot {
		verb += " (needs reboot)"
	}
	where := ""
	switch {
	case a.Node != "" && a.VMID > 0:
		where = fmt.Sprintf(" (%s, vmid %d)", a.Node, a.VMID)
	case a.Node != "":
		where = " (" + a.Node + ")"
	}
	fmt.Fprintf(w, "%s %s%s: %s\n", sign, key, where, verb)
	if a.Reason != "" {
		fmt.Fprintf(w, "      %s\n", oneLine(a.Reason))
	}
	for _, c := range a.Changes {
		cs := "~"
		switch {
		case a.Action == vocab.ActionCreate || c.From == "" && c.To != "":
			cs = "+"
		case a.Action == vocab.ActionDelete || c.To == "" && c.From != "":
			cs = "-"
		}
		fmt.Fprintf(w, "%s     %s\n", cs, oneLine(c.String()))
	}
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// code makes s safe inside a Markdown code span.
func code(s string) string { return strings.ReplaceAll(oneLine(s), "`", "'") }

// inline makes s one Markdown line that cannot start HTML or a fence.
func inline(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;", "```", "'''").Replace(oneLine(s))
}
