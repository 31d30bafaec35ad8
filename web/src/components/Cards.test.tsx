import { fireEvent, render, screen } from '@testing-library/react';
import { expect, test, vi } from 'vitest';
import type { Resource } from '../api/types';
import { groupResources } from '../lib/grouping';
import Cards, { cardRows, columnsFor } from './Cards';
import { visibleRange, offsetsOf } from './VirtualList';
import { partial } from '../test/partial';

const many = (n: number): Resource[] =>
  Array.from({ length: n }, (_, i) => partial<Resource>({ kind: i % 4 ? 'VirtualMachine' : 'Container', name: `guest-${String(i).padStart(4, '0')}`, status: i % 7 ? 'Synced' : 'OutOfSync', node: 'pve1' }));

test('1,000 resources render only the cards near the viewport', () => {
  const { container } = render(<Cards resources={many(1000)} groupBy="kind" onOpen={() => {}} />);
  const cards = container.querySelectorAll('.card');
  expect(cards.length).toBeGreaterThan(0);
  expect(cards.length).toBeLessThan(120);
  // The spacer is as tall as all rows, so the scrollbar is right.
  const spacer = container.querySelector('.vspacer') as HTMLElement;
  expect(parseInt(spacer.style.height, 10)).toBeGreaterThan(20_000);
  // The first render of 1,000 resources takes seconds on a loaded two-core machine.
}, 20_000);

test('scrolling shows the cards further down', () => {
  const { container } = render(<Cards resources={many(1000)} groupBy="kind" onOpen={() => {}} />);
  const list = container.querySelector('.vlist') as HTMLElement;
  const before = container.querySelector('.card')?.getAttribute('data-key');
  list.scrollTop = 15_000;
  fireEvent.scroll(list);
  const after = container.querySelector('.card')?.getAttribute('data-key');
  expect(after).not.toBe(before);
});

test('a card opens its resource, from the mouse or the keyboard', () => {
  const onOpen = vi.fn();
  render(<Cards resources={many(3)} groupBy="kind" onOpen={onOpen} />);
  fireEvent.click(screen.getByRole('button', { name: /guest-0001/ }));
  expect(onOpen).toHaveBeenCalledWith('VirtualMachine/guest-0001');
  expect(screen.getByRole('button', { name: /guest-0002/ }).tagName).toBe('BUTTON');
});

test('rows: a header per group, then rows of as many cards as fit', () => {
  const rows = cardRows(groupResources(many(10), 'kind'), 4);
  expect(rows.map((r) => (r.type === 'header' ? `h:${r.group.key}` : r.resources.length))).toEqual(['h:Container', 3, 'h:VirtualMachine', 4, 3]);
  expect(columnsFor(200)).toBe(1);
  expect(columnsFor(1400)).toBe(5);
});

test('visible range of a windowed list', () => {
  const offsets = offsetsOf([10, 10, 10, 10, 10], (h) => h);
  expect(visibleRange(offsets, 0, 25)).toEqual([0, 3]);
  expect(visibleRange(offsets, 15, 35)).toEqual([1, 4]);
  expect(visibleRange(offsets, 100, 200)).toEqual([5, 5]);
});

test('a card of a guest moved off its declared node marks it moved', () => {
  const r: Resource = partial({ kind: 'VirtualMachine', name: 'web-01', status: 'Synced', node: 'pve2', manifestNode: 'pve1', reason: 'in sync; running on pve2; the manifest says pve1: moved by HA or a migration, left where it is' });
  render(<Cards resources={[r, { ...r, name: 'web-02', node: 'pve1', manifestNode: undefined, reason: 'in sync' }]} groupBy="kind" onOpen={() => {}} />);
  const moved = screen.getByText('moved');
  expect(moved.getAttribute('title')).toBe('The manifest says pve1: moved by HA or a migration, left where it is');
  expect(screen.getByRole('button', { name: /web-01/ }).textContent).toContain('moved');
  expect(screen.getByRole('button', { name: /web-02/ }).textContent).not.toContain('moved');
});

test('a card of a kind without tags says what its manifest declares', () => {
  const rs: Resource[] = [
    partial({ kind: 'BackupJob', name: 'nightly', status: 'Synced', summary: '02:30 · tagged prod · to pbs' }),
    partial({ kind: 'FirewallIPSet', name: 'admins', status: 'Synced', summary: '2 entries' }),
    partial({ kind: 'VirtualMachine', name: 'web', status: 'Synced', tags: ['prod'] }),
  ];
  render(<Cards resources={rs} groupBy="kind" onOpen={() => {}} />);
  expect(screen.getByRole('button', { name: /nightly/ }).querySelector('.card-summary')?.textContent).toBe('02:30 · tagged prod · to pbs');
  expect(screen.getByRole('button', { name: /admins/ }).textContent).toContain('2 entries');
  expect(screen.getByRole('button', { name: /web/ }).querySelector('.card-summary')).toBeNull();
});
