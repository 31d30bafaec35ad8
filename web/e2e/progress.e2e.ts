// Progress of a long action, in Chromium against a `proxmops serve` and `proxmops sim` of
// their own (the binary the global setup built): a long action, an Iso's
// download-url, shows in the drawer its percent as it grows and its live task log,
// and "Sync now" is disabled while it runs and enabled again once it ended.
//
// The download is long because its source is slow, as a real mirror can be: the
// loopback file server below sends the image in 32 MiB parts, each only when the
// test lets it. The simulator fetches it for real and logs wget's dot:giga lines, a
// line per 32 MiB with its percent, as Proxmox's download-url does (pve-common
// PVE/Tools.pm download_file_from_url runs `wget --progress=dot:giga`;
// pvesim/wget.go, after GNU wget's src/progress.c); the daemon reads the percent from the
// task log (internal/engine/taskprogress.go). So every state the test looks at
// lasts until the test moves on: no sleeps, no timing.

import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, inject, test } from 'vitest';
import { auditEverywhere } from './a11y';
import { newRepo, startOwnBackend, stop } from './daemon';
import { openSignedIn, type BrowserSession } from './harness';
import { until as pollUntil } from './settle';

const shared = inject('backend');
const ADMIN = { username: 'admin', password: 'watching it download' };
// wget --progress=dot:giga prints a line per 32 MiB: four parts, four percent lines.
const PART = 32 << 20;
const PARTS = 4;
const ISO = 'big-iso';

let dir = '';
let sim: ChildProcess | undefined;
let daemon: ChildProcess | undefined;
let files: Server | undefined;
let url = '';
let b: BrowserSession;
let page: Page;

// The slow mirror: it answers at once with the length, then sends a part each time
// the test opens the valve once.
const part = Buffer.alloc(PART, 0x20);
const mirror = {
  gets: 0,
  sent: 0,
  allowed: 0,
  wake: () => {},
  open(parts: number) {
    this.allowed += parts;
    this.wake();
  },
};

async function serveSlowly(res: ServerResponse): Promise<void> {
  let closed = false;
  res.once('close', () => {
    closed = true;
    mirror.wake();
  });
  for (let i = 0; i < PARTS && !closed; i++) {
    while (mirror.allowed <= i && !closed) await new Promise<void>((r) => (mirror.wake = r));
    if (closed) break;
    if (!res.write(part)) await new Promise((r) => res.once('drain', r));
    mirror.sent = i + 1;
  }
  res.end();
}

const until = (what: string, check: () => Promise<boolean> | boolean, timeoutMs = 60_000) => pollUntil(what, check, timeoutMs, dir);

const drawer = () => page.getByRole('dialog', { name: `Iso ${ISO}` });
// "Sync now" reads "Syncing…" while an action of the resource runs.
const syncButton = () => drawer().getByRole('region', { name: 'Actions' }).getByRole('button', { name: /^(Sync now|Syncing…)$/ });
const bar = () => drawer().getByRole('progressbar');
const logLines = () => drawer().getByLabel('Task log lines');
// A full row of wget dot:giga, headed by the offset it starts at, ending with the
// percent reached, the row's rate and the time left:
// "     0K ........ ........ ........ ........ 25% 3.92M 23s" (pvesim/wget.go).
const wgetRow = (startKiB: number, pct: number) => new RegExp(`^ *${startKiB}K( \\.{8}){4} *${pct}% +[0-9.]+[ KMGT] \\S+$`, 'm');
// wget's last row: no dots left, the percent, the rate and "=" the whole time.
const wgetEnd = (startKiB: number) => new RegExp(`^ *${startKiB}K {36}100% +[0-9.]+[ KMGT]=\\S+$`, 'm');

describe('a long action: percent, live task log, Sync now held', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'proxmops-e2e-progress-'));
    const bin = join(shared.logDir, 'proxmops');

    files = createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': PART * PARTS });
      if (req.method !== 'GET') {
        res.end();
        return;
      }
      mirror.gets++;
      void serveSlowly(res);
    });
    await new Promise<void>((r) => files!.listen(0, '127.0.0.1', r));
    const source = `http://127.0.0.1:${(files.address() as AddressInfo).port}/${ISO}.iso`;
    const sha = createHash('sha256');
    for (let i = 0; i < PARTS; i++) sha.update(part);

    const repo = join(dir, 'repo');
    mkdirSync(join(repo, 'isos'), { recursive: true });
    writeFileSync(
      join(repo, 'isos', `${ISO}.yaml`),
      `apiVersion: proxmops.dev/v1\nkind: Iso\nmetadata:\n  name: ${ISO}\nspec:\n  source: ${source}\n  node: pve1\n  storage: local\n  checksum:\n    algo: sha256\n    value: ${sha.digest('hex')}\n`,
    );
    newRepo(repo, 'a big Iso from a slow mirror');

    const own = await startOwnBackend(bin, dir, repo, ADMIN);
    ({ sim, daemon, url } = own);

    b = await openSignedIn(url, ADMIN);
    page = b.page;
  });
  afterAll(async () => {
    mirror.open(PARTS);
    await b?.close();
    await stop(daemon);
    await stop(sim);
    files?.closeAllConnections();
    if (files) await new Promise<void>((r) => files!.close(() => r()));
    if (!process.env.PROXMOPS_E2E_KEEP && dir) rmSync(dir, { recursive: true, force: true });
  });
  afterEach(() => {
    expect(b.takeProblems(), 'console errors or uncaught exceptions').toEqual([]);
  });

  test('the drawer shows the download’s percent growing and its live log; Sync now waits for the end', async () => {
    // The first pass starts the download; the mirror holds every part back.
    await until('the simulator fetches the image', () => mirror.gets === 1);
    await page.goto(`${url}/?view=cards&r=${encodeURIComponent(`Iso/${ISO}`)}`);
    await drawer().waitFor();

    // Started, nothing received: the task log is live, no percent yet, no second sync.
    await logLines().filter({ hasText: /^downloading http:\/\/127\.0\.0\.1:\d+\/big-iso\.iso to / }).waitFor();
    expect(await drawer().locator('details.tasklog summary').textContent()).toMatch(/^Task log \(live\)/);
    expect(await bar().getAttribute('aria-valuenow')).toBeNull();
    expect(await syncButton().isDisabled()).toBe(true);
    expect(await drawer().getByRole('button', { name: 'Sync…' }).isDisabled()).toBe(true);

    const seen: number[] = [];
    for (let i = 1; i < PARTS; i++) {
      mirror.open(1);
      const pct = (100 * i) / PARTS;
      // The log line as wget prints it, then the percent the daemon read from it.
      await logLines().filter({ hasText: wgetRow(((i - 1) * PART) >> 10, pct) }).waitFor({ timeout: 30_000 });
      await drawer().locator(`[role="progressbar"][aria-valuenow="${pct}"]`).waitFor({ timeout: 30_000 });
      expect(await drawer().locator('.progress-label').textContent()).toMatch(new RegExp(`^downloading ${ISO}\\.iso to local · ${pct}%$`));
      seen.push(Number(await bar().getAttribute('aria-valuenow')));
      // Still running: Sync now stays disabled, its words say why.
      expect(await syncButton().isDisabled()).toBe(true);
      expect(await syncButton().getAttribute('title')).toBe('An action on this resource is running');
      if (i === 1) {
        await b.shot('drawer-download-progress');
        expect(await auditEverywhere(page, 'drawer-download-progress', b.shot)).toEqual({});
      }
    }
    expect(seen).toEqual([25, 50, 75]);
    // Every line stays in the live log, in order.
    const text = (await logLines().textContent()) ?? '';
    const order = [1, 2, 3].map((i) => text.search(wgetRow(((i - 1) * PART) >> 10, (100 * i) / PARTS)));
    expect(order.every((at, i) => at >= 0 && (i === 0 || at > order[i - 1])), text).toBe(true);

    // The last part: the download ends, the Iso is in sync, Sync now is back.
    mirror.open(1);
    await drawer().getByRole('button', { name: 'Sync now', exact: true }).waitFor({ timeout: 60_000 });
    await until('Sync now is enabled again', () => syncButton().isEnabled());
    await bar().waitFor({ state: 'detached' });
    await drawer().locator('.facts .badge', { hasText: 'Synced' }).waitFor();
    expect(mirror.sent).toBe(PARTS);
    expect(mirror.gets).toBe(1);
    // The finished task's log, kept: its last rows and Proxmox's end line.
    await drawer().locator('details.tasklog summary', { hasText: /^Last task log/ }).waitFor();
    const last = drawer().locator('details.tasklog');
    if ((await last.getAttribute('open')) === null) await last.locator('summary').click();
    await logLines().filter({ hasText: wgetRow(((PARTS - 1) * PART) >> 10, 100) }).waitFor();
    await logLines().filter({ hasText: wgetEnd((PARTS * PART) >> 10) }).waitFor();
    await logLines().filter({ hasText: /^TASK OK$/m }).waitFor();
    // The aligned diff: the cluster side of source, storage and checksum is what
    // the engine compares (the checksum as "sha256:…"), equal to the manifest's.
    for (const f of ['source', 'storage', 'checksum']) {
      const cells = drawer().locator('table.aligned tr').filter({ has: page.locator('th[scope="row"]', { hasText: new RegExp(`^${f}$`) }) }).locator('td');
      await until(`the diff's ${f} row has the cluster's value`, async () => {
        const [git, cluster] = await cells.allTextContents();
        return !!git && git !== '— not set' && git === cluster;
      });
    }
    await b.shot('drawer-download-done');
  }, 240_000);
});
