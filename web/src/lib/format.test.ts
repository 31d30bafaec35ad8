import { expect, test } from 'vitest';
import { changeLabel, waitText } from './format';

// A change's state is data beside its field; the label says it the way the CLI prints it.
test('changeLabel names a pending or held change as the CLI does', () => {
  expect(changeLabel({ field: 'cores', from: '2', to: '4' })).toBe('cores');
  expect(changeLabel({ field: 'memory', from: '2048', to: '4096', pending: true })).toBe('memory (pending)');
  expect(changeLabel({ field: 'scsi0.format', from: 'raw', to: 'qcow2', hold: 'creation-only' })).toBe('scsi0.format (creation-only)');
  expect(changeLabel({ field: 'scsi0.size', from: '3G', to: '1G', hold: 'grown since adoption' })).toBe('scsi0.size (grown since adoption)');
});

// The words are the CLI's (engine.Wait.Text), and a wait only a user can end says so.
test('waitText says what a held action waits for, and when only a user can end the wait', () => {
  const w = { resource: 'VirtualMachine/db', status: 'OutOfSync', health: 'Missing' } as const;
  expect(waitText(w)).toBe('waiting for VirtualMachine/db to be in sync and healthy (OutOfSync)');
  expect(waitText({ ...w, sync: 'manual' })).toBe('waiting for VirtualMachine/db to be in sync and healthy (OutOfSync; its sync is manual: sync it to go on)');
  expect(waitText({ ...w, sync: 'disabled' })).toBe(
    'waiting for VirtualMachine/db to be in sync and healthy (OutOfSync; its sync is disabled: proxmops will not bring it in sync)',
  );
  expect(waitText({ ...w, status: 'Synced', health: 'Progressing' })).toBe('waiting for VirtualMachine/db to be healthy (Progressing)');
});
