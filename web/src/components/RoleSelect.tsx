// The role picker, the error alert, the success notice and the submit row the
// forms share (Accounts.tsx, Settings.tsx and the panels).

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

// Notice shows a success message (lib/transient.ts), or nothing when there is
// none: inline beside a form's button, or as a paragraph with block.
export function Notice({ text, block }: { text: string; block?: boolean }) {
  if (!text) return null;
  return block ? (
    <p className="notice" role="status">
      {text}
    </p>
  ) : (
    <span className="notice" role="status">
      {text}
    </span>
  );
}

// SubmitRow ends a form of one action: its submit button, named busyLabel and
// disabled while the action runs, the notice of what the last one did beside it
// and its error below.
export function SubmitRow({
  label,
  busyLabel,
  busy,
  disabled = false,
  done,
  error,
}: {
  label: string;
  busyLabel: string;
  busy: boolean;
  disabled?: boolean;
  done: string;
  error: string;
}) {
  return (
    <>
      <div className="row">
        <button type="submit" className="btn" disabled={busy || disabled}>
          {busy ? busyLabel : label}
        </button>
        <Notice text={done} />
      </div>
      <ErrorAlert error={error} />
    </>
  );
}
