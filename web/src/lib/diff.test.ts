import { describe, expect, test } from 'vitest';
import { changeFor, flatten, leafName, markRows, normalisePath, unmatchedChanges } from './diff';

describe('flatten', () => {
  test('nested objects become dotted rows with depth, scalar lists one row', () => {
    const rows = flatten({ cores: 4, disks: { scsi0: { size: '32G' } }, tags: ['a', 'b'], empty: {}, nics: [{ bridge: 'vmbr0' }], none: null });
    expect(rows.map((r) => [r.path, r.value, r.depth, r.isParent])).toEqual([
      ['cores', '4', 0, false],
      ['disks', '', 0, true],
      ['disks.scsi0', '', 1, true],
      ['disks.scsi0.size', '32G', 2, false],
      ['tags', 'a, b', 0, false],
      ['empty', '{}', 0, false],
      ['nics', '', 0, true],
      ['nics[0]', '', 1, true],
      ['nics[0].bridge', 'vmbr0', 2, false],
      ['none', '—', 0, false],
    ]);
  });
});

describe('marking the changed fields', () => {
  const changes = [
    { field: 'cores', from: '2', to: '4' },
    { field: 'disks.scsi0.size', from: '32G', to: '64G' },
    { field: 'net1', from: '', to: 'virtio,bridge=vmbr1' },
  ];
  test.each([
    ['cores', 'cores'],
    ['spec.cores', 'cores'],
    ['config.cores', 'cores'],
    ['pending.cores', 'cores'],
    ['disks.scsi0.size', 'disks.scsi0.size'],
    ['disks.scsi0', 'disks.scsi0.size'],
    ['disks', 'disks.scsi0.size'],
    ['memory', undefined],
    ['corestotal', undefined],
  ])('%s → %s', (path, want) => {
    expect(changeFor(path, changes)?.field).toBe(want);
  });

  test('rows are marked with their change', () => {
    const marked = markRows(flatten({ cores: 2, memory: 2048 }), changes);
    expect(marked.map((r) => [r.path, r.mark, r.change?.to])).toEqual([
      ['cores', 'changed', '4'],
      ['memory', 'none', undefined],
    ]);
  });

  test('no changes, no marks', () => {
    expect(markRows(flatten({ cores: 2 }), null).every((r) => r.mark === 'none')).toBe(true);
  });

  test('changes neither side shows are listed apart', () => {
    const desired = flatten({ cores: 4, disks: { scsi0: { size: '64G' } } });
    const observed = flatten({ cores: 2 });
    expect(unmatchedChanges(changes, desired, observed).map((c) => c.field)).toEqual(['net1']);
  });

  test('paths normalise list indexes and prefixes', () => {
    expect(normalisePath('spec.nics[1].Bridge')).toBe('nics.1.bridge');
    expect(leafName('disks.scsi0.size')).toBe('size');
    expect(leafName('nics[1]')).toBe('[1]');
    expect(leafName('cores')).toBe('cores');
  });
});
