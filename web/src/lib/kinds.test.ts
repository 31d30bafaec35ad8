import { expect, test } from 'vitest';
import { EXPORT_KINDS, GUEST_KINDS, isGuest, takesSnapshots } from './kinds';

test('the kind facts come from the generated kind table', () => {
  expect(GUEST_KINDS).toEqual(['Template', 'VirtualMachine', 'Container']);
  expect(EXPORT_KINDS).toEqual(['Template', 'VirtualMachine', 'Container', 'FirewallAlias', 'FirewallIPSet', 'FirewallGroup', 'ClusterFirewall', 'Storage', 'SdnZone', 'SdnVnet', 'Network', 'Pool', 'BackupJob', 'HARule']);
  expect(isGuest('Container')).toBe(true);
  expect(isGuest('Iso')).toBe(false);
  expect(isGuest('NoSuchKind')).toBe(false);
  expect(takesSnapshots('VirtualMachine')).toBe(true);
  expect(takesSnapshots('Template')).toBe(false);
});
