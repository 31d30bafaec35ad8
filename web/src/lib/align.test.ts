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

// Non-guest kinds, with the shapes `proxmops demo` serves (GET /api/v1/resources/{kind}/{name}).
const SUM = 'c685b85cf9f248633ba3cd2b9f9e781fa03225587e0c332aef2063f6877a1f0622f56d44cf0690087b0ca36883147ecb5593e3da6f965968402cdbdf12f6dd74';
const noEmptyClusterSide = (rows: ReturnType<typeof align>, except: string[] = []) =>
  rows.filter((r) => r.desired !== null && r.observed === null && r.group !== 'manifest only' && !except.includes(r.field)).map((r) => r.field);

test('an Iso lines up source, storage and checksum in the engine form; equal values are not marked', () => {
  const des = {
    kind: 'Iso',
    metadata: { name: 'debian-12', node: 'pve1' },
    spec: { source: 'https://cdimage.debian.org/debian-12.8.0-amd64-netinst.iso', node: 'pve1', storage: 'local', checksum: { algo: 'SHA512', value: SUM.toUpperCase() } },
  };
  const obs = {
    volid: 'local:iso/debian-12.8.0-amd64-netinst.iso',
    size: 65536,
    node: 'pve1',
    storage: 'local',
    filename: 'debian-12.8.0-amd64-netinst.iso',
    source: 'https://cdimage.debian.org/debian-12.8.0-amd64-netinst.iso',
    checksum: `sha512:${SUM}`,
    downloaded_by: 'UPID:pve1:00001234:00005678:65000000:download:debian-12.8.0-amd64-netinst.iso:root@pam!proxmops:',
  };
  const rows = align('Iso', des, obs, []);
  expect(noEmptyClusterSide(rows)).toEqual([]);
  expect(row(rows, 'checksum')).toMatchObject({ path: 'spec.checksum', desired: [`sha512:${SUM}`], observed: [`sha512:${SUM}`], changed: false });
  expect(row(rows, 'source')).toMatchObject({ desired: [obs.source], observed: [obs.source], changed: false });
  expect(row(rows, 'storage')).toMatchObject({ desired: ['local'], observed: ['local'] });
  expect(row(rows, 'node')).toMatchObject({ desired: ['pve1'], observed: ['pve1'] });
  // The resource's name is the manifest's own; what only the cluster says is listed apart.
  expect(row(rows, 'name')).toMatchObject({ group: 'manifest only', observed: null });
  expect(row(rows, 'volid')).toMatchObject({ group: 'not in the manifest', desired: null });
  expect(rows.some((r) => r.changed)).toBe(false);
  // A changed source is the engine's change, on its row.
  const changed = align('Iso', des, { ...obs, source: 'https://old/x.iso' }, [{ field: 'source', from: 'https://old/x.iso', to: obs.source }]);
  expect(row(changed, 'source')).toMatchObject({ observed: ['https://old/x.iso'], changed: true });
  // Without a record of the download the engine does not know the checksum: no cluster side.
  const { checksum: _c, ...unrecorded } = obs;
  expect(noEmptyClusterSide(align('Iso', des, unrecorded, []))).toEqual(['checksum']);
});

test('a ContainerTemplate lines up filename, source and checksum; an appliance its file name', () => {
  const url = 'https://images.linuxcontainers.org/images/alpine/3.20/amd64/default/20241201_13%3A00/rootfs.tar.xz';
  const des = {
    kind: 'ContainerTemplate',
    metadata: { name: 'alpine-3-20', node: 'pve2' },
    spec: { source: url, filename: 'alpine-3.20-default_20241201_amd64.tar.xz', storage: 'nfs-shared', checksum: { algo: 'sha256', value: 'abc123' } },
  };
  const obs = {
    volid: 'nfs-shared:vztmpl/alpine-3.20-default_20241201_amd64.tar.xz',
    size: 57344,
    node: 'pve2',
    storage: 'nfs-shared',
    filename: 'alpine-3.20-default_20241201_amd64.tar.xz',
    source: url,
    checksum: 'sha256:abc123',
    downloaded_by: 'UPID:pve2:…',
  };
  const rows = align('ContainerTemplate', des, obs, []);
  expect(noEmptyClusterSide(rows)).toEqual([]);
  for (const f of ['source', 'filename', 'storage', 'checksum', 'node']) expect(row(rows, f)).toMatchObject({ changed: false, group: 'general' });
  expect(row(rows, 'checksum')).toMatchObject({ desired: ['sha256:abc123'], observed: ['sha256:abc123'] });
  const app = align(
    'ContainerTemplate',
    { kind: 'ContainerTemplate', metadata: { name: 'debian-12-standard' }, spec: { node: 'pve1', appliance: 'debian-12-standard_12.7-1_amd64.tar.zst', storage: 'local' } },
    { volid: 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst', size: 1, node: 'pve1', storage: 'local', filename: 'debian-12-standard_12.7-1_amd64.tar.zst', appliance: 'debian-12-standard_12.7-1_amd64.tar.zst' },
    [],
  );
  expect(noEmptyClusterSide(app)).toEqual([]);
  expect(row(app, 'appliance')).toMatchObject({ observed: ['debian-12-standard_12.7-1_amd64.tar.zst'], changed: false });
});

// pvefields.FieldPaths("Network"), as the detail carries it.
const NET_PATHS = {
  bridge_ports: 'spec.ports',
  slaves: 'spec.ports',
  bridge_vlan_aware: 'spec.vlanAware',
  bridge_vids: 'spec.vlanIds',
  bond_mode: 'spec.bondMode',
  bond_xmit_hash_policy: 'spec.hashPolicy',
  'bond-primary': 'spec.bondPrimary',
  'vlan-id': 'spec.vlanId',
  'vlan-raw-device': 'spec.vlanRawDevice',
  cidr: 'spec.cidr',
  gateway: 'spec.gateway',
  mtu: 'spec.mtu',
  autostart: 'spec.autostart',
  type: 'spec.type',
  iface: 'spec.iface',
  comments: 'spec.comments',
};

test("a Network's interface keys land on the manifest rows fieldPaths names, ports as the engine writes them", () => {
  const des = {
    kind: 'Network',
    metadata: { name: 'pve1-vmbr1', node: 'pve1' },
    spec: { type: 'bridge', iface: 'vmbr1', ports: ['eno2'], vlanAware: true, vlanIds: '2-4094', mtu: 1500, comments: 'guest VLAN trunk' },
  };
  const obs = {
    interface: {
      active: '1',
      autostart: '1',
      bridge_fd: '0',
      bridge_ports: 'eno2',
      bridge_stp: 'off',
      bridge_vids: '2-4094',
      bridge_vlan_aware: '1',
      comments: 'guest VLAN trunk (managed-by-proxmops)',
      families: 'inet',
      iface: 'vmbr1',
      method: 'manual',
      mtu: '1500',
      priority: '5',
      type: 'bridge',
    },
    node: 'pve1',
  };
  const rows = align('Network', des, obs, [], NET_PATHS);
  expect(noEmptyClusterSide(rows)).toEqual([]);
  expect(rows.some((r) => r.field === 'interface')).toBe(false);
  expect(row(rows, 'bridge_ports')).toMatchObject({ path: 'spec.ports', desired: ['eno2'], observed: ['eno2'], changed: false, group: 'general' });
  expect(row(rows, 'bridge_vlan_aware')).toMatchObject({ path: 'spec.vlanAware', desired: ['1'], observed: ['1'] });
  expect(row(rows, 'bridge_vids')).toMatchObject({ path: 'spec.vlanIds', desired: ['2-4094'], observed: ['2-4094'] });
  expect(row(rows, 'mtu')).toMatchObject({ desired: ['1500'], observed: ['1500'] });
  expect(row(rows, 'iface')).toMatchObject({ desired: ['vmbr1'], observed: ['vmbr1'] });
  expect(row(rows, 'node')).toMatchObject({ desired: ['pve1'], observed: ['pve1'] });
  expect(row(rows, 'bridge_stp')).toMatchObject({ group: 'not in the manifest', desired: null, observed: ['off'] });
  expect(rows.some((r) => r.changed)).toBe(false);
  // Two ports, as the engine joins them; its change marks the row it names.
  const two = align('Network', { ...des, spec: { ...des.spec, ports: ['eno2', 'eno3'] } }, obs, [{ field: 'bridge_ports', path: 'spec.ports', from: 'eno2', to: 'eno2 eno3' }], NET_PATHS);
  expect(row(two, 'bridge_ports')).toMatchObject({ desired: ['eno2 eno3'], observed: ['eno2'], changed: true });
  expect(two.filter((r) => r.changed).length).toBe(1);
  // A bond's ports are its slaves.
  const bond = align(
    'Network',
    { kind: 'Network', metadata: { name: 'pve3-bond0', node: 'pve3' }, spec: { type: 'bond', iface: 'bond0', ports: ['eno1', 'eno2'], bondMode: '802.3ad' } },
    { interface: { type: 'bond', iface: 'bond0', slaves: 'eno1 eno2', bond_mode: '802.3ad' }, node: 'pve3' },
    [],
    NET_PATHS,
  );
  expect(noEmptyClusterSide(bond)).toEqual([]);
  expect(row(bond, 'slaves')).toMatchObject({ path: 'spec.ports', desired: ['eno1 eno2'], observed: ['eno1 eno2'] });
  expect(row(bond, 'bond_mode')).toMatchObject({ path: 'spec.bondMode', desired: ['802.3ad'], observed: ['802.3ad'] });
});

test("SDN zones and vnets line up their config keys on the manifest's fields", () => {
  const zonePaths = { type: 'spec.type', bridge: 'spec.bridge', 'vlan-protocol': 'spec.vlanProtocol', peers: 'spec.peers', dhcp: 'spec.dhcp', ipam: 'spec.ipam', zone: 'metadata.name' };
  const zone = align(
    'SdnZone',
    { kind: 'SdnZone', metadata: { name: 'lab' }, spec: { type: 'simple', dhcp: 'dnsmasq', ipam: 'pve' } },
    { config: { zone: 'lab', type: 'simple', dhcp: 'dnsmasq', ipam: 'pve', digest: 'd' }, state: '' },
    [],
    zonePaths,
  );
  expect(noEmptyClusterSide(zone)).toEqual([]);
  expect(row(zone, 'zone')).toMatchObject({ path: 'metadata.name', desired: ['lab'], observed: ['lab'] });
  expect(row(zone, 'dhcp')).toMatchObject({ desired: ['dnsmasq'], observed: ['dnsmasq'], changed: false });
  const qinq = align(
    'SdnZone',
    { kind: 'SdnZone', metadata: { name: 'q' }, spec: { type: 'vxlan', peers: ['10.0.0.1', '10.0.0.2'], vlanProtocol: '802.1ad' } },
    { config: { zone: 'q', type: 'vxlan', peers: '10.0.0.1,10.0.0.2', 'vlan-protocol': '802.1ad' }, state: '' },
    [],
    zonePaths,
  );
  expect(noEmptyClusterSide(qinq)).toEqual([]);
  expect(row(qinq, 'peers')).toMatchObject({ desired: ['10.0.0.1,10.0.0.2'], observed: ['10.0.0.1,10.0.0.2'] });
  expect(row(qinq, 'vlan-protocol')).toMatchObject({ path: 'spec.vlanProtocol', desired: ['802.1ad'], observed: ['802.1ad'] });
  const vnet = align(
    'SdnVnet',
    { kind: 'SdnVnet', metadata: { name: 'iot' }, spec: { zone: 'vlans', tag: 30, alias: 'IoT VLAN', isolatePorts: true } },
    { config: { vnet: 'iot', zone: 'vlans', tag: 30, alias: 'IoT VLAN (managed-by-proxmops)', 'isolate-ports': 1, type: 'vnet', digest: 'd' }, state: '' },
    [],
    { zone: 'spec.zone', alias: 'spec.alias', tag: 'spec.tag', vlanaware: 'spec.vlanAware', 'isolate-ports': 'spec.isolatePorts', vnet: 'metadata.name' },
  );
  expect(noEmptyClusterSide(vnet)).toEqual([]);
  expect(row(vnet, 'isolate-ports')).toMatchObject({ path: 'spec.isolatePorts', desired: ['1'], observed: ['1'] });
  expect(row(vnet, 'vnet')).toMatchObject({ desired: ['iot'], observed: ['iot'] });
  expect(row(vnet, 'tag')).toMatchObject({ desired: ['30'], observed: ['30'], changed: false });
});

test('a pending change lands on its own field row, its state kept beside it', () => {
  const rows = align('VirtualMachine', desired, observed, [{ field: 'memory', path: 'spec.memory', from: '2048', to: '4096', pending: true }]);
  expect(row(rows, 'memory')).toMatchObject({ changed: true, change: { pending: true } });
  expect(rows.filter((r) => r.field.startsWith('memory'))).toHaveLength(1);
});

test("a cluster-wide collection's item, kept under its noun, lines up on the manifest's fields; its rules one a line", () => {
  const group = {
    apiVersion: 'proxmops.dev/v1',
    kind: 'FirewallGroup',
    metadata: { name: 'webserver' },
    spec: {
      comment: 'public web servers',
      rules: [
        { type: 'in', action: 'ACCEPT', proto: 'tcp', dport: '80,443' },
        { type: 'in', action: 'ACCEPT', macro: 'SSH', source: '+admins' },
      ],
    },
  };
  const observed = {
    'security group': { group: 'webserver', comment: 'public web servers (managed-by-proxmops)', digest: 'abc' },
    // The cluster's list in the manifest's form, as the engine sends it beside the item.
    rules: [
      { type: 'in', action: 'ACCEPT', proto: 'tcp', dport: '80,443' },
      { type: 'in', action: 'ACCEPT', macro: 'SSH', source: '+admins', enable: false },
    ],
  };
  const rows = align('FirewallGroup', group, observed, [{ field: 'rules[1]', path: 'spec.rules[1]', from: 'disabled: in SSH(ACCEPT) -source +admins', to: 'in SSH(ACCEPT) -source +admins' }]);
  expect(row(rows, 'comment')).toMatchObject({ desired: ['public web servers'], observed: ['public web servers (managed-by-proxmops)'] });
  expect(row(rows, 'security group')).toBeUndefined();
  expect(row(rows, 'group')).toMatchObject({ group: 'not in the manifest', observed: ['webserver'] });
  expect(row(rows, 'rules')).toMatchObject({
    desired: ['type=in,action=ACCEPT,proto=tcp,dport=80,443', 'type=in,action=ACCEPT,macro=SSH,source=+admins'],
    observed: ['type=in,action=ACCEPT,proto=tcp,dport=80,443', 'type=in,action=ACCEPT,macro=SSH,source=+admins,enable=0'],
  });
  expect(row(rows, 'rules[1]')).toMatchObject({ changed: true, observed: ['disabled: in SSH(ACCEPT) -source +admins'] });
  // The cluster firewall's options are its item too.
  const fw = align('ClusterFirewall', { kind: 'ClusterFirewall', metadata: { name: 'cluster' }, spec: { policyIn: 'DROP' } }, { options: { policy_in: 'DROP', enable: 0 } }, null, { policy_in: 'spec.policyIn' });
  expect(row(fw, 'policy_in')).toMatchObject({ desired: ['DROP'], observed: ['DROP'] });
});
