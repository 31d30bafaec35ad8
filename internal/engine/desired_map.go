package engine

// Map returns a copy of d in which each spec is f(spec) (f returns the spec
// itself to keep it): the daemon changes a sync's options (applyMode:
// reboot for one sync) on a copy, never on the loaded desired state.
func (d *Desired) Map(f func(Spec) Spec) *Desired {
	out := &Desired{alsoList: d.alsoList, former: d.former, specs: make(map[string][]Spec, len(d.specs))}
	for kind, specs := range d.specs {
		cp := make([]Spec, len(specs))
		for i, s := range specs {
			cp[i] = f(s)
		}
		out.specs[kind] = cp
	}
	return out
}
