import { expect, test } from 'vitest';
import { align, decodeSSHKeys, shortKey, yaml } from './align';

const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAII9/UjT7L8VL54itcaiO2UWYIARFcav9TSUrKQks9xgm alice@laptop';
const desired = {
  apiVersion: 'proxmops.dev/v1',
  kind: 'VirtualMachine',
  metadata: { name: 'app-01', node: 'pve1', tags: ['prod', 'app'] },
  spec: {
    vmid: 120,
    cores: 4,
    memory: 2048,
    image: { source: 'http://127.0.0.1/debian.qcow2' },
    disks: [{ storage: 'local-lvm', size: '20G' }, { storage: 'local-lvm', size: '8G' }],
    net: [{ bridge: 'vmbr0' }, { slot: 'net3', bridge: 'vmbr1', tag: 20 }],
    cloudInit: { user: 'debian', sshKeys: [KEY], ip: 'dhcp' },
    state: 'running',
  },
};
const observed = {
  config: {
    name: 'app-01',
    cores: 2,
    memory: '2048',
    boot: 'order=virtio0;net0',
    virtio0: 'local-lvm:vm-120-disk-0,size=20G',
    scsi1: 'local-lvm:vm-120-disk-1,size=8G',
    ide2: 'local-lvm:vm-120-cloudinit,media=cdrom',
    net0: 'virtio=BC:24:11:00:00:01,bridge=vmbr0',
    net3: 'virtio=BC:24:11:00:00:02,bridge=vmbr1,tag=20',
    ciuser: 'debian',
    sshkeys: encodeURIComponent(`${KEY}\nssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC bob@desk\n`),
    ipconfig0: 'ip=dhcp',
    tags: 'app;managed-by-proxmops;prod',
    digest: 'abc',
  },
  pending: { cores: '3' },
  status: 'stopped',
  node: 'pve1',
  vmid: 120,
};
const changes = [
  { field: 'cores', path: 'spec.cores', from: '2', to: '4' },
  { field: 'sshkeys', path: 'spec.cloudInit.sshKeys', from: '2 keys', to: '1 key' },
  { field: 'state', from: 'stopped', to: 'running' },
];

const row = (rows: ReturnType<typeof align>, field: string) => rows.find((r) => r.field === field);

test('desired and observed line up on the Proxmox key, changed rows marked', () => {
  const rows = align('VirtualMachine', desired, observed, changes);
  expect(row(rows, 'cores')).toMatchObject({ path: 'spec.cores', desired: ['4'], observed: ['2', 'pending: 3'], changed: true, group: 'general' });
  expect(row(rows, 'memory')).toMatchObject({ desired: ['2048'], observed: ['2048'], changed: false });
  expect(row(rows, 'state')).toMatchObject({ path: 'spec.state', desired: ['running'], observed: ['stopped'], changed: true });
  expect(row(rows, 'vmid')).toMatchObject({ desired: ['120'], observed: ['120'], changed: false });
  expect(rows.filter((r) => r.changed).map((r) => r.field).sort()).toEqual(['cores', 'sshkeys', 'state']);
  expect(rows.some((r) => r.field === 'digest')).toBe(false);
});

test('disks and NICs pair by slot: a slotless first disk is the boot disk, NICs by slot or order', () => {
  const rows = align('VirtualMachine', desired, observed, []);
  expect(row(rows, 'virtio0')).toMatchObject({ path: 'spec.disks[0]', group: 'disks', desired: ['storage=local-lvm,size=20G'], observed: ['local-lvm:vm-120-disk-0,size=20G'] });
  // The engine skips a slot the guest uses for a disk the manifest does not declare.
  expect(row(rows, 'scsi2')).toMatchObject({ path: 'spec.disks[1]', desired: ['storage=local-lvm,size=8G'], observed: null });
  expect(row(rows, 'scsi1')).toMatchObject({ group: 'not in the manifest', desired: null });
  expect(row(rows, 'net0')).toMatchObject({ path: 'spec.net[0]', group: 'network', desired: ['bridge=vmbr0'] });
  expect(row(rows, 'net3')).toMatchObject({ path: 'spec.net[1]', desired: ['bridge=vmbr1,tag=20'], observed: ['virtio=BC:24:11:00:00:02,bridge=vmbr1,tag=20'] });
  // What only the cluster has is listed apart, never against a manifest field.
  expect(row(rows, 'ide2')).toMatchObject({ group: 'not in the manifest', desired: null });
  expect(row(rows, 'image')).toMatchObject({ group: 'manifest only', observed: null });
  const groups = [...new Set(rows.map((r) => r.group))];
  expect(groups).toEqual(['general', 'disks', 'network', 'cloud-init', 'manifest only', 'not in the manifest']);
});

test('cloud-init fields are decoded: sshkeys URL-decoded into one key a line, ip as ipconfig0', () => {
  const rows = align('VirtualMachine', desired, observed, changes);
  expect(row(rows, 'sshkeys')).toMatchObject({ group: 'cloud-init', desired: [KEY], observed: [KEY, 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC bob@desk'], changed: true });
  expect(row(rows, 'ipconfig0')).toMatchObject({ path: 'spec.cloudInit.ip', desired: ['ip=dhcp'], observed: ['ip=dhcp'] });
  expect(row(rows, 'ciuser')).toMatchObject({ desired: ['debian'], observed: ['debian'] });
  expect(decodeSSHKeys('ssh-ed25519%20AAAA%20a%40b%0Assh-rsa%20BBBB')).toEqual(['ssh-ed25519 AAAA a@b', 'ssh-rsa BBBB']);
  expect(shortKey(KEY)).toBe('ssh-ed25519 AAAAC3NzaC1l…UrKQks9xgm alice@laptop'.replace('UrKQks9xgm', 'KQks9xgm'));
});

test('a change no field shows still gets its row; one side missing leaves the other', () => {
  const rows = align('VirtualMachine', desired, null, [{ field: 'agent', from: '', to: '1' }]);
  expect(row(rows, 'agent')).toMatchObject({ desired: ['1'], observed: null, changed: true });
  expect(row(rows, 'cores')).toMatchObject({ desired: ['4'], observed: null });
  const onlyCluster = align('VirtualMachine', null, observed, null);
  expect(row(onlyCluster, 'cores')).toMatchObject({ group: 'general', desired: null, observed: ['2', 'pending: 3'] });
  expect(row(onlyCluster, 'virtio0')?.group).toBe('disks');
});

test('a container lines up hostname, rootfs and mount points', () => {
  const rows = align(
    'Container',
    { metadata: { name: 'dns-01' }, spec: { vmid: 300, rootfs: { storage: 'local-lvm', size: '8G' }, mountpoints: [{ storage: 'local-lvm', size: '4G', path: '/srv' }], nameserver: '1.1.1.1' } },
    { config: { hostname: 'dns-01', rootfs: 'local-lvm:subvol-300-disk-0,size=8G', mp0: 'local-lvm:subvol-300-disk-1,mp=/srv,size=4G', nameserver: '9.9.9.9' }, status: 'running', node: 'pve1', vmid: 300 },
    [{ field: 'nameserver', from: '9.9.9.9', to: '1.1.1.1' }],
  );
  expect(row(rows, 'hostname')).toMatchObject({ desired: ['dns-01'], observed: ['dns-01'] });
  expect(row(rows, 'rootfs')).toMatchObject({ group: 'disks', desired: ['storage=local-lvm,size=8G'] });
  expect(row(rows, 'mp0')).toMatchObject({ path: 'spec.mountpoints[0]', observed: ['local-lvm:subvol-300-disk-1,mp=/srv,size=4G'] });
  expect(row(rows, 'nameserver')).toMatchObject({ changed: true, desired: ['1.1.1.1'], observed: ['9.9.9.9'] });
});

test('the live config is written as YAML, quoting what YAML would misread', () => {
  expect(yaml({ cores: 2, name: 'app-01', onboot: '1', description: 'a: b\nc', net0: 'virtio=BC:24,bridge=vmbr0', list: ['a', 'b'], nested: { x: 'yes' } })).toBe(
    'cores: 2\nname: app-01\nonboot: "1"\ndescription: "a: b\\nc"\nnet0: virtio=BC:24,bridge=vmbr0\nlist:\n  - a\n  - b\nnested:\n  x: "yes"\n',
  );
});
