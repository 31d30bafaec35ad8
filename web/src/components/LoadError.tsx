import type { LoadError } from '../api/types';
import { shortRev } from '../lib/format';

// ErrorLines shows a message of several errors (one per line, as the daemon
// joins manifest errors) as a list, one item each, instead of one paragraph.
// A first line ending in a colon ("the manifests at … failed to load:") leads
// the list rather than counting as an error of its own.
export function ErrorLines({ text }: { text: string }) {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  if (lines.length <= 1) return <>{text}</>;
  const lead = lines[0].trimEnd().endsWith(':') ? lines[0] : '';
  const items = lead ? lines.slice(1) : lines;
  return (
    <>
      {lead && <span className="error-lead">{lead}</span>}
      <ul className="error-list">
        {items.map((l, i) => (
          <li key={i} className="mono small">
            {l}
          </li>
        ))}
      </ul>
    </>
  );
}

// LoadErrorAlert says loudly that the branch head failed to load, with its
// errors one per item, and whose plan or status is shown instead: shown is
// the last good revision, '' when none ever loaded, undefined to say neither.
export function LoadErrorAlert({ loadError, shown }: { loadError: LoadError; shown?: string }) {
  return (
    <div className="alert error" role="alert" aria-label="HEAD failed to load">
      <strong>
        HEAD (<code title={loadError.revision}>{shortRev(loadError.revision)}</code>) failed to load
      </strong>
      {shown ? (
        <>
          : what follows is the last good revision&apos;s (<code title={shown}>{shortRev(shown)}</code>), not HEAD&apos;s.
        </>
      ) : shown === '' ? (
        ': no revision has loaded yet, so nothing is planned or applied until the manifests are fixed.'
      ) : (
        '.'
      )}
      <ul className="error-list">
        {(loadError.errors ?? []).map((e, i) => (
          <li key={i} className="mono small">
            {e}
          </li>
        ))}
      </ul>
    </div>
  );
}
