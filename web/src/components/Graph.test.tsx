import { render, screen } from '@testing-library/react';
import { describe, expect, test } from 'vitest';
import type { LoadError, Pin, Resource } from '../api/types';
import { REVISION_STATE_WORDS, type ShownRevision } from '../lib/revstate';
import Graph from './Graph';
import { partial } from '../test/partial';

const resources: Resource[] = [
  partial({ kind: 'Template', name: 'debian-12-tpl', node: 'pve1', status: 'Synced' }),
  partial({ kind: 'VirtualMachine', name: 'app-02', node: 'pve1', status: 'Synced', dependsOn: [{ kind: 'Template', name: 'debian-12-tpl', relation: 'clones' }] }),
];

const LAST_GOOD = 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678';
const HEAD = 'ffee0011ffee0011ffee0011ffee0011ffee0011';

function show(pinned: Pin | null, loadError: LoadError | null, clusterRevisions?: ShownRevision[]) {
  render(
    <div style={{ width: 900, height: 600 }}>
      <Graph
        resources={resources}
        groupBy="kind"
        highlight=""
        revision={pinned?.revision ?? LAST_GOOD}
        revisionMessage="web-01: one core"
        lastPass=""
        pinned={pinned}
        loadError={loadError}
        clusterRevisions={clusterRevisions}
        onOpen={() => {}}
        colorMode="light"
      />
    </div>,
  );
  return document.querySelector('.react-flow__node-source') as HTMLElement;
}

describe('the Git source node says which commit it shows and why', () => {
  test('the branch head: the commit, with nothing more to say', () => {
    const node = show(null, null);
    expect(node.textContent).toBe('⎇ Git sourcea1b2c3d4 web-01: one corelast pass never');
    expect(node.querySelector('.gsource-state')).toBeNull();
  });

  test('a pinned revision is named as the summary bar names it', () => {
    const node = show(partial<Pin>({ revision: LAST_GOOD, message: 'web-01: one core', by: 'admin' }), null);
    const state = node.querySelector('.gsource-state')!;
    expect(state.textContent).toBe('pinned revision, not the branch head');
    expect(state.textContent).toBe(REVISION_STATE_WORDS.pinned);
    expect(state.getAttribute('title')).toBe('Pinned: the branch head is not applied until unpinned');
    expect(node.textContent).toContain('pinned revision, not the branch heada1b2c3d4 web-01: one core');
    expect(node.querySelector('.gsource')!.className).toContain('gsource-pinned');
  });

  test('with HEAD failing to load, the last good revision is named so, with the head that failed', () => {
    const node = show(null, { revision: HEAD, errors: ['vms/web-01.yaml:3:1: spec.cores: must be at least 1'] });
    const state = node.querySelector('.gsource-state')!;
    expect(state.textContent).toBe(REVISION_STATE_WORDS.lastGood);
    expect(state.textContent).toBe('last good revision: HEAD failed to load');
    expect(state.getAttribute('title')).toBe('HEAD (ffee0011) failed to load: this is the last good revision, not HEAD');
    expect(screen.getByTitle(LAST_GOOD).textContent).toBe('a1b2c3d4');
  });

  test('a pin wins over a head that fails to load: the head is not what is applied either way', () => {
    const node = show(partial<Pin>({ revision: LAST_GOOD }), { revision: HEAD, errors: ['x'] });
    expect(node.querySelector('.gsource-state')!.textContent).toBe(REVISION_STATE_WORDS.pinned);
  });
});

test('clusters that reconcile different revisions are each named with theirs and why', () => {
  const pass = { revisionMessage: '', lastPass: '', passDurationMs: null, pinned: null, loadError: null };
  const node = show(null, null, [
    { ...pass, cluster: 'lab-1', revision: HEAD },
    { ...pass, cluster: 'lab-2', revision: LAST_GOOD, pinned: partial<Pin>({ revision: LAST_GOOD }) },
    { ...pass, cluster: 'lab-3', revision: LAST_GOOD, loadError: { revision: HEAD, errors: ['x'] } },
  ]);
  expect([...node.querySelectorAll('.gsource-rev')].map((r) => r.textContent)).toEqual([
    'lab-1 ffee0011 branch head',
    'lab-2 a1b2c3d4 pinned',
    'lab-3 a1b2c3d4 last good; HEAD failed to load',
  ]);
  expect(node.querySelector('.gsource-rev')!.getAttribute('title')).toBe(`lab-1: revision being reconciled ${HEAD}`);
});
