// Revisions and a broken HEAD, in Chromium against a
// `proxmops serve` and `proxmops sim` of their own (the binary the global setup built),
// so that pinning and breaking the branch do not disturb the scenario's daemon:
// - the Revisions page offers no sync to the commit applied now; an older one is
//   pinned after a confirmation, the summary bar and a banner say so, the cluster
//   follows it, and unpinning brings the branch head back;
// - a HEAD whose manifests fail to load is said loudly on the overview, the Plan
//   page, a preview of the branch and the Revisions page, each error an item of its
//   own, and the plan shown is labelled the last good revision's.

import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, inject, test } from 'vitest';
import { axeViolations } from './a11y';
import type { BackendInfo } from './backend';
import { gitIn, simRequest, startOwnBackend, stop } from './daemon';
import { openSignedIn, type BrowserSession } from './harness';
import { until as pollUntil } from './settle';

const shared = inject('backend');
const ADMIN = { username: 'admin', password: 'pinned and unpinned' };
const TOKEN_ID = 'root@pam!proxmops';

const vm = (cores: number) =>
  `apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata:\n  name: web-01\n  node: pve1\nspec:\n  vmid: 150\n  cores: ${cores}\n  memory: 512\n`;
// Seven errors in two files (ct-01 also lacks its node, rootfs and template): each
// must be an item of its own, wherever it is shown.
const BROKEN_VM =
  'apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata:\n  name: web-01\n  node: pve1\nspec:\n  vmid: 150\n  cores: -2\n  memory: 12\n  coers: 2\n';
const BROKEN_CT = 'apiVersion: proxmops.dev/v1\nkind: Container\nmetadata:\n  name: ct-01\nspec:\n  vmid: 151\n  memry: 64\n';

let dir = '';
let repo = '';
let sim: ChildProcess | undefined;
let daemon: ChildProcess | undefined;
let url = '';
let simInfo: BackendInfo;
let b: BrowserSession;
let page: Page;

const git = (...args: string[]) => gitIn(repo, { name: 'Rita Revisions', email: 'rita@proxmops.invalid' })(...args);

function commit(message: string, files: Record<string, string | null>): string {
  for (const [path, text] of Object.entries(files)) {
    if (text === null) rmSync(join(repo, path), { force: true });
    else writeFileSync(join(repo, path), text);
  }
  git('add', '-A');
  git('commit', '-q', '-m', message);
  return git('rev-parse', 'HEAD');
}

const until = (what: string, check: () => Promise<boolean>, timeoutMs = 30_000) => pollUntil(what, check, timeoutMs, dir);

async function cores(): Promise<string> {
  const r = await simRequest(simInfo, 'GET', '/nodes/pve1/qemu/150/config');
  return r.status === 200 ? String(JSON.parse(r.body).data.cores) : `HTTP ${r.status}`;
}

const short = (hash: string) => hash.slice(0, 8);
const items = (l: Locator) => l.locator('li').allTextContents();
const bar = () => page.getByRole('region', { name: 'Reconciliation' });
// The overview's graph (its default view) starts from the Git source node.
const sourceNode = () => page.locator('.react-flow__node-source');
// sourceText waits for the Git source node's text to match, and shows the last one seen if it never does.
async function sourceText(want: RegExp): Promise<void> {
  await expect.poll(async () => (await sourceNode().textContent({ timeout: 1000 }).catch(() => null)) ?? '', { timeout: 30_000, interval: 250 }).toMatch(want);
}

describe('revisions: pinning, and a HEAD that fails to load', () => {
  let older = '';
  let head = '';
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'proxmops-e2e-revisions-'));
    const bin = join(shared.logDir, 'proxmops');
    repo = join(dir, 'repo');
    mkdirSync(join(repo, 'vms'), { recursive: true });
    git('init', '-q', '-b', 'main');
    older = commit('web-01: one core', { 'vms/web-01.yaml': vm(1) });
    head = commit('web-01: two cores', { 'vms/web-01.yaml': vm(2) });

    const own = await startOwnBackend(bin, dir, repo, ADMIN);
    ({ sim, daemon, url } = own);
    simInfo = { sim: { apiURL: own.apiURL, authorization: `PVEAPIToken=${TOKEN_ID}=${own.tokenSecret}` } } as BackendInfo;

    b = await openSignedIn(url, ADMIN);
    page = b.page;
  });
  afterAll(async () => {
    await b?.close();
    await stop(daemon);
    await stop(sim);
    if (!process.env.PROXMOPS_E2E_KEEP && dir) rmSync(dir, { recursive: true, force: true });
  });
  afterEach(() => {
    expect(b.takeProblems(), 'console errors or uncaught exceptions').toEqual([]);
  });

  test('the commit applied now offers no sync to itself; an older one is pinned loudly, and unpinning returns to the branch head', async () => {
    await until('web-01 has the head’s two cores', async () => (await cores()) === '2', 60_000);
    await page.getByRole('link', { name: 'Revisions' }).click();
    const row = (message: string) => page.locator('.rev-row', { hasText: message });
    // The list is read when the page opens: wait for the pass at the head to be recorded.
    await until('the head is applied now', async () => {
      await page.reload();
      await row('web-01: two cores').waitFor();
      return (await row('web-01: two cores').getByText('applied now', { exact: true }).count()) === 1;
    });
    expect(await row('web-01: two cores').getByRole('button', { name: /Sync to/ }).count()).toBe(0);
    await row('web-01: two cores').getByText('Applied now: syncing to it would change nothing.').waitFor();
    await b.shot('revisions-head-applied');
    expect(await axeViolations(page)).toEqual([]);

    await row('web-01: one core').getByRole('button', { name: `Sync to this revision ${short(older)}` }).click();
    await row('web-01: one core').getByRole('button', { name: `Yes, sync to ${short(older)}` }).click();
    await page.locator('.pin-banner', { hasText: `Pinned to ${short(older)}` }).waitFor();
    await until('web-01 is back to one core', async () => (await cores()) === '1', 60_000);

    await page.getByRole('link', { name: 'Overview' }).click();
    // Loudly: in the summary bar, as the revision reconciled, and in a banner with the way back.
    await until('the summary bar names the pinned commit', async () => {
      const text = (await bar().textContent()) ?? '';
      return text.includes('pinned revision, not the branch head') && text.includes(short(older));
    });
    // The graph's Git source node shows the same commit and says why, in the same words.
    await sourceText(new RegExp(`^⎇ Git sourcepinned revision, not the branch head${short(older)} web-01: one corelast pass `));
    const banner = page.locator('.pin-banner');
    expect(await banner.textContent()).toContain(`Pinned to ${short(older)}`);
    expect(await banner.textContent()).toContain('the branch head is not applied until unpinned (pinned by admin)');
    await b.shot('overview-pinned');
    expect(await axeViolations(page)).toEqual([]);

    await banner.getByRole('button', { name: 'Unpin' }).click();
    await until('the summary bar follows the branch head again', async () => {
      const text = (await bar().textContent()) ?? '';
      return text.includes('revision being reconciled') && text.includes(short(head));
    });
    await banner.waitFor({ state: 'detached' });
    await sourceText(new RegExp(`^⎇ Git source${short(head)} web-01: two coreslast pass `));
    expect(await sourceNode().locator('.gsource-state').count()).toBe(0);
    await until('web-01 has the head’s two cores again', async () => (await cores()) === '2', 60_000);
  });

  test('a HEAD that fails to load is said loudly on the overview, the Plan page, a preview and the Revisions page, each error its own item', async () => {
    const broken = commit('break web-01 and add ct-01', { 'vms/web-01.yaml': BROKEN_VM, 'vms/ct-01.yaml': BROKEN_CT });
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('button', { name: 'Refresh' }).click();
    const alert = page.getByRole('alert', { name: 'HEAD failed to load' });
    await alert.waitFor();
    const errors = await items(alert);
    // One item per error, each with its file, line and column, never a paragraph.
    expect(errors.length, errors.join('\n')).toBe(7);
    for (const e of errors) expect(e).toMatch(/^vms\/(web|ct)-01\.yaml:\d+:\d+: (metadata|spec)(\.\w+)?: /);
    expect(errors.filter((e) => e.startsWith('vms/web-01.yaml'))).toHaveLength(3);
    expect(await alert.textContent()).toContain(`HEAD (${short(broken)}) failed to load`);
    expect(await alert.textContent()).toContain(`last good revision's (${short(head)}), not HEAD's`);
    const summary = (await bar().textContent()) ?? '';
    expect(summary).toContain('last good revision: HEAD failed to load');
    expect(summary).toContain(short(head));
    // The graph's Git source node: the last good commit, named so, never passed off as HEAD.
    await sourceText(new RegExp(`^⎇ Git sourcelast good revision: HEAD failed to load${short(head)} web-01: two coreslast pass `));
    expect(await sourceNode().locator('.gsource-state').getAttribute('title')).toBe(
      `HEAD (${short(broken)}) failed to load: this is the last good revision, not HEAD`,
    );
    await b.shot('overview-head-failed');
    expect(await axeViolations(page)).toEqual([]);

    // The Plan page: not the last good plan passed off as HEAD's.
    await page.getByRole('link', { name: 'Plan' }).click();
    const planAlert = page.getByRole('alert', { name: 'HEAD failed to load' });
    await planAlert.waitFor();
    expect(await items(planAlert)).toEqual(errors);
    expect(await page.getByLabel('Summary').textContent()).toMatch(new RegExp(`^last good revision ${short(head)}`));
    await b.shot('plan-head-failed');
    expect(await axeViolations(page)).toEqual([]);

    // A preview of the branch answers with the same errors, one item each.
    await page.getByLabel('Revision').fill('main');
    b.expectProblem(/status of 400/);
    await page.getByRole('button', { name: 'Preview' }).click();
    const preview = page.getByRole('alert').filter({ hasText: new RegExp(`^the manifests at ${short(broken)}[0-9a-f]* failed to load:`) });
    await preview.waitFor();
    expect(await items(preview)).toEqual(errors);
    expect(await page.locator('.plan-summary').count()).toBe(0);
    await b.shot('plan-preview-broken');

    // The Revisions page: the head failed, the last good commit is applied; neither offers a sync.
    await page.getByRole('link', { name: 'Revisions' }).click();
    const failed = page.locator('.rev-row', { hasText: 'break web-01 and add ct-01' });
    const failedAlert = failed.getByRole('alert', { name: `${short(broken)} failed to load` });
    await failedAlert.waitFor();
    expect(await items(failedAlert)).toEqual(errors);
    expect(await failed.getByRole('button', { name: /Sync to/ }).count()).toBe(0);
    const last = page.locator('.rev-row', { hasText: 'web-01: two cores' });
    await last.getByText('applied now', { exact: true }).waitFor();
    expect(await last.getByRole('button', { name: /Sync to/ }).count()).toBe(0);
    await b.shot('revisions-head-failed');
    expect(await axeViolations(page)).toEqual([]);

    // A fix on the branch clears every warning.
    const fixed = commit('fix web-01, drop ct-01', { 'vms/web-01.yaml': vm(3), 'vms/ct-01.yaml': null });
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('button', { name: 'Refresh' }).click();
    await until('the overview follows the fixed head', async () => ((await bar().textContent()) ?? '').includes(short(fixed)));
    await alert.waitFor({ state: 'detached' });
    expect(await bar().textContent()).toContain('revision being reconciled');
    await sourceText(new RegExp(`^⎇ Git source${short(fixed)} fix web-01, drop ct-01last pass `));
    expect(await sourceNode().locator('.gsource-state').count()).toBe(0);
    await until('web-01 has three cores', async () => (await cores()) === '3', 60_000);
  });

  test('a cluster that stops answering is a banner naming its error apart from the Git source, said in the summary bar, every resource Unknown', async () => {
    await page.goto(`${url}/?view=cards`);
    await bar().waitFor();
    await stop(sim);
    const down = page.getByRole('alert', { name: 'Cluster unreachable' });
    await down.waitFor({ timeout: 30_000 });
    expect(await down.textContent()).toContain('observing the cluster failed');
    expect(await down.textContent()).toMatch(/show what was observed/);
    expect(await bar().getByTestId('summary-cluster-down').textContent()).toMatch(/^cluster unreachable · last observed /);
    expect(await page.getByText(/Git source:/).count()).toBe(0);
    const counts = page.getByRole('group', { name: 'Counts by status' });
    await until('every resource is Unknown', async () => (await counts.getByRole('button', { name: /Unknown/ }).textContent()) === '1 Unknown');
    expect(await page.locator('.card-reason').first().textContent()).toContain('cluster unreachable: observing the cluster failed');
    await b.shot('overview-cluster-unreachable');
    expect(await axeViolations(page)).toEqual([]);
  });
});
