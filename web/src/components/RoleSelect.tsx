// The role picker and the error alert the account and token forms share
// (Accounts.tsx, Settings.tsx).

import type { Role } from '../api/types';

export const ROLES: readonly Role[] = ['viewer', 'admin'];

export function RoleSelect({ label, value, onChange }: { label: string; value: Role; onChange: (role: Role) => void }) {
  return (
    <select aria-label={label} value={value} onChange={(e) => onChange(e.target.value as Role)}>
      {ROLES.map((r) => (
        <option key={r} value={r}>
          {r}
        </option>
      ))}
    </select>
  );
}

// ErrorAlert shows a form's error, or nothing when there is none. An error stays
// until the next attempt replaces it, or until onDismiss (when given) is pressed:
// unlike a success notice (lib/transient.ts) it never goes by itself.
export function ErrorAlert({ error, onDismiss }: { error: string; onDismiss?: () => void }) {
  if (!error) return null;
  return (
    <div className="alert error" role="alert">
      {error}
      {onDismiss && (
        <button type="button" className="btn small alert-dismiss" onClick={onDismiss}>
          Dismiss
        </button>
      )}
    </div>
  );
}
