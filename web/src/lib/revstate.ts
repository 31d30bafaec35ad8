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

// The same, short, where one line names several clusters' revisions ("lab-2 a1b2c3d4 pinned").
export const REVISION_STATE_SHORT: Record<RevisionState, string> = {
  head: 'branch head',
  pinned: 'pinned',
  lastGood: 'last good; HEAD failed to load',
};

// A revision as one cluster of a clusters list (or the single cluster) reconciles it.
export interface ShownRevision {
  // Absent when it stands for every cluster shown (they agree, or there is one).
  cluster?: string;
  revision: string;
  revisionMessage: string;
  lastPass: string;
  passDurationMs: number | null;
  pinned: Pin | null;
  loadError: LoadError | null;
}

// shownRevisions says what the clusters shown reconcile: once when they agree (the
// same commit, pinned or not alike), else each cluster's own. The last pass said
// for several is the oldest: every one of them has passed since.
export function shownRevisions(passes: ShownRevision[]): ShownRevision[] {
  if (passes.length <= 1) return passes.map((p) => ({ ...p, cluster: undefined }));
  const key = (p: ShownRevision) => `${p.revision}\u0000${revisionState(p.pinned, p.loadError)}`;
  if (new Set(passes.map(key)).size > 1) return passes;
  const oldest = passes.some((p) => !p.lastPass) ? '' : passes.map((p) => p.lastPass).sort()[0];
  const slowest = passes.reduce<number | null>((m, p) => (p.passDurationMs === null ? m : Math.max(m ?? 0, p.passDurationMs)), null);
  return [{ ...passes[0], cluster: undefined, lastPass: oldest, passDurationMs: slowest }];
}
