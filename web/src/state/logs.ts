import type { LogLine } from '../api/types';

export const LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR'] as const;
export const MAX_LINES = 5000;

export function levelRank(level: string): number {
  const i = (LEVELS as readonly string[]).indexOf(level.toUpperCase());
  return i < 0 ? 1 : i;
}

// appendLines adds lines in id order, dropping ones already held (the initial fetch
// and the stream overlap) and keeping at most `max`.
export function appendLines(held: LogLine[], incoming: LogLine[], max = MAX_LINES): LogLine[] {
  if (incoming.length === 0) return held;
  const lastId = held.length ? held[held.length - 1].id : -Infinity;
  const fresh = incoming.filter((l) => l.id > lastId);
  if (fresh.length === 0) return held;
  fresh.sort((a, b) => a.id - b.id);
  const out = held.concat(fresh);
  return out.length > max ? out.slice(out.length - max) : out;
}

export function attrsText(attrs: LogLine['attrs']): string {
  if (!attrs) return '';
  return Object.entries(attrs)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
}

export function filterLines(lines: LogLine[], minLevel: string, search: string): LogLine[] {
  const min = levelRank(minLevel);
  const q = search.trim().toLowerCase();
  return lines.filter(
    (l) => levelRank(l.level) >= min && (!q || l.msg.toLowerCase().includes(q) || attrsText(l.attrs).toLowerCase().includes(q)),
  );
}
