// Starts what the browser tests run against: `proxmops sim` (the simulated cluster)
// and `proxmops serve` (the daemon with the UI embedded), both built from this
// checkout, plus a loopback file server standing in for the image download sites of
// the example repository, whose URLs are rewritten to it. Nothing leaves 127.0.0.1.

import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, createWriteStream, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BackendInfo } from './backend';

export interface RunningBackend {
  info: BackendInfo;
  close: () => Promise<void>;
}

const TOKEN_ID = 'root@pam!proxmops';

// A qcow2 header (magic, version 3, 2 GiB virtual size) padded to 64 KiB: the
// simulator checks downloaded images the way Proxmox does with qemu-img.
function imageBlob(): Buffer {
  const b = Buffer.alloc(64 * 1024);
  b.write('QFI\xfb', 0, 'latin1');
  b.writeUInt32BE(3, 4);
  b.writeBigUInt64BE(2n * 1024n * 1024n * 1024n, 24);
  return b;
}

function listFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? listFiles(p) : [p];
  });
}

// exampleRepo copies examples/ into a Git repository whose download URLs point at
// the loopback file server, with checksums of what that server sends.
function exampleRepo(repoRoot: string, dir: string, filesURL: string, sha256: string): void {
  cpSync(join(repoRoot, 'examples'), dir, { recursive: true });
  for (const file of listFiles(dir).filter((f) => /\.ya?ml$/.test(f))) {
    const text = readFileSync(file, 'utf8')
      .replace(/https?:\/\/[^/\s"']+\//g, `${filesURL}/`)
      .replace(/(algo:\s*sha256\s*\n\s*value:\s*)[0-9a-f]{64}/g, `$1${sha256}`);
    const stray = /https?:\/\/(?!127\.0\.0\.1[:/])[^\s"']+/.exec(text);
    if (stray) throw new Error(`${file} still names ${stray[0]}: the tests must reach only loopback addresses`);
    writeFileSync(file, text);
  }
  newRepo(dir, 'examples for the browser tests');
}

const E2E_AUTHOR = { name: 'proxmops e2e', email: 'e2e@proxmops.invalid' };

// gitIn runs git in dir, committing as author without signing, and returns
// what it printed, trimmed.
export function gitIn(dir: string, author = E2E_AUTHOR): (...args: string[]) => string {
  return (...args) =>
    execFileSync('git', ['-c', `user.name=${author.name}`, '-c', `user.email=${author.email}`, '-c', 'commit.gpgsign=false', ...args], { cwd: dir, stdio: 'pipe' })
      .toString()
      .trim();
}

// newRepo makes dir, with what it holds, a Git repository of one commit on main.
export function newRepo(dir: string, message: string): void {
  const git = gitIn(dir);
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', message);
}

// planBranch adds one VM on a branch, as a pull request would.
function addPlanBranch(dir: string, branch: string, name: string): void {
  const git = gitIn(dir);
  git('checkout', '-q', '-b', branch);
  const base = readFileSync(join(dir, 'vms', 'app-01.yaml'), 'utf8');
  writeFileSync(join(dir, 'vms', `${name}.yaml`), base.replace(/name: app-01/, `name: ${name}`).replace(/vmid: 120/, 'vmid: 124'));
  git('add', '-A');
  git('commit', '-q', '-m', `vms: add ${name}`);
  git('checkout', '-q', 'main');
}

// buildProxmops builds this checkout's cmd/proxmops into dir and returns its path.
export function buildProxmops(repoRoot: string, dir: string): string {
  const bin = join(dir, 'proxmops');
  execFileSync('go', ['build', '-o', bin, './cmd/proxmops'], { cwd: repoRoot, stdio: 'pipe', env: { ...process.env, CGO_ENABLED: '0' } });
  return bin;
}

// The demo's banner up to the admin's password: the UI's address, then the password.
const DEMO_BANNER = /UI:\s+(\S+)\n\s+username:\s+admin\n\s+password:\s+(\S+)/;

export interface RunningDemo {
  url: string;
  admin: { username: string; password: string };
  // The demo's own directory (it keeps its simulator token's secret in sim-token).
  demoDir: string;
  // The banner's match, for a test that reads more of it than the address and password.
  banner: RegExpMatchArray;
  close: () => Promise<void>;
}

// startDemo builds proxmops from this checkout and runs `proxmops demo` with args
// added (instant tasks, a 2 s interval, no guest SSH port), in a temporary
// directory named after the test file, and resolves once the demo printed its
// banner; `banner` may match more of it, its first two groups still the UI's
// address and the password. On failure it stops what it started.
export async function startDemo(repoRoot: string, name: string, args: string[] = [], banner = DEMO_BANNER): Promise<RunningDemo> {
  const dir = mkdtempSync(join(tmpdir(), `proxmops-e2e-${name}-`));
  let demo: ChildProcess | undefined;
  const close = async () => {
    await stop(demo);
    if (!process.env.PROXMOPS_E2E_KEEP) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const bin = buildProxmops(repoRoot, dir);
    const port = await freePort();
    const demoDir = join(dir, 'demo');
    demo = startProcess(
      bin,
      ['demo', ...args, '--addr', `127.0.0.1:${port}`, '--dir', demoDir, '--task-speed', '0', '--interval', '2s', '--guest-ssh-port', '0'],
      join(dir, 'demo.log'),
    );
    const m = await waitForLine(demo, banner, 'the demo banner', 120_000);
    return { url: m[1], admin: { username: 'admin', password: m[2] }, demoDir, banner: m, close };
  } catch (err) {
    await close();
    throw err;
  }
}

export function startProcess(bin: string, args: string[], logFile: string, env?: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  const log = createWriteStream(logFile);
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  return child;
}

// waitForLine resolves with the first stdout match of `re`, or fails when the process
// exits or takes too long.
export function waitForLine(child: ChildProcess, re: RegExp, what: string, timeoutMs = 30_000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs);
    const onData = (d: Buffer) => {
      buf += d.toString();
      const m = re.exec(buf);
      if (m) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        resolve(m);
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what}: the process exited with ${code}`));
    });
  });
}

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export async function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

// simRequest calls the simulator's API as a script would (form-encoded, API token
// unless other credentials are given).
export function simRequest(
  info: Pick<BackendInfo, 'sim'>,
  method: string,
  path: string,
  form: Record<string, string> = {},
  auth: Record<string, string> = { Authorization: info.sim.authorization },
): Promise<{ status: number; body: string }> {
  const url = new URL(info.sim.apiURL + path);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) throw new Error(`refusing to call ${url.host}: not loopback`);
  const body = new URLSearchParams(form).toString();
  const req = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const r = req(
      url,
      {
        method,
        // The simulator's certificate is self-signed; it is pinned by fingerprint in
        // the daemon's settings, and this call stays on loopback.
        rejectUnauthorized: false,
        headers: { ...auth, 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    r.on('error', reject);
    r.end(body);
  });
}

export async function startRealBackend(repoRoot: string): Promise<RunningBackend> {
  const dir = mkdtempSync(join(tmpdir(), 'proxmops-e2e-'));
  let sim: ChildProcess | undefined;
  let daemon: ChildProcess | undefined;
  let files: Server | undefined;
  const close = async () => {
    await stop(daemon);
    await stop(sim);
    if (files) await new Promise<void>((r) => files!.close(() => r()));
    if (!process.env.PROXMOPS_E2E_KEEP) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const bin = buildProxmops(repoRoot, dir);

    const blob = imageBlob();
    files = createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': blob.length });
      res.end(req.method === 'HEAD' ? undefined : blob);
    });
    await new Promise<void>((r) => files!.listen(0, '127.0.0.1', r));
    const filesURL = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;

    const repo = join(dir, 'repo');
    exampleRepo(repoRoot, repo, filesURL, createHash('sha256').update(blob).digest('hex'));
    const planBranch = 'feature/app-04';
    addPlanBranch(repo, planBranch, 'app-04');

    const tokenSecret = randomBytes(16).toString('hex');
    const rootPassword = randomBytes(16).toString('hex');
    sim = startProcess(
      bin,
      ['sim', '--listen', '127.0.0.1:0', '--token-id', TOKEN_ID, '--token-secret', tokenSecret, '--root-password', rootPassword, '--task-speed', '0.02', '--seed', '7'],
      join(dir, 'sim.log'),
    );
    const [, apiURL, fingerprint] = await waitForLine(sim, /pvesim listening on (\S+) fingerprint (\S+)/, 'the simulator');

    const info: BackendInfo = {
      url: '',
      setupToken: '',
      cluster: { endpoint: apiURL, tokenId: TOKEN_ID, tokenSecret, fingerprint },
      source: { repoURL: repo, revision: 'main' },
      sim: { apiURL, authorization: `PVEAPIToken=${TOKEN_ID}=${tokenSecret}` },
      planBranch,
      planBranchAdds: 'app-04',
      conflicting: 'app-03',
      logDir: dir,
    };
    // A guest proxmops did not create, holding app-03's VMID: app-03 is a Conflict.
    // It is made by root@pam logged in with a password, not by proxmops' token:
    // a guest whose create task names proxmops' token would be adopted as its own.
    const login = await simRequest(info, 'POST', '/access/ticket', { username: 'root@pam', password: rootPassword }, {});
    if (login.status !== 200) throw new Error(`logging in as root@pam: ${login.status} ${login.body}`);
    const ticket = JSON.parse(login.body).data as { ticket: string; CSRFPreventionToken: string };
    const asRoot = { Cookie: `PVEAuthCookie=${encodeURIComponent(ticket.ticket)}`, CSRFPreventionToken: ticket.CSRFPreventionToken };
    const made = await simRequest(info, 'POST', '/nodes/pve1/qemu', { vmid: '122', name: 'hand-made', memory: '512' }, asRoot);
    if (made.status !== 200) throw new Error(`creating the unowned guest: ${made.status} ${made.body}`);

    const port = await freePort();
    daemon = startProcess(bin, ['serve', '--addr', `127.0.0.1:${port}`, '--database', join(dir, 'proxmops.db'), '--interval', '2s', '--log-level', 'debug'], join(dir, 'daemon.log'));
    const [, setupToken] = await waitForLine(daemon, /one-time token:\s+(\S+)/, 'the setup token');
    info.url = `http://127.0.0.1:${port}`;
    info.setupToken = setupToken;
    for (let i = 0; ; i++) {
      const ok = await fetch(`${info.url}/api/v1/setup`).then((r) => r.ok, () => false);
      if (ok) break;
      if (i > 100) throw new Error('the daemon does not answer');
      await new Promise((r) => setTimeout(r, 100));
    }
    return { info, close };
  } catch (err) {
    await close();
    throw err;
  }
}

export interface OwnBackend {
  sim: ChildProcess;
  daemon: ChildProcess;
  url: string;
  apiURL: string;
  tokenSecret: string;
}

// startOwnBackend starts a `proxmops sim` and a `proxmops serve` of a test file's
// own, reconciling repo's main, and sets the daemon up with admin; on failure it
// stops what it started. TOKEN_ID is proxmops' token.
export async function startOwnBackend(bin: string, dir: string, repo: string, admin: { username: string; password: string }): Promise<OwnBackend> {
  let sim: ChildProcess | undefined;
  let daemon: ChildProcess | undefined;
  try {
    const tokenSecret = randomBytes(16).toString('hex');
    sim = startProcess(bin, ['sim', '--listen', '127.0.0.1:0', '--token-id', TOKEN_ID, '--token-secret', tokenSecret, '--task-speed', '0.02', '--seed', '7'], join(dir, 'sim.log'));
    const [, apiURL, fingerprint] = await waitForLine(sim, /pvesim listening on (\S+) fingerprint (\S+)/, 'the simulator');
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const env = {
      ...process.env,
      PROXMOPS_CLUSTER_ENDPOINT: apiURL,
      PROXMOPS_CLUSTER_TOKENID: TOKEN_ID,
      PROXMOPS_CLUSTER_TOKENSECRET: tokenSecret,
      PROXMOPS_CLUSTER_FINGERPRINT: fingerprint,
      PROXMOPS_SOURCE_REPOURL: repo,
      PROXMOPS_SOURCE_REVISION: 'main',
      PROXMOPS_SOURCE_CACHEDIR: join(dir, 'cache'),
    };
    daemon = startProcess(bin, ['serve', '--addr', `127.0.0.1:${port}`, '--database', join(dir, 'proxmops.db'), '--interval', '2s'], join(dir, 'daemon.log'), env);
    const [, token] = await waitForLine(daemon, /one-time token:\s+(\S+)/, 'the setup token');
    for (let i = 0; ; i++) {
      const ok = await fetch(`${url}/api/v1/setup`).then((r) => r.ok, () => false);
      if (ok) break;
      if (i > 100) throw new Error('the daemon does not answer');
      await new Promise((r) => setTimeout(r, 100));
    }
    const setup = await fetch(`${url}/api/v1/setup`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ token, ...admin }),
    });
    if (setup.status !== 201) throw new Error(`setup: ${setup.status} ${await setup.text()}`);
    return { sim, daemon, url, apiURL, tokenSecret };
  } catch (err) {
    await stop(daemon);
    await stop(sim);
    throw err;
  }
}
