import { expect, test } from 'vitest';
import type { Settings } from '../api/types';
import { settingsPayload } from './settings';
import { partial } from '../test/partial';

const form: Settings = partial({
  cluster: { endpoint: 'https://pve:8006/api2/json', tokenId: 'a@pve!b', tokenSecret: 'set', insecureSkipVerify: false, fingerprint: '', caFile: '' },
  source: partial({ repoURL: 'file:///r', path: 'proxmox', revision: 'main', username: '', token: 'not set', sshKey: 'set', submodules: true }),
  reconcile: partial({ interval: '60s', autoSync: true, prune: false, concurrency: '8' as unknown as number, dryRun: false }),
});

test('untouched secrets are left out, typed ones sent, cleared ones sent empty', () => {
  const p = settingsPayload(form, { 'source.token': { value: 'ghp_x', clear: false }, 'source.sshKey': { value: '', clear: true } });
  expect('tokenSecret' in p.cluster).toBe(false);
  expect(p.source.token).toBe('ghp_x');
  expect(p.source.sshKey).toBe('');
  expect(p.cluster.endpoint).toBe('https://pve:8006/api2/json');
  expect(p.reconcile.concurrency).toBe(8);
});

test('a typed value wins over clear', () => {
  const p = settingsPayload(form, { 'cluster.tokenSecret': { value: 'new', clear: true } });
  expect(p.cluster.tokenSecret).toBe('new');
});

test('the forge token is a secret like the others: sent only when typed', () => {
  const withForge: Settings = {
    ...form,
    forge: { type: 'github', apiURL: 'https://api.github.com', repository: 'you/homelab', token: 'set', pullRequestPreviews: true },
  };
  expect('token' in settingsPayload(withForge, {}).forge).toBe(false);
  expect(settingsPayload(withForge, { 'forge.token': { value: 'ghp_new', clear: false } }).forge.token).toBe('ghp_new');
  expect(settingsPayload(withForge, {}).forge.repository).toBe('you/homelab');
  // A daemon without the section gets none back.
  expect('forge' in settingsPayload(form, {})).toBe(false);
});
