import { render, screen, within } from '@testing-library/react';
import { expect, test } from 'vitest';
import ChangeTable, { splitChanges } from './ChangeTable';

const cells = (table: HTMLElement) =>
  [...table.querySelectorAll('tbody tr')].map((tr) => [...tr.children].map((td) => td.textContent));

test('rule changes are shown as one table in list order, other fields beside it', () => {
  render(
    <ChangeTable
      changes={[
        { field: 'comment', path: 'spec.comment', from: 'old', to: 'web' },
        { field: 'rules[10]', path: 'spec.rules[10]', from: '', to: 'in ACCEPT -p tcp -dport 8443' },
        { field: 'rules[2]', path: 'spec.rules[2]', from: 'in ACCEPT -p tcp -dport 80', to: 'in ACCEPT -p tcp -dport 80,443' },
        { field: 'rules[3]', path: 'spec.rules[3]', from: 'in DROP', to: '' },
      ]}
    />,
  );
  const rules = screen.getByRole('table', { name: 'spec.rules, in order' });
  // By position, numerically (10 after 3): an insertion, a change and a removal read in order.
  expect(cells(rules)).toEqual([
    ['2', 'in ACCEPT -p tcp -dport 80', 'in ACCEPT -p tcp -dport 80,443'],
    ['3', 'in DROP', '—'],
    ['10', '—', 'in ACCEPT -p tcp -dport 8443'],
  ]);
  const fields = screen.getAllByRole('table').find((t) => t !== rules)!;
  expect(cells(fields)).toEqual([['comment', 'old', 'web']]);
  expect(within(rules).getByText('#')).toBeTruthy();
});

test('each rule list of an action gets its own table; set entries stay plain fields', () => {
  const { fields, lists } = splitChanges([
    { field: 'rules[0]', path: 'spec.firewall.rules[0]', from: 'a', to: 'b' },
    { field: 'rules[0]', path: 'spec.rules[0]', from: 'c', to: 'd' },
    { field: 'entries[1]', path: 'spec.entries[1]', from: '', to: '10.0.0.1' },
  ]);
  expect(lists.map((l) => l.list)).toEqual(['spec.firewall.rules', 'spec.rules']);
  expect(fields.map((c) => c.path)).toEqual(['spec.entries[1]']);
});

test('a list of changes without rules has no ordered table', () => {
  render(<ChangeTable changes={[{ field: 'cores', from: '2', to: '4' }]} />);
  expect(screen.getAllByRole('table')).toHaveLength(1);
  expect(screen.queryByText(/in order/)).toBeNull();
});
