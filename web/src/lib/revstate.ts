// Which commit the controller reconciles, and why, in one vocabulary for the
// summary bar, the graph's Git source node and the Plan page: the branch head,
// a pinned revision (Revisions, "sync to this revision"), or the last good
// revision while the head's manifests fail to load.

import type { LoadError, Pin } from '../api/types';

export type RevisionState = 'head' | 'pinned' | 'lastGood';

// A pin wins: while pinned the head is not applied, loaded or not.
export function revisionState(pinned: Pin | null | undefined, loadError: LoadError | null | undefined): RevisionState {
  if (pinned) return 'pinned';
  if (loadError) return 'lastGood';
  return 'head';
}

// What the revision shown is, before its commit.
export const REVISION_STATE_WORDS: Record<RevisionState, string> = {
  head: 'revision being reconciled',
  pinned: 'pinned revision, not the branch head',
  lastGood: 'last good revision: HEAD failed to load',
};

// The Plan page's summary names the plan's commit with it ("last good revision a1b2c3d4").
export const PLAN_REVISION_WORDS: Record<Exclude<RevisionState, 'pinned'>, string> = {
  head: 'revision',
  lastGood: 'last good revision',
};

// The class of the line that says it (styles.css .rev-state).
export const REVISION_STATE_CLASS: Record<RevisionState, string> = {
  head: 'muted small',
  pinned: 'small rev-state warn',
  lastGood: 'small rev-state error',
};
