// STOP-GAP ONLY. A stand-in for `proxmops serve` that speaks the JSON contract of
// docs/api.md from memory, so the browser tests can run before the real daemon is
// on main. It is not a mock of proxmops' logic and no test result may depend on its
// behaviour beyond the contract. Delete it once e2e runs against the real daemon.

import { randomBytes } from 'node:crypto';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { extname, join, normalize } from 'node:path';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;

interface Res {
  kind: string;
  name: string;
  node: string;
  vmid?: number;
  tags: string[];
  status: string;
  health: string;
  action: string;
  reason: string;
  needsReboot: boolean;
  changes: { field: string; from: string; to: string }[];
  owned: boolean;
  syncPolicy: string;
  file: string;
  progress?: { task: string; message: string; percent?: number };
  updatedAt: string;
  spec: Json;
  config: Json | null;
  history: { id: number; event: string; commit: string; time: string; message: string }[];
}

const REVISION = '3f2c1e0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e';
const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.svg': 'image/svg+xml',
};

export interface FakeDaemon {
  url: string;
  setupToken: string;
  close: () => Promise<void>;
}

export async function startFakeDaemon(opts: { distDir: string; extraResources?: number; taskMs?: number }): Promise<FakeDaemon> {
  const setupToken = randomBytes(12).toString('hex');
  const taskMs = opts.taskMs ?? 1500;
  const users = new Map<string, { password: string; role: string; createdAt: string }>();
  const sessions = new Map<string, { username: string; csrf: string }>();
  const tokens: { id: string; name: string; role: string; createdAt: string; lastUsedAt: string | null }[] = [];
  const resources = new Map<string, Res>();
  const sseClients = new Set<ServerResponse>();
  const logClients = new Set<ServerResponse>();
  const logs: Json[] = [];
  let eventId = 0;
  let historyId = 0;
  let logId = 0;
  let lastPass = new Date().toISOString();
  let settings = {
    cluster: { endpoint: '', tokenId: '', tokenSecret: 'not set', insecureSkipVerify: false, fingerprint: '', caFile: '' },
    source: { repoURL: '', path: 'proxmox', revision: 'main', username: '', token: 'not set', sshKey: 'not set', submodules: true },
    reconcile: { interval: '60s', autoSync: true, prune: false, concurrency: 4, dryRun: false },
  };
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };

  const now = () => new Date().toISOString();
  const key = (k: string, n: string) => `${k}/${n}`;

  function log(level: string, msg: string, attrs: Json = {}) {
    const line = { id: ++logId, time: now(), level, msg, attrs };
    logs.push(line);
    if (logs.length > 2000) logs.shift();
    for (const c of logClients) c.write(`id: ${line.id}\nevent: log\ndata: ${JSON.stringify(line)}\n\n`);
  }
  function summary(r: Res): Json {
    const { spec: _s, config: _c, history: _h, ...rest } = r;
    void _s;
    void _c;
    void _h;
    return rest;
  }
  function emit(event: string, data: unknown) {
    const id = ++eventId;
    for (const c of sseClients) c.write(`id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }
  function counts() {
    const c: Record<string, number> = {};
    for (const r of resources.values()) c[r.status] = (c[r.status] ?? 0) + 1;
    return c;
  }
  function record(r: Res, event: string, message: string) {
    r.history.push({ id: ++historyId, event, commit: REVISION, time: now(), message });
  }
  function touch(r: Res) {
    r.updatedAt = now();
    emit('resource', summary(r));
  }

  function add(kind: string, name: string, node: string, vmid: number | undefined, tags: string[], spec: Json) {
    resources.set(key(kind, name), {
      kind,
      name,
      node,
      vmid,
      tags,
      status: 'OutOfSync',
      health: 'Missing',
      action: 'create',
      reason: 'not on the cluster yet',
      needsReboot: false,
      changes: [],
      owned: true,
      syncPolicy: 'auto',
      file: `${kind === 'VirtualMachine' ? 'vms' : kind.toLowerCase() + 's'}/${name}.yaml`,
      updatedAt: now(),
      spec,
      config: null,
      history: [],
    });
  }
  // The examples: what `proxmops demo` declares, give or take.
  add('Iso', 'debian-12-netinst', 'pve1', undefined, [], { url: 'https://example.invalid/debian-12.iso', storage: 'local' });
  add('Template', 'debian-12-cloud', 'pve1', 9000, ['template'], { vmid: 9000, image: 'debian-12-generic-amd64.qcow2', cores: 2, memory: 2048 });
  add('VirtualMachine', 'app-01', 'pve1', 120, ['prod', 'app'], { vmid: 120, fromTemplate: 'debian-12-cloud', cores: 4, memory: 4096, disks: { scsi0: { size: '32G', storage: 'local-lvm' } }, networks: { net0: { bridge: 'vmbr0', model: 'virtio' } } });
  add('VirtualMachine', 'app-02', 'pve2', 121, ['prod', 'app'], { vmid: 121, fromTemplate: 'debian-12-cloud', cores: 4, memory: 4096, disks: { scsi0: { size: '32G', storage: 'local-lvm' } }, networks: { net0: { bridge: 'vmbr0', model: 'virtio' } } });
  add('VirtualMachine', 'db-01', 'pve3', 130, ['prod', 'db'], { vmid: 130, fromTemplate: 'debian-12-cloud', cores: 8, memory: 16384, disks: { scsi0: { size: '100G', storage: 'local-lvm' } }, networks: { net0: { bridge: 'vmbr0', model: 'virtio' } } });
  add('Container', 'dns-01', 'pve2', 200, ['infra'], { vmid: 200, template: 'debian-12-standard', cores: 1, memory: 512 });
  add('Network', 'vmbr1', 'pve1', undefined, ['infra'], { type: 'bridge', cidr: '10.10.0.1/24', autostart: true });
  for (let i = 0; i < (opts.extraResources ?? 0); i++) {
    const name = `load-${String(i).padStart(4, '0')}`;
    add(i % 5 === 0 ? 'Container' : 'VirtualMachine', name, `pve${(i % 3) + 1}`, 1000 + i, [i % 2 ? 'batch' : 'web'], { vmid: 1000 + i, cores: 2, memory: 2048 });
  }
  // An unowned guest holding a declared VMID: a conflict, never touched.
  const legacy: Res = {
    kind: 'VirtualMachine', name: 'legacy-vm', node: 'pve3', vmid: 140, tags: [], status: 'Conflict', health: 'Healthy',
    action: 'none', reason: 'VMID 140 is held by a guest proxmops does not own', needsReboot: false, changes: [], owned: false,
    syncPolicy: 'auto', file: 'vms/legacy-vm.yaml', updatedAt: now(), spec: { vmid: 140, cores: 2 }, config: { cores: 2, name: 'legacy' },
    history: [],
  };
  resources.set(key(legacy.kind, legacy.name), legacy);

  function configFromSpec(spec: Json): Json {
    const cfg: Json = {};
    for (const [k, v] of Object.entries(spec)) {
      if (k === 'disks' || k === 'networks') Object.assign(cfg, Object.fromEntries(Object.entries(v as Json).map(([slot, d]) => [slot, Object.entries(d as Json).map(([a, b]) => `${a}=${b}`).join(',')])));
      else cfg[k] = v;
    }
    return cfg;
  }

  function apply(r: Res) {
    const creating = r.config === null;
    r.status = 'Progressing';
    r.health = 'Progressing';
    r.progress = { task: `UPID:${r.node}:000${r.vmid ?? 0}:qmcreate:`, message: creating ? 'creating' : 'updating configuration', percent: 0 };
    touch(r);
    log('INFO', creating ? 'creating resource' : 'updating resource', { resource: key(r.kind, r.name) });
    const steps = 4;
    for (let i = 1; i <= steps; i++) {
      later((taskMs * i) / steps, () => {
        if (!resources.has(key(r.kind, r.name))) return;
        if (i < steps) {
          r.progress = { ...r.progress!, percent: (100 * i) / steps };
          touch(r);
          return;
        }
        r.config = configFromSpec(r.spec);
        r.status = 'Synced';
        r.health = 'Healthy';
        r.action = 'none';
        r.reason = '';
        r.changes = [];
        delete r.progress;
        record(r, creating ? 'created' : 'applied', creating ? 'created on the cluster' : 'configuration applied');
        touch(r);
        log('INFO', creating ? 'created' : 'applied', { resource: key(r.kind, r.name) });
      });
    }
  }

  function pass() {
    lastPass = now();
    for (const r of resources.values()) if (r.owned && r.status === 'OutOfSync' && settings.reconcile.autoSync) apply(r);
    emit('pass', { revision: REVISION, lastPass, counts: counts(), sourceError: '' });
    log('DEBUG', 'pass done', { resources: resources.size });
  }
  let passTimer: ReturnType<typeof setInterval> | null = null;

  function body(req: IncomingMessage): Promise<Json> {
    return new Promise((resolve) => {
      let s = '';
      req.on('data', (c) => (s += c));
      req.on('end', () => {
        try {
          resolve(s ? (JSON.parse(s) as Json) : {});
        } catch {
          resolve({});
        }
      });
    });
  }
  function send(res: ServerResponse, status: number, data: unknown, headers: Record<string, string> = {}) {
    res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
    res.end(JSON.stringify(data));
  }
  function session(req: IncomingMessage) {
    const m = /(?:^|;\s*)proxmops_session=([^;]+)/.exec(req.headers.cookie ?? '');
    return m ? sessions.get(m[1]) : undefined;
  }
  function serveStatic(req: IncomingMessage, res: ServerResponse) {
    const p = normalize(decodeURIComponent(new URL(req.url!, 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
    let file = join(opts.distDir, p);
    if (!file.startsWith(opts.distDir) || !existsSync(file) || statSync(file).isDirectory()) file = join(opts.distDir, 'index.html');
    res.writeHead(200, { 'Content-Type': MIME[extname(file)] ?? 'application/octet-stream' });
    createReadStream(file).pipe(res);
  }

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url!, 'http://x');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    if (path === '/__stopgap/drift' && method === 'POST') {
      // Stands in for changing a guest through the simulator's API.
      const b = await body(req);
      const r = resources.get(key(String(b.kind), String(b.name)));
      if (!r || !r.config) return send(res, 404, { error: 'no such resource on the cluster' });
      const from = String(r.config.cores);
      r.config.cores = Number(b.cores);
      r.status = 'OutOfSync';
      r.action = 'update';
      r.reason = 'cores differ from the manifest';
      r.changes = [{ field: 'cores', from: String(b.cores), to: String(r.spec.cores) }];
      record(r, 'drifted', `cores: ${from} -> ${b.cores} (changed on the cluster)`);
      touch(r);
      log('WARN', 'drift detected', { resource: key(r.kind, r.name), field: 'cores' });
      return send(res, 200, {});
    }
    if (!path.startsWith('/api/')) return serveStatic(req, res);
    if (path === '/api/v1/setup') {
      if (method === 'GET') return send(res, 200, { needed: users.size === 0 });
      const b = await body(req);
      if (users.size > 0) return send(res, 409, { error: 'setup is already done' });
      if (b.token !== setupToken) return send(res, 403, { error: 'wrong setup token' });
      if (!b.username || String(b.password ?? '').length < 10) return send(res, 400, { error: 'a username and a password of 10 to 1024 characters are needed' });
      users.set(String(b.username), { password: String(b.password), role: 'admin', createdAt: now() });
      log('INFO', 'first administrator created', { user: b.username });
      const id = randomBytes(16).toString('hex');
      const csrf = randomBytes(16).toString('hex');
      sessions.set(id, { username: String(b.username), csrf });
      return send(res, 201, { username: b.username, role: 'admin', csrfToken: csrf }, { 'Set-Cookie': `proxmops_session=${id}; Path=/; HttpOnly; SameSite=Strict` });
    }
    if (path === '/api/v1/login' && method === 'POST') {
      const b = await body(req);
      const u = users.get(String(b.username));
      if (!u || u.password !== b.password) return send(res, 401, { error: 'wrong username or password' });
      const id = randomBytes(16).toString('hex');
      sessions.set(id, { username: String(b.username), csrf: randomBytes(16).toString('hex') });
      return send(res, 200, {}, { 'Set-Cookie': `proxmops_session=${id}; Path=/; HttpOnly; SameSite=Strict` });
    }
    const s = session(req);
    if (!s) return send(res, 401, { error: 'not logged in' });
    const role = users.get(s.username)?.role ?? 'viewer';
    if (method !== 'GET' && req.headers['x-csrf-token'] !== s.csrf) return send(res, 403, { error: 'missing or wrong CSRF token' });
    const admin = () => {
      if (role !== 'admin') {
        send(res, 403, { error: 'administrators only' });
        return false;
      }
      return true;
    };
    if (path === '/api/v1/logout') {
      for (const [id, v] of sessions) if (v === s) sessions.delete(id);
      res.writeHead(204, { 'Set-Cookie': 'proxmops_session=; Path=/; Max-Age=0' });
      return res.end();
    }
    if (path === '/api/v1/me') return send(res, 200, { username: s.username, role, csrfToken: s.csrf });
    if (path === '/api/v1/resources') {
      return send(res, 200, {
        revision: REVISION, revisionMessage: 'vms: add db-01', lastPass, passDurationMs: 412, sourceError: '', counts: counts(),
        resources: [...resources.values()].map(summary),
      });
    }
    const rm = /^\/api\/v1\/resources\/([^/]+)\/([^/]+)(\/sync)?$/.exec(path);
    if (rm) {
      const r = resources.get(key(decodeURIComponent(rm[1]), decodeURIComponent(rm[2])));
      if (!r) return send(res, 404, { error: 'no such resource' });
      if (method === 'GET') {
        return send(res, 200, {
          ...summary(r),
          desired: { apiVersion: 'proxmops.dev/v1', kind: r.kind, metadata: { name: r.name, node: r.node, tags: r.tags }, spec: r.spec },
          observed: r.config ? { config: r.config, status: 'running' } : null,
          history: r.history,
        });
      }
      if (!admin()) return;
      if (rm[3] && method === 'POST') {
        if (!r.owned) return send(res, 409, { error: 'proxmops does not own this resource' });
        apply(r);
        return send(res, 202, { status: `sync of ${r.name} started` });
      }
      if (method === 'DELETE') {
        if (!r.owned) return send(res, 409, { error: `${r.name} is not owned by proxmops: it was not deleted` });
        resources.delete(key(r.kind, r.name));
        emit('deleted', { kind: r.kind, name: r.name });
        log('INFO', 'deleted', { resource: key(r.kind, r.name), by: s.username });
        return send(res, 202, { status: `deleting ${r.name}` });
      }
    }
    if (path === '/api/v1/events') {
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
      res.write(': hello\n\n');
      sseClients.add(res);
      req.on('close', () => sseClients.delete(res));
      return;
    }
    if (path === '/api/v1/logs/stream') {
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
      res.write(': hello\n\n');
      logClients.add(res);
      req.on('close', () => logClients.delete(res));
      return;
    }
    if (path === '/api/v1/logs') return send(res, 200, { lines: logs.slice(-Number(url.searchParams.get('limit') ?? 200)) });
    if (path === '/api/v1/plan') {
      const rev = url.searchParams.get('revision') ?? '';
      if (rev === 'no-such-branch') return send(res, 404, { error: 'revision no-such-branch not found in the repository' });
      const actions = [...resources.values()].map((r) => ({
        kind: r.kind, name: r.name, node: r.node, vmid: r.vmid, action: r.owned ? r.action : 'none', reason: r.reason,
        changes: r.changes, needsReboot: r.needsReboot, blockedBy: '', conflict: r.status === 'Conflict',
      }));
      if (rev) actions.push({ kind: 'VirtualMachine', name: 'app-03', node: 'pve3', vmid: 122, action: 'create', reason: 'new manifest vms/app-03.yaml', changes: [], needsReboot: false, blockedBy: 'Template/debian-12-cloud', conflict: false });
      const summaryCounts: Record<string, number> = { create: 0, update: 0, reboot: 0, delete: 0, conflict: 0, none: 0 };
      for (const a of actions) summaryCounts[a.conflict ? 'conflict' : a.action]++;
      return send(res, 200, { revision: rev ? 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678' : REVISION, summary: summaryCounts, actions });
    }
    if (path === '/api/v1/sync' || path === '/api/v1/refresh') {
      if (!admin()) return;
      later(10, pass);
      return send(res, 202, { status: 'a pass was started' });
    }
    if (path === '/api/v1/settings') {
      if (!admin()) return;
      if (method === 'GET') return send(res, 200, settings);
      const b = (await body(req)) as typeof settings;
      const keep = (section: 'cluster' | 'source', field: string, cur: string) => {
        const v = (b[section] as Json | undefined)?.[field];
        return v === undefined || v === 'set' ? cur : v === '' ? 'not set' : 'set';
      };
      settings = {
        cluster: { ...settings.cluster, ...b.cluster, tokenSecret: keep('cluster', 'tokenSecret', settings.cluster.tokenSecret) },
        source: { ...settings.source, ...b.source, token: keep('source', 'token', settings.source.token), sshKey: keep('source', 'sshKey', settings.source.sshKey) },
        reconcile: { ...settings.reconcile, ...b.reconcile },
      };
      log('INFO', 'settings saved', { by: s.username });
      return send(res, 200, settings);
    }
    if (path === '/api/v1/settings/test') {
      if (!admin()) return;
      const b = (await body(req)) as typeof settings;
      const endpoint = b.cluster?.endpoint ?? settings.cluster.endpoint;
      const checks = [
        { name: 'cluster: reach the API', ok: Boolean(endpoint), message: endpoint ? `${endpoint} answered` : 'no endpoint set' },
        { name: 'cluster: version', ok: Boolean(endpoint), message: endpoint ? 'Proxmox VE 9.1.3' : 'skipped' },
        { name: 'source: clone', ok: Boolean(b.source?.repoURL ?? settings.source.repoURL), message: 'revision main at 3f2c1e0a' },
      ];
      return send(res, 200, { ok: checks.every((c) => c.ok), checks });
    }
    if (path === '/api/v1/users') {
      if (!admin()) return;
      if (method === 'GET') return send(res, 200, { users: [...users.entries()].map(([username, u]) => ({ username, role: u.role, createdAt: u.createdAt })) });
      const b = await body(req);
      if (users.has(String(b.username))) return send(res, 409, { error: 'that user exists already' });
      users.set(String(b.username), { password: String(b.password), role: String(b.role || 'viewer'), createdAt: now() });
      return send(res, 201, {});
    }
    const um = /^\/api\/v1\/users\/([^/]+)$/.exec(path);
    if (um && method === 'DELETE') {
      if (!admin()) return;
      users.delete(decodeURIComponent(um[1]));
      return send(res, 200, {});
    }
    if (path === '/api/v1/tokens') {
      if (!admin()) return;
      if (method === 'GET') return send(res, 200, { tokens });
      const b = await body(req);
      const t = { id: String(tokens.length + 1), name: String(b.name), role: String(b.role || 'viewer'), createdAt: now(), lastUsedAt: null };
      tokens.push(t);
      return send(res, 201, { ...t, token: `pxm_${randomBytes(20).toString('hex')}` });
    }
    const tm = /^\/api\/v1\/tokens\/([^/]+)$/.exec(path);
    if (tm && method === 'DELETE') {
      if (!admin()) return;
      const i = tokens.findIndex((t) => t.id === decodeURIComponent(tm[1]));
      if (i >= 0) tokens.splice(i, 1);
      return send(res, 200, {});
    }
    send(res, 404, { error: `no route ${method} ${path}` });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  log('INFO', `setup token: ${setupToken}`);
  passTimer = setInterval(pass, 2000);
  const keepAlive = setInterval(() => {
    for (const c of [...sseClients, ...logClients]) c.write(': keep-alive\n\n');
  }, 15000);
  return {
    url: `http://127.0.0.1:${port}`,
    setupToken,
    close: async () => {
      if (passTimer) clearInterval(passTimer);
      clearInterval(keepAlive);
      for (const t of timers) clearTimeout(t);
      for (const c of [...sseClients, ...logClients]) c.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
