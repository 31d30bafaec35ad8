import { expect, test } from 'vitest';
import type { LogLevel, LogLine } from '../api/types';
import { appendLines, filterLines, levelRank, lineClusters, logRefs } from './logs';

// level may be a word outside LogLevel ('NOTICE'): the filter is told one too.
const line = (id: number, level = 'INFO', msg = `line ${id}`, attrs?: Record<string, unknown>): LogLine => ({ id, time: '2026-11-30T10:00:00Z', level: level as LogLevel, msg, attrs });

test('lines already held are dropped, new ones kept in id order', () => {
  const held = [line(1), line(2)];
  expect(appendLines(held, [line(2), line(4), line(3)]).map((l) => l.id)).toEqual([1, 2, 3, 4]);
  expect(appendLines(held, [line(1)])).toBe(held);
});

test('the buffer keeps only the newest lines', () => {
  const out = appendLines([], Array.from({ length: 10 }, (_, i) => line(i + 1)), 4);
  expect(out.map((l) => l.id)).toEqual([7, 8, 9, 10]);
});

test('level filter keeps that level and above; unknown levels count as INFO', () => {
  const lines = [line(1, 'DEBUG'), line(2, 'INFO'), line(3, 'WARN'), line(4, 'ERROR'), line(5, 'NOTICE')];
  expect(filterLines(lines, 'WARN', '').map((l) => l.id)).toEqual([3, 4]);
  expect(filterLines(lines, 'DEBUG', '').length).toBe(5);
  expect(levelRank('notice')).toBe(levelRank('INFO'));
});

test('search looks in messages and attributes, ignoring case', () => {
  const lines = [line(1, 'INFO', 'deleted', { resource: 'VirtualMachine/app-02' }), line(2, 'INFO', 'Created app-01')];
  expect(filterLines(lines, 'DEBUG', 'APP-02').map((l) => l.id)).toEqual([1]);
  expect(filterLines(lines, 'DEBUG', 'created').map((l) => l.id)).toEqual([2]);
});

test('the resource and the commit a line names are taken out of the attributes, to be shown as links', () => {
  const full = '3f2c1e0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e';
  expect(logRefs({ resource: 'VirtualMachine/app-01', commit: full, action: 'update', duration: '1s' })).toEqual({
    resource: 'VirtualMachine/app-01',
    key: 'VirtualMachine/app-01',
    commit: full,
    rest: { action: 'update', duration: '1s' },
  });
  // Values that are not a resource or a commit stay text.
  expect(logRefs({ resource: 'app-01', commit: 'HEAD' })).toEqual({ resource: null, key: null, commit: null, rest: { resource: 'app-01', commit: 'HEAD' } });
  expect(logRefs({ resource: 'Iso/debian' })).toEqual({ resource: 'Iso/debian', key: 'Iso/debian', commit: null, rest: undefined });
  expect(logRefs(undefined)).toEqual({ resource: null, key: null, commit: null, rest: undefined });
});

test('lines of several clusters: their resource links carry the cluster, and a cluster filter keeps its lines', () => {
  const lines = [
    line(1, 'INFO', 'action done', { cluster: 'lab-1', resource: 'VirtualMachine/web' }),
    line(2, 'INFO', 'action done', { cluster: 'lab-2', resource: 'VirtualMachine/web' }),
    line(3, 'INFO', 'login', { user: 'admin' }),
    line(4, 'INFO', 'pass', { cluster: 'default', resource: 'Iso/d' }),
  ];
  expect(lines.map((l) => logRefs(l.attrs).key)).toEqual(['lab-1:VirtualMachine/web', 'lab-2:VirtualMachine/web', null, 'Iso/d']);
  expect(lineClusters(lines)).toEqual(['default', 'lab-1', 'lab-2']);
  expect(filterLines(lines, 'INFO', '', 'lab-2').map((l) => l.id)).toEqual([2]);
  expect(filterLines(lines, 'INFO', '').map((l) => l.id)).toEqual([1, 2, 3, 4]);
});
