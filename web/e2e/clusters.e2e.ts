// Several clusters in the UI, in Chromium, against
// `proxmops demo --clusters 2` built from this checkout (the UI the global setup
// built embedded in it): two simulated clusters, lab-1 following clusters/lab-1
// (the examples) and lab-2 following clusters/lab-2 (web and db). The overview
// filters and groups by cluster through the URL (cards and graph frames), a
// lab-2 resource's drawer reads it with ?cluster=lab-2, the plan groups and
// filters by cluster, and axe finds no serious or critical violation there.

import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { axeViolations } from './a11y';
import { openDemo, revealCard, type BrowserSession, type DemoSession } from './harness';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('two clusters from one repository', () => {
  let s: DemoSession | undefined;
  let url = '';
  let b: BrowserSession;
  let page: Page;

  beforeAll(async () => {
    s = await openDemo(repoRoot, 'clusters', ['--clusters', '2']);
    ({ demo: { url }, b } = s);
    page = b.page;
  }, 240_000);

  afterAll(() => s?.close());

  const cardNames = () => page.locator('.card .card-name').allTextContents();

  test('the overview filters to one cluster through the URL, and cards name their cluster', async () => {
    await page.goto(`${url}/?view=cards`);
    // lab-2's guests come up beside lab-1's examples.
    await revealCard(page, page.locator('.card', { hasText: 'web' }).filter({ hasText: 'lab-2' }), 60_000);
    await page.locator('summary', { hasText: 'Cluster' }).click();
    const menu = page.getByRole('group', { name: 'Cluster' });
    expect(await menu.getByRole('checkbox').count()).toBe(2);
    await menu.getByLabel('lab-2').check();
    await expect.poll(() => new URL(page.url()).searchParams.get('cluster')).toBe('lab-2');
    await expect.poll(cardNames).toEqual(['db', 'web']);
    expect(await page.locator('.card .card-cluster').allTextContents()).toEqual(['· lab-2', '· lab-2']);
    // A shared link keeps the filter.
    await page.goto(`${url}/?view=cards&cluster=lab-1`);
    await page.locator('.card').first().waitFor();
    expect(await page.locator('.card .card-cluster').evaluateAll((els) => [...new Set(els.map((e) => e.textContent))])).toEqual(['· lab-1']);
    expect(b.takeProblems()).toEqual([]);
  }, 90_000);

  test('grouped by cluster the graph has a named frame per cluster; a lab-2 resource opens with its cluster', async () => {
    await page.goto(`${url}/?view=graph&group=cluster`);
    await page.locator('.gframe-title', { hasText: 'lab-2' }).waitFor();
    const titles = await page.locator('.gframe-title').allTextContents();
    expect(titles).toHaveLength(2);
    expect(titles[0]).toMatch(/^cluster lab-1 · \d+$/);
    expect(titles[1]).toBe('cluster lab-2 · 2');
    expect(await page.locator('.ggroup-label').allTextContents()).toEqual(['cluster lab-1', 'cluster lab-2']);
    // Inside a cluster's frame its resources' dependencies are drawn as in a graph of
    // that cluster alone, each edge named by both ends.
    await page.locator('.react-flow__edge.gdep[aria-label="app-02 clones debian-12-tpl"]').waitFor({ state: 'attached' });
    await page.locator('.react-flow__edge.gdep[aria-label="dns-01 is built from container template debian-12-standard"]').waitFor({ state: 'attached' });
    const depLabels = await page.locator('.react-flow__edge.gdep').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? ''));
    expect(depLabels.length).toBeGreaterThan(5);
    for (const l of depLabels) expect(l).toMatch(/^(vnet )?\S+ (clones|mounts|is built from|is stored on|uses|is protected by|is in|backs up|places|prefers|keeps its guests only on|does not back up) \S/);
    await b.shot('clusters-graph-grouped');

    const detail = page.waitForResponse((r) => r.url().endsWith('/api/v1/resources/VirtualMachine/web?cluster=lab-2'));
    await page.getByRole('group', { name: /^VirtualMachine web in cluster lab-2: / }).click();
    expect((await detail).status()).toBe(200);
    await page.getByRole('dialog', { name: 'VirtualMachine web in cluster lab-2' }).getByText('VMID 200').waitFor();
    expect(new URL(page.url()).searchParams.get('r')).toBe('lab-2:VirtualMachine/web');
    await page.keyboard.press('Escape');

    // Filtered to lab-2, one frame is left.
    await page.goto(`${url}/?view=graph&group=cluster&cluster=lab-2`);
    await page.locator('.gframe-title', { hasText: 'lab-2' }).waitFor();
    expect(await page.locator('.gframe-title').allTextContents()).toEqual(['cluster lab-2 · 2']);
    for (const theme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: theme });
      await expect.poll(() => page.evaluate(() => document.documentElement.dataset.theme)).toBe(theme);
      expect(await axeViolations(page), theme).toEqual([]);
    }
    await page.emulateMedia({ colorScheme: 'light' });
    expect(b.takeProblems()).toEqual([]);
  }, 90_000);

  test('the summary bar counts the clusters shown and says so; Sync all syncs those, after naming them with their plans’ counts', async () => {
    const syncs: string[] = [];
    page.on('request', (r) => {
      const u = new URL(r.url());
      if (u.pathname === '/api/v1/sync') syncs.push(`${u.search} ${JSON.parse(r.postData() ?? '{}').dryRun ? 'dry run' : 'sync'}`);
    });
    const chips = () => page.getByRole('group', { name: /^Counts by status/ }).locator('.count-chip .n').allTextContents();
    const total = async () => (await chips()).reduce((n, c) => n + Number(c), 0);

    // Unfiltered: every cluster's resources, and each cluster's own figure.
    await page.goto(`${url}/?view=graph`);
    await page.getByRole('group', { name: 'Counts by status in all 2 clusters' }).waitFor();
    const shown = async () => Number((await page.locator('.shown-count').textContent())?.match(/of (\d+) resources/)?.[1]);
    await expect.poll(total).toBe(await shown());
    expect(await page.getByTestId('summary-scope').textContent()).toMatch(/^in all 2 clusters: lab-1 \d+ of \d+ in sync · lab-2 2 of 2 in sync$/);
    await page.getByRole('button', { name: 'Sync all', exact: true }).click();
    let dialog = page.getByRole('dialog', { name: 'Sync all resources of clusters lab-1 and lab-2' });
    await dialog.getByTestId('sync-counts').waitFor();
    expect(await dialog.getByRole('list', { name: 'By cluster' }).getByRole('listitem').allTextContents()).toEqual([
      expect.stringMatching(/^lab-1: /),
      'lab-2: 2 in sync',
    ]);
    for (const theme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: theme });
      await expect.poll(() => page.evaluate(() => document.documentElement.dataset.theme)).toBe(theme);
      expect(await axeViolations(page), `sync dialog, ${theme}`).toEqual([]);
    }
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(syncs.sort()).toEqual(['?cluster=lab-1 dry run', '?cluster=lab-2 dry run']);
    syncs.length = 0;

    // Filtered to lab-2: its two resources, said so; Sync all is lab-2's.
    await page.locator('summary', { hasText: 'Cluster' }).click();
    await page.getByRole('group', { name: 'Cluster', exact: true }).getByLabel('lab-2').check();
    await page.getByRole('group', { name: 'Counts by status in cluster lab-2' }).waitFor();
    expect(await page.getByTestId('summary-scope').textContent()).toBe('in cluster lab-2');
    await expect.poll(total).toBe(2);
    expect(await page.getByRole('group', { name: /^Counts by status/ }).getByRole('button', { name: /Synced/ }).textContent()).toBe('2 Synced');
    await b.shot('clusters-summary-lab-2');
    await page.getByRole('button', { name: 'Sync all in lab-2' }).click();
    dialog = page.getByRole('dialog', { name: 'Sync all resources of cluster lab-2' });
    expect(await dialog.getByTestId('sync-counts').textContent()).toBe('2 in sync');
    await b.shot('clusters-sync-lab-2');
    for (const theme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: theme });
      await expect.poll(() => page.evaluate(() => document.documentElement.dataset.theme)).toBe(theme);
      expect(await axeViolations(page), `lab-2's sync dialog, ${theme}`).toEqual([]);
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await dialog.getByRole('button', { name: 'Sync all', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'a full pass of cluster lab-2 started' }).waitFor();
    expect(syncs).toEqual(['?cluster=lab-2 dry run', '?cluster=lab-2 sync']);
    for (const theme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: theme });
      await expect.poll(() => page.evaluate(() => document.documentElement.dataset.theme)).toBe(theme);
      expect(await axeViolations(page), `filtered summary, ${theme}`).toEqual([]);
    }
    await page.emulateMedia({ colorScheme: 'light' });
    expect(b.takeProblems()).toEqual([]);
  }, 90_000);

  test('the plan groups and filters by cluster', async () => {
    await page.goto(`${url}/plan?group=cluster`);
    await page.getByRole('group', { name: 'Clusters' }).waitFor();
    // lab-2 is in sync: its rows are among the unchanged ones.
    await page.locator('label.toggle', { hasText: 'unchanged resources' }).locator('input').check();
    await expect.poll(() => page.getByRole('rowheader').allTextContents()).toEqual([expect.stringMatching(/^cluster lab-1 · \d+$/), 'cluster lab-2 · 2']);
    expect(await page.getByLabel('Group by cluster').isChecked()).toBe(true);
    await page.locator('summary', { hasText: 'Cluster' }).click();
    await page.getByRole('group', { name: 'Cluster', exact: true }).getByLabel('lab-2').check();
    await expect.poll(() => new URL(page.url()).searchParams.get('cluster')).toBe('lab-2');
    await expect.poll(() => page.getByRole('rowheader').allTextContents()).toEqual(['cluster lab-2 · 2']);
    expect(await page.locator('.plan-table tbody tr:not(.plan-group) strong').allTextContents()).toEqual(['db', 'web']);
    expect(await axeViolations(page)).toEqual([]);
    expect(b.takeProblems()).toEqual([]);
  }, 60_000);
});
