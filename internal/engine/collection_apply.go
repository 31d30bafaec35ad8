package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/proxmops/proxmops/internal/pve"
)

// The collection reconciler's requests: an action's ops in order, the
// ownership records kept beside them, a security group emptied before it
// goes.

// runAndRecord sends ops, then records the item as proxmops' when record
// is set and the row keeps ownership records.
func (r *collectionReconciler) runAndRecord(key string, ops []collReq, s Spec, record bool) func(context.Context, *execCtx) error {
	return func(ctx context.Context, x *execCtx) error {
		if err := runOps(ctx, x, key, ops); err != nil {
			return err
		}
		if record && r.row.owner != nil {
			if err := r.row.owner.record(ctx, x.e.records, s); err != nil {
				return fmt.Errorf("recording %s %s as proxmops': %w", r.row.noun, s.meta().Name, err)
			}
		}
		return nil
	}
}

// runCreating sends the requests that make an item, recording it as
// proxmops' first when the row keeps ownership records: a creation whose
// answer was lost (it may have happened) leaves the item proxmops', not a
// Conflict of its own making. A refusal Proxmox answered (nothing made)
// forgets the record again.
func (r *collectionReconciler) runCreating(key string, ops []collReq, s Spec) func(context.Context, *execCtx) error {
	if r.row.owner == nil {
		return r.runAndRecord(key, ops, s, false)
	}
	return func(ctx context.Context, x *execCtx) error {
		if err := r.row.owner.record(ctx, x.e.records, s); err != nil {
			return fmt.Errorf("recording %s %s as proxmops': %w", r.row.noun, s.meta().Name, err)
		}
		err := runOps(ctx, x, key, ops)
		var apiErr *pve.APIError
		var paramErr *pve.ParamError
		var permErr *pve.PermissionError
		if errors.As(err, &apiErr) || errors.As(err, &paramErr) || errors.As(err, &permErr) {
			if ferr := r.row.owner.forget(ctx, x.e.records, s.meta().Name); ferr != nil {
				return fmt.Errorf("%w (and forgetting the record: %v)", err, ferr)
			}
		}
		return err
	}
}

// runOps sends an action's requests in order, then makes its rule list
// the wanted one (rules may be nil); the item's cached entries are
// forgotten before and after, whatever the outcome: a plan that read them
// meanwhile saw them half-made.
func runOps(ctx context.Context, x *execCtx, key string, ops []collReq) error {
	x.e.opts.Reads.forgetEntries(key)
	defer x.e.opts.Reads.forgetEntries(key)
	for _, op := range ops {
		if op.rules != nil {
			if err := op.rules.apply(ctx, x.e.client); err != nil {
				return err
			}
			continue
		}
		if err := op.do(ctx, x.e.client); err != nil {
			return fmt.Errorf("%s %s: %w", op.method, op.path, err)
		}
	}
	return nil
}

// emptyRules readies an item with a rule list for its removal: refused
// while rules elsewhere still apply it (Proxmox would remove it and leave
// them applying nothing), then its rules are removed (Proxmox removes
// only an empty one).
func (r *collectionReconciler) emptyRules(ctx context.Context, x *execCtx, name string) error {
	if r.row.rules.users != nil {
		users, err := r.row.rules.users(ctx, x.e.client, name)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			// Terminal: a person has to remove those rules first; retrying
			// on every pass would read every guest's rules each time.
			return &terminalError{fmt.Sprintf("%s %s is still applied by %s: remove those rules first; it is left as it is", r.row.noun, name, strings.Join(users, ", "))}
		}
	}
	l := r.ruleList(name)
	var got []map[string]any
	if err := x.e.client.Get(ctx, l.path, nil, &got); err != nil {
		return fmt.Errorf("reading %s: %w", l.path, err)
	}
	var have []collItem
	for _, m := range got {
		have = append(have, stringValues(m))
	}
	if _, p := l.diffRules(have, nil); p != nil {
		return p.apply(ctx, x.e.client)
	}
	return nil
}
