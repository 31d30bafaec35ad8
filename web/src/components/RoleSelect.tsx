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

// ErrorAlert shows a form's error, or nothing when there is none.
export function ErrorAlert({ error }: { error: string }) {
  if (!error) return null;
  return (
    <div className="alert error" role="alert">
      {error}
    </div>
  );
}
