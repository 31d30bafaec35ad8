// The buttons of a confirmation dialog (Adopt.tsx, Snapshots.tsx): the
// action, named busyLabel while it runs, and Cancel, which the dialog
// focuses first (cancelRef). Both are disabled while the action runs.

import type { Ref } from 'react';

export function ConfirmRow({
  tone,
  label,
  busyLabel,
  busy,
  onConfirm,
  onCancel,
  cancelRef,
}: {
  tone: 'primary' | 'danger';
  label: string;
  busyLabel: string;
  busy: boolean;
  onConfirm: () => void;
  onCancel: () => void;
  cancelRef: Ref<HTMLButtonElement>;
}) {
  return (
    <div className="row">
      <button type="button" className={`btn ${tone}`} onClick={onConfirm} disabled={busy}>
        {busy ? busyLabel : label}
      </button>
      <button type="button" className="btn" ref={cancelRef} onClick={onCancel} disabled={busy}>
        Cancel
      </button>
    </div>
  );
}
