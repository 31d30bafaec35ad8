import { expect, test } from 'vitest';
import { changeLabel } from './format';

// A change's state is data beside its field; the label says it the way the CLI prints it.
test('changeLabel names a pending or held change as the CLI does', () => {
  expect(changeLabel({ field: 'cores', from: '2', to: '4' })).toBe('cores');
  expect(changeLabel({ field: 'memory', from: '2048', to: '4096', pending: true })).toBe('memory (pending)');
  expect(changeLabel({ field: 'scsi0.format', from: 'raw', to: 'qcow2', hold: 'creation-only' })).toBe('scsi0.format (creation-only)');
  expect(changeLabel({ field: 'scsi0.size', from: '3G', to: '1G', hold: 'grown since adoption' })).toBe('scsi0.size (grown since adoption)');
});
