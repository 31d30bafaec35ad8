package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Ordered firewall rule lists (pve-firewall API2/Firewall/Rules.pm): a
// security group's, the cluster's, a guest's. GET path lists the rules
// with their pos and the list's digest; PUT path/{pos} changes one
// (copy_rule_data, then delete=), or moves it (moveto); DELETE path/{pos}
// removes one; POST path adds one, always first (create_rule unshifts it
// and ignores pos) and disabled unless enable is given. PUT and DELETE
// check the digest; POST does not.
//
// A list is compared by position: the wanted rules against the rules the
// list holds for proxmops (every rule of a list proxmops owns; in a list
// shared with people, only the rules whose comment carries the ownership
// mark, in their order, the others never touched).

// ruleKeys are the rule fields proxmops manages, as Proxmox names them.
var ruleKeys = []string{"type", "action", "macro", "iface", "source", "dest", "proto", "dport", "sport", "log", "icmp-type", "enable", "comment"}

// ruleList is one rule list and how proxmops holds it.
type ruleList struct {
	path  string // the API path of the list: cluster/firewall/groups/web
	field string // the manifest path of the wanted rules: spec.rules
	// shared: only rules carrying the ownership mark are proxmops'; its
	// rules are written with the mark.
	shared bool
}

// ruleFields is a wanted rule in Proxmox's read-back form.
func ruleFields(r manifest.FirewallRule) collItem {
	f := collItem{"type": r.Type, "action": r.Action, "macro": r.Macro, "iface": r.Iface, "source": r.Source, "dest": r.Dest,
		"proto": r.Proto, "dport": r.Dport, "sport": r.Sport, "log": r.Log, "icmp-type": r.ICMPType, "comment": strings.TrimSpace(r.Comment), "enable": "1"}
	if !r.Enabled() {
		f["enable"] = "0"
	}
	return f
}

// RuleAsDeclared is a listed rule (Proxmox's read-back form) as a
// manifest declares it: ruleFields read backwards.
func RuleAsDeclared(f map[string]string) manifest.FirewallRule {
	r := manifest.FirewallRule{Type: f["type"], Action: f["action"], Macro: f["macro"], Iface: f["iface"], Source: f["source"],
		Dest: f["dest"], Proto: f["proto"], Dport: f["dport"], Sport: f["sport"], Log: f["log"], ICMPType: f["icmp-type"],
		Comment: strings.TrimSpace(f["comment"])}
	if f["enable"] == "0" {
		off := false
		r.Enable = &off
	}
	return r
}

// ruleLine is a rule on one line, as the firewall file writes it:
// "in SSH(ACCEPT) -source +admins -log info # admins", "disabled:" first
// when it is off.
func ruleLine(f collItem) string {
	var b strings.Builder
	if f["enable"] == "0" {
		b.WriteString("disabled: ")
	}
	b.WriteString(f["type"] + " ")
	if f["macro"] != "" {
		b.WriteString(f["macro"] + "(" + f["action"] + ")")
	} else {
		b.WriteString(f["action"])
	}
	for _, k := range []string{"iface", "source", "dest", "proto", "dport", "sport", "log", "icmp-type"} {
		if v := f[k]; v != "" {
			flag := map[string]string{"iface": "i", "proto": "p"}[k]
			if flag == "" {
				flag = k
			}
			b.WriteString(" -" + flag + " " + v)
		}
	}
	if c := f["comment"]; c != "" {
		b.WriteString(" # " + c)
	}
	return b.String()
}

// mine reports whether a listed rule is proxmops' in this list, and its
// fields as compared (a shared list's comment without the mark).
func (l ruleList) mine(h collItem) (bool, collItem) {
	out := collItem{}
	for _, k := range ruleKeys {
		out[k] = h[k]
	}
	if out["enable"] == "" {
		out["enable"] = "1"
	}
	out["comment"] = strings.TrimSpace(out["comment"])
	if !l.shared {
		return true, out
	}
	owned, comment := ParseOwned(h["comment"])
	out["comment"] = comment
	return owned, out
}

func sameRule(have, want collItem) bool {
	for _, k := range ruleKeys {
		if have[k] != want[k] {
			return false
		}
	}
	return true
}

// rulePlan is how a list becomes the wanted one: each wanted rule by its
// index, the positions proxmops holds in the list as read, and its digest.
type rulePlan struct {
	list   ruleList
	digest string
	have   []collItem // the listed rules, all of them, by position
	slots  []int      // the positions of proxmops' rules in have
	want   []collItem
}

// diffRules compares the listed rules (GET's answer, by position) with
// the wanted ones: a change per differing position (Field the list's
// name and position, rules[3], Path the manifest path, spec.rules[3];
// From and To one line per rule), and the
// plan that applies them (nil when in sync).
func (l ruleList) diffRules(listed []collItem, wanted []manifest.FirewallRule) ([]vocab.Change, *rulePlan) {
	p := &rulePlan{list: l, have: listed}
	for _, w := range wanted {
		p.want = append(p.want, ruleFields(w))
	}
	var mineRules []collItem
	for i, h := range listed {
		if p.digest == "" {
			p.digest = h["digest"]
		}
		if ok, f := l.mine(h); ok {
			p.slots = append(p.slots, i)
			mineRules = append(mineRules, f)
		}
	}
	var changes []vocab.Change
	for k := 0; k < max(len(mineRules), len(p.want)); k++ {
		path := indexPath(l.field, k)
		c := vocab.Change{Field: indexPath(l.field[strings.LastIndex(l.field, ".")+1:], k), Path: path}
		switch {
		case k >= len(p.want):
			c.From = ruleLine(mineRules[k])
		case k >= len(mineRules):
			c.To = ruleLine(p.want[k])
		case !sameRule(mineRules[k], p.want[k]):
			c.From, c.To = ruleLine(mineRules[k]), ruleLine(p.want[k])
		default:
			continue
		}
		changes = append(changes, c)
	}
	if len(changes) == 0 {
		return nil, nil
	}
	return changes, p
}

// ruleOp is one step of a rule plan, on the list as it is then.
type ruleOp struct {
	method string
	pos    int      // PUT, DELETE: the rule's position
	rule   collItem // PUT, POST: the wanted fields
	moveto int      // PUT: a move when >= 0
}

// apply brings the list to the wanted rules: the differing rules
// rewritten in place, the rules no longer wanted removed from the highest
// position down, then the new ones added (POST puts a rule first, a move
// puts it after proxmops' previous rule). Before each step the list is
// read again: the first read must be the plan's (same digest), every
// later one what the steps so far made of it, so a concurrent change
// fails the apply instead of being clobbered; PUT and DELETE carry the
// digest just read.
func (p *rulePlan) apply(ctx context.Context, c *pve.Client) error {
	model := slices.Clone(p.have)
	slots := slices.Clone(p.slots)
	var steps []func() ruleOp
	for k := 0; k < min(len(slots), len(p.want)); k++ {
		if _, f := p.list.mine(p.have[slots[k]]); !sameRule(f, p.want[k]) {
			steps = append(steps, func() ruleOp {
				return ruleOp{method: "PUT", pos: slots[k], rule: p.want[k], moveto: -1}
			})
		}
	}
	for k := len(slots) - 1; k >= len(p.want); k-- {
		steps = append(steps, func() ruleOp { return ruleOp{method: "DELETE", pos: slots[k], moveto: -1} })
	}
	for k := len(slots); k < len(p.want); k++ {
		steps = append(steps, func() ruleOp { return ruleOp{method: "POST", rule: p.want[k], moveto: -1} })
		steps = append(steps, func() ruleOp {
			// The new rule is first; it goes after proxmops' previous rule
			// (moveto n puts it before the rule now at n, or last).
			if k == 0 {
				return ruleOp{method: "PUT", pos: 0, moveto: 0}
			}
			return ruleOp{method: "PUT", pos: 0, moveto: slots[k-1] + 1}
		})
	}
	digest, first := p.digest, true
	for _, step := range steps {
		op := step()
		if op.method == "PUT" && op.moveto == 0 && op.pos == 0 {
			continue // already first
		}
		live, err := p.read(ctx, c)
		if err != nil {
			return err
		}
		if first && liveDigest(live) != digest {
			return fmt.Errorf("the rules of %s changed since the plan: plan again", p.list.path)
		}
		if !p.sameList(live, model) {
			return fmt.Errorf("the rules of %s changed while proxmops was changing them: plan again", p.list.path)
		}
		digest, first = liveDigest(live), false
		if err := p.send(ctx, c, op, digest); err != nil {
			return err
		}
		model, slots = p.track(model, slots, op)
	}
	return nil
}

func liveDigest(live []collItem) string {
	if len(live) == 0 {
		return ""
	}
	return live[0]["digest"]
}

func (p *rulePlan) read(ctx context.Context, c *pve.Client) ([]collItem, error) {
	var got []map[string]any
	if err := c.Get(ctx, p.list.path, nil, &got); err != nil {
		return nil, fmt.Errorf("reading %s: %w", p.list.path, err)
	}
	out := make([]collItem, 0, len(got))
	for _, m := range got {
		out = append(out, stringValues(m))
	}
	return out, nil
}

// sameList compares a listing with the model rule by rule (fields and
// the raw comment, so a mark added or removed by hand shows).
func (p *rulePlan) sameList(live, model []collItem) bool {
	if len(live) != len(model) {
		return false
	}
	for i := range live {
		for _, k := range ruleKeys {
			a, b := live[i][k], model[i][k]
			if k == "enable" && a == "" {
				a = "1"
			}
			if k == "enable" && b == "" {
				b = "1"
			}
			if strings.TrimSpace(a) != strings.TrimSpace(b) {
				return false
			}
		}
	}
	return true
}

// written is a wanted rule as the list will hold it (a shared list's
// comment marked).
func (p *rulePlan) written(rule collItem) collItem {
	out := maps.Clone(rule)
	if p.list.shared {
		out["comment"] = markOwned(rule["comment"])
	}
	return out
}

// send makes one step's request.
func (p *rulePlan) send(ctx context.Context, c *pve.Client, op ruleOp, digest string) error {
	at := fmt.Sprintf("%s/%d", p.list.path, op.pos)
	var q collReq
	switch op.method {
	case "DELETE":
		q = collReq{method: "DELETE", path: at, params: pve.NewParams().Set("digest", digest)}
	case "POST":
		q = collReq{method: "POST", path: p.list.path, params: ruleParams(p.written(op.rule), false)}
	case "PUT":
		if op.moveto >= 0 {
			q = collReq{method: "PUT", path: at, params: pve.NewParams().SetInt("moveto", op.moveto).Set("digest", digest)}
		} else {
			q = collReq{method: "PUT", path: at, params: ruleParams(p.written(op.rule), true).Set("digest", digest)}
		}
	}
	if err := q.do(ctx, c); err != nil {
		return fmt.Errorf("%s %s: %w", q.method, q.path, err)
	}
	return nil
}

// ruleParams are a rule's request parameters: every set field (enable
// always: create_rule disables a rule without it); on update, the unset
// fields in delete=.
func ruleParams(f collItem, update bool) *pve.Params {
	params := pve.NewParams()
	var del []string
	for _, k := range ruleKeys {
		switch v := f[k]; {
		case v != "":
			params.Set(k, v)
		case update && k != "type" && k != "action":
			del = append(del, k)
		}
	}
	if len(del) > 0 {
		params.Set("delete", strings.Join(del, ","))
	}
	return params
}

// track applies a step to the model of the list and to the positions of
// proxmops' rules in it.
func (p *rulePlan) track(model []collItem, slots []int, op ruleOp) ([]collItem, []int) {
	switch {
	case op.method == "DELETE":
		model = slices.Delete(model, op.pos, op.pos+1)
		i := slices.Index(slots, op.pos)
		slots = slices.Delete(slots, i, i+1)
		for j := range slots {
			if slots[j] > op.pos {
				slots[j]--
			}
		}
	case op.method == "POST":
		model = slices.Insert(model, 0, p.written(op.rule))
		for j := range slots {
			slots[j]++
		}
		slots = append(slots, 0)
	case op.moveto >= 0:
		// update_rule's move: the rule leaves pos and goes before the one
		// at moveto (counted before it left), or last.
		rule := model[op.pos]
		rest := slices.Delete(slices.Clone(model), op.pos, op.pos+1)
		to := min(op.moveto, len(model))
		if to > op.pos {
			to--
		}
		model = slices.Insert(rest, to, rule)
		for j := range slots {
			switch s := slots[j]; {
			case s == op.pos:
				slots[j] = to
			case s > op.pos && s <= to:
				slots[j]--
			case s < op.pos && s >= to:
				slots[j]++
			}
		}
	default:
		model[op.pos] = p.written(op.rule)
	}
	return model, slots
}

// result is the list as the plan leaves it: proxmops' rules rewritten,
// removed or added (after its last one, or first), the others in place.
func (p *rulePlan) result() []collItem {
	model, slots := slices.Clone(p.have), slices.Clone(p.slots)
	for k := 0; k < min(len(slots), len(p.want)); k++ {
		model[slots[k]] = p.written(p.want[k])
	}
	for k := len(slots) - 1; k >= len(p.want); k-- {
		model = slices.Delete(model, slots[k], slots[k]+1)
	}
	at := 0
	if len(slots) > 0 && len(slots) <= len(p.want) {
		at = slots[len(slots)-1] + 1
	}
	for k := len(slots); k < len(p.want); k++ {
		model = slices.Insert(model, at, p.written(p.want[k]))
		at++
	}
	return model
}
