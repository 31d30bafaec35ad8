package engine

// Only returns a plan holding just the actions of p with the given keys
// ("Kind/name"), sharing p's observation and pass state, so that Apply runs
// those alone: the daemon hands actions to its background dispatcher one
// resource at a time. Dependencies on actions left out are not waited for;
// the caller holds dependents back until their prerequisites are done.
func (p *Plan) Only(keys ...string) *Plan {
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	sub := &Plan{Revision: p.Revision, Stats: p.Stats, pass: p.pass}
	for _, a := range p.Actions {
		if want[a.Key()] {
			sub.Actions = append(sub.Actions, a)
		}
	}
	sub.finish()
	return sub
}
