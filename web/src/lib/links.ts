// Links between pages: a resource opens its drawer on the overview, a commit
// its row on the Revisions page.

export function resourceHref(key: string): string {
  return `/?r=${encodeURIComponent(key)}`;
}

export function revisionHref(commit: string): string {
  return `/revisions?commit=${encodeURIComponent(commit)}`;
}

// isResourceKey: "Kind/name", as the daemon writes a resource in log lines.
export function isResourceKey(v: unknown): v is string {
  return typeof v === 'string' && /^[A-Z][A-Za-z]*\/\S+$/.test(v);
}

// isCommit: a commit hash, full or abbreviated.
export function isCommit(v: unknown): v is string {
  return typeof v === 'string' && /^[0-9a-f]{7,64}$/i.test(v);
}
