import type { Settings } from '../api/types';

// Secret fields: the daemon shows them as "set" or "not set" and never sends them.
export const SECRET_FIELDS = {
  cluster: ['tokenSecret'],
  source: ['token', 'sshKey'],
  forge: ['token'],
} as const;

export type SecretEdits = Record<string, { value: string; clear: boolean }>;

export function secretId(section: string, field: string): string {
  return `${section}.${field}`;
}

export function isSet(v: unknown): boolean {
  return v === 'set';
}

// settingsPayload builds the PUT (and test) body: a secret typed in is sent, a secret
// marked "clear" is sent as "", and any other secret is left out so it keeps its value.
export function settingsPayload(form: Settings, edits: SecretEdits): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {
    cluster: { ...form.cluster },
    source: { ...form.source },
    reconcile: { ...form.reconcile, concurrency: Number(form.reconcile.concurrency) || 0 },
  };
  for (const k of ['historyPerResource', 'historyTotal'] as const) {
    if (out.reconcile[k] !== undefined) out.reconcile[k] = Number(out.reconcile[k]) || 0;
  }
  if (form.forge) out.forge = { ...form.forge };
  for (const [section, fields] of Object.entries(SECRET_FIELDS)) {
    if (!out[section]) continue;
    for (const field of fields) {
      const e = edits[secretId(section, field)];
      if (e?.value) out[section][field] = e.value;
      else if (e?.clear) out[section][field] = '';
      else delete out[section][field];
    }
  }
  return out;
}
