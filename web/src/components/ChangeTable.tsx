import type { Change } from '../api/types';
import { changeLabel } from '../lib/format';
import { TableHead } from './TableHead';

// An ordered list (a security group's or a guest's firewall rules) is
// compared by position: its changes are named "<list>[<position>]" and
// shown as one table in list order, so a moved rule reads as what it is.
const ORDERED = /^(.*\brules)\[(\d+)\]$/;

export interface OrderedList {
  list: string;
  rows: { position: number; change: Change }[];
}

// splitChanges separates an action's changes into plain fields and the
// ordered lists, each list's rows sorted by position.
export function splitChanges(changes: Change[]): { fields: Change[]; lists: OrderedList[] } {
  const fields: Change[] = [];
  const lists = new Map<string, OrderedList>();
  for (const c of changes) {
    const m = ORDERED.exec(c.path || c.field);
    if (!m) {
      fields.push(c);
      continue;
    }
    const list = lists.get(m[1]) ?? { list: m[1], rows: [] };
    list.rows.push({ position: Number(m[2]), change: c });
    lists.set(m[1], list);
  }
  for (const l of lists.values()) l.rows.sort((a, b) => a.position - b.position);
  return { fields, lists: [...lists.values()] };
}

// ChangeCells are a changed field's cells in a table row: its name, the value
// before (its column headed from) and after (headed to).
export function ChangeCells({ c, from, to }: { c: Change; from: string; to: string }) {
  return (
    <>
      <td className="mono" data-label="field">{changeLabel(c)}</td>
      <td className="del mono" data-label={from}>{c.from || '—'}</td>
      <td className="add mono" data-label={to}>{c.to || '—'}</td>
    </>
  );
}

// ChangeTable shows an action's changes: the fields it changes, cluster
// beside manifest, then each ordered list as a table by position.
export default function ChangeTable({ changes }: { changes: Change[] }) {
  const { fields, lists } = splitChanges(changes);
  return (
    <>
      {fields.length > 0 && (
        <table className="changes">
          <TableHead columns={['field', 'on the cluster', 'in the manifest']} />
          <tbody>
            {fields.map((c) => (
              <tr key={changeLabel(c)}>
                <ChangeCells c={c} from="on the cluster" to="in the manifest" />
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {lists.map((l) => (
        <table className="changes ordered" key={l.list} aria-label={`${l.list}, in order`}>
          <caption className="mono">{l.list}, in order</caption>
          <TableHead columns={['#', 'on the cluster', 'in the manifest']} />
          <tbody>
            {l.rows.map(({ position, change }) => (
              <tr key={position}>
                <td className="mono" data-label="#">{position}</td>
                <td className="del mono" data-label="on the cluster">{change.from || '—'}</td>
                <td className="add mono" data-label="in the manifest">{change.to || '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ))}
    </>
  );
}
