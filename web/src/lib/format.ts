import type { Actor, Change, SyncPolicy, Wait } from '../api/types';

// changeNote says what becomes of a change beyond applying it, as the CLI
// prints it after the field: ' (pending)', ' (creation-only)', '' when applied.
export function changeNote(c: Change): string {
  if (c.hold) return ` (${c.hold})`;
  return c.pending ? ' (pending)' : '';
}

// waitText says what a held action waits for (metadata.dependsOn), as the
// CLI's plan does: "waiting for VirtualMachine/db to be healthy (Progressing)".
export function waitText(w: Wait): string {
  if (w.status !== 'Synced') return `waiting for ${w.resource} to be in sync and healthy (${w.status}${BY_HAND[w.sync ?? 'auto']})`;
  return `waiting for ${w.resource} to be healthy (${w.health})`;
}

// BY_HAND names a policy that leaves a wait to a user, as engine.Wait does.
const BY_HAND: Record<SyncPolicy, string> = {
  auto: '',
  manual: '; its sync is manual: sync it to go on',
  disabled: '; its sync is disabled: proxmops will not bring it in sync',
};

// changeLabel is the change's field as people read it ("memory (pending)").
export function changeLabel(c: Change): string {
  return c.field + changeNote(c);
}

export function shortRev(rev: string | undefined): string {
  if (!rev) return '—';
  return /^[0-9a-f]{12,}$/i.test(rev) ? rev.slice(0, 8) : rev;
}

export function timeAgo(iso: string | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const s = Math.round((now - t) / 1000);
  if (s < 5) return 'just now';
  if (s < 60) return `${s}s ago`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m}m ago`;
  const h = Math.round(m / 60);
  if (h < 48) return `${h}h ago`;
  return `${Math.round(h / 24)}d ago`;
}

export function formatTime(iso: string | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

export function clockTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

// actorText says what started an action, for a history entry's "by …".
export function actorText(a: Actor): string {
  switch (a.kind) {
    case 'pass':
      return 'the reconcile pass';
    case 'user':
      return `${a.name ?? 'a user'}${a.via === 'oidc' ? ' (single sign-on)' : ''}`;
    case 'token':
      return `API token ${a.name ?? ''}`.trim();
    case 'webhook':
      return `${a.name ?? 'a'} webhook${a.delivery ? ` (delivery ${a.delivery})` : ''}`;
    case 'cli':
      return `the CLI${a.name ? ` (${a.name})` : ''}${a.token ? ` through token ${a.token}` : ''}`;
    case 'commit':
      return `${a.name ?? 'the commit'}'s commit`;
  }
  return String(a.kind);
}
