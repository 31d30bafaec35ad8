// The cluster-wide kinds in the UI, in Chromium, against `proxmops demo`
// built from this checkout (the UI the global setup built embedded in it):
// the examples' security group, IP set, alias, cluster firewall, backup job,
// HA rule, pool and storage each have a card with its summary line; the
// graph links the security group to the two VMs that use it, the backup job
// to the guests its tag selects, the HA rule to its guest and the storage to
// the ISO on it, each edge in words; a rule of the security group changed,
// then one moved, by hand on the simulator shows in the drawer as the
// ordered rule table, by position, and Sync now puts it back; axe finds
// nothing serious on those pages.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { axeViolations } from './a11y';
import type { BackendInfo } from './backend';
import { simRequest } from './daemon';
import { openDemo, revealCard, type BrowserSession, type DemoSession } from './harness';
import { settled } from './settle';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// The demo's token on its simulated cluster (internal/demo simTokenID).
const SIM_TOKEN_ID = 'root@pam!proxmops';

// Each new kind's example and the summary line its card shows.
const CARDS: { kind: string; name: string; summary: string }[] = [
  { kind: 'FirewallAlias', name: 'lan', summary: '192.168.1.0/24' },
  { kind: 'FirewallIPSet', name: 'admins', summary: '3 entries' },
  { kind: 'FirewallGroup', name: 'webserver', summary: '3 rules' },
  { kind: 'ClusterFirewall', name: 'cluster', summary: 'in DROP · out ACCEPT · 1 own rule' },
  { kind: 'BackupJob', name: 'nightly', summary: '02:30 · tagged prod · to local' },
  { kind: 'HARule', name: 'web01-prefers-pve2', summary: 'on pve2 (2), pve3 (1)' },
  { kind: 'Pool', name: 'prod', summary: 'Production' },
  { kind: 'Storage', name: 'nas-iso', summary: 'nfs · iso, vztmpl' },
];
const NEW_KINDS = [...new Set(CARDS.map((c) => c.kind))];

// The edges the graph draws for them: the sentence (the edge's aria-label)
// and the words on the edge.
const EDGES: { label: string; words: string }[] = [
  { label: 'app-01 is protected by security group webserver', words: 'protected by' },
  { label: 'app-02 is protected by security group webserver', words: 'protected by' },
  // The job selects the guests tagged prod; proxmops resolves them.
  { label: 'nightly backs up app-01', words: 'backs up' },
  { label: 'nightly backs up app-03', words: 'backs up' },
  { label: 'nightly backs up k3s-server-1', words: 'backs up' },
  { label: 'web01-prefers-pve2 places web01', words: 'places' },
  { label: 'ubuntu-24-04 is stored on storage nas-iso', words: 'stored on' },
  { label: 'app-01 uses pool prod', words: 'uses' },
];

const GROUP_RULES = '/cluster/firewall/groups/webserver';

describe('the cluster-wide kinds in the demo', () => {
  let s: DemoSession | undefined;
  let url = '';
  let sim: Pick<BackendInfo, 'sim'>;
  let b: BrowserSession;
  let page: Page;

  beforeAll(async () => {
    // The banner on to the simulated cluster's API address.
    s = await openDemo(repoRoot, 'clusterkinds', [], /UI:\s+(\S+)\n\s+username:\s+admin\n\s+password:\s+(\S+)\n[\s\S]*?cluster \(pve1, pve2, pve3\):\s+(\S+)\n/);
    ({ demo: { url }, b } = s);
    page = b.page;
    // The demo keeps its token's secret in its directory.
    const secret = readFileSync(join(s.demo.demoDir, 'sim-token'), 'utf8').trim();
    sim = { sim: { apiURL: s.demo.banner[3], authorization: `PVEAPIToken=${SIM_TOKEN_ID}=${secret}` } };
  }, 240_000);

  afterAll(() => s?.close());

  afterEach(() => {
    expect(b.takeProblems(), 'console errors or uncaught exceptions').toEqual([]);
  });

  const card = (kind: string, name: string): Locator => page.locator(`.card[data-key="${kind}/${name}"]`);
  const synced = async (l: Locator) => ((await l.getAttribute('class').catch(() => null)) ?? '').includes('st-synced');

  // bothThemes runs axe on the page as it is, in the light and the dark theme.
  async function bothThemes(what: string) {
    for (const theme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: theme });
      await expect.poll(() => page.evaluate(() => document.documentElement.dataset.theme)).toBe(theme);
      await settled(page);
      expect(await axeViolations(page), `${what}, ${theme}`).toEqual([]);
      await b.shot(`clusterkinds-${what}-${theme}`);
    }
    await page.emulateMedia({ colorScheme: 'light' });
  }

  test('each new kind has a card, in sync, with its summary line', async () => {
    await page.goto(`${url}/?view=cards&kind=${NEW_KINDS.join(',')}`);
    for (const c of CARDS) {
      const l = await revealCard(page, card(c.kind, c.name), 60_000);
      // The HA rule and the backup job wait for their guests: the examples converge first.
      await expect.poll(() => synced(l), { timeout: 180_000, message: `${c.kind}/${c.name} to be in sync` }).toBe(true);
      expect(await l.locator('.card-summary').textContent(), `${c.kind}/${c.name}`).toBe(c.summary);
      expect(await l.locator('.card-meta').textContent()).toMatch(new RegExp(`^${c.kind}`));
    }
    await page.locator('.vlist:has(.card)').evaluate((el) => (el.scrollTop = 0));
    await bothThemes('cards');
  }, 300_000);

  test('the graph links them to what they protect, back up, place and hold, in words', async () => {
    await page.goto(`${url}/?view=graph&kind=${[...NEW_KINDS, 'VirtualMachine', 'Iso'].join(',')}`);
    for (const e of EDGES) await page.locator(`.react-flow__edge.gdep[aria-label="${e.label}"]`).waitFor({ state: 'attached' });
    const labels = await page.locator('.react-flow__edge.gdep').evaluateAll((els) => els.map((el) => el.getAttribute('aria-label') ?? ''));
    // Exactly the two VMs that use the group, the three guests tagged prod, the one guest of the rule.
    expect(labels.filter((l) => l.endsWith(' security group webserver')).sort()).toEqual(EDGES.slice(0, 2).map((e) => e.label));
    expect(labels.filter((l) => l.startsWith('nightly ')).sort()).toEqual(EDGES.slice(2, 5).map((e) => e.label));
    // Grouped by kind the rule's nodes are no boxes: its card names them.
    expect(labels.filter((l) => l.startsWith('web01-prefers-pve2 '))).toEqual([EDGES[5].label]);
    expect(labels.filter((l) => l.endsWith(' storage nas-iso'))).toEqual([EDGES[6].label]);
    // A resource's node names what it needs, and the rule's node its guest.
    await page.getByRole('group', { name: 'HARule web01-prefers-pve2: Synced; places web01, prefers node pve2 (priority 2), prefers node pve3 (priority 1)' }).waitFor();
    await page.getByRole('group', { name: /^VirtualMachine app-01: Synced; .*uses pool prod, is protected by security group webserver/ }).waitFor();
    await settled(page);
    await b.shot('clusterkinds-graph');
    // Zoomed in on a group the edges say their relation (all of them: this
    // small a graph draws every edge, on screen or not).
    await page.getByRole('group', { name: 'kind FirewallGroup, 1 resource: zoom to fit' }).click();
    await settled(page);
    for (const e of EDGES) {
      const words = page.locator(`.react-flow__edge.gdep[aria-label="${e.label}"] .gdep-label`);
      await expect.poll(() => words.textContent().catch(() => null), { message: `the words on "${e.label}"` }).toContain(e.words);
    }
    await b.shot('clusterkinds-graph-zoomed');
    await page.getByRole('button', { name: 'Fit View' }).click();
    await bothThemes('graph');
  }, 120_000);

  test("grouped by node, the HA rule points at its nodes' groups, in words that are not a dependency", async () => {
    await page.goto(`${url}/?view=graph&group=node`);
    const edge = (node: string, words: string) =>
      page.locator(`.react-flow__edge.gdep.rel-prefers[aria-label="web01-prefers-pve2 prefers node ${node} (priority ${words})"]`);
    await edge('pve2', '2').waitFor({ state: 'attached', timeout: 60_000 });
    await edge('pve3', '1').waitFor({ state: 'attached' });
    // They end at the nodes' groups (the tier nodes; from the rule, or from the
    // frame of the cluster-wide kinds it is in), and no other edge says it.
    const ids = await page.locator('.react-flow__edge.gdep.rel-prefers').evaluateAll((els) => els.map((el) => el.getAttribute('data-id') ?? ''));
    expect(ids.map((id) => id.slice(id.indexOf('->'))).sort()).toEqual(['->group:pve2:prefers', '->group:pve3:prefers']);
    // Zoomed in on pve2's group, the edge says it, with the priority.
    await page.getByRole('group', { name: /^node pve2, \d+ resources?: zoom to fit$/ }).click();
    await settled(page);
    const words = edge('pve2', '2').locator('.gdep-label');
    await expect.poll(() => words.textContent().catch(() => null), { message: 'the words on the edge to pve2' }).toMatch(/\)prefers \(2\)$/);
    // Its own colour: a placement, not a dependency.
    const stroke = (l: Locator) => l.locator('path.react-flow__edge-path').first().evaluate((el) => getComputedStyle(el).stroke);
    const dep = page.locator('.react-flow__edge.gdep.rel-places[aria-label="web01-prefers-pve2 places web01"]');
    expect(await stroke(edge('pve2', '2'))).not.toBe(await stroke(dep));
    await b.shot('clusterkinds-graph-by-node');
    await page.getByRole('button', { name: 'Fit View' }).click();
    await bothThemes('graph-by-node');
  }, 120_000);

  test('a rule of the security group changed, then moved, by hand shows in the ordered rule table by position; Sync now puts it back', async () => {
    // Automatic sync would repair the drift before anyone could look at it.
    await page.goto(`${url}/settings`);
    await page.getByLabel('Apply changes automatically').uncheck();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText(/^Saved\./).waitFor();

    const before = JSON.parse((await simRequest(sim, 'GET', GROUP_RULES)).body).data as Record<string, unknown>[];
    expect(before.map((r) => r.macro ?? r.dport)).toEqual(['80,443', 'SSH', 'Ping']);
    // Someone turns off the second rule (SSH from the admins) on the cluster.
    const changed = await simRequest(sim, 'PUT', `${GROUP_RULES}/1`, { enable: '0' });
    expect(changed.status, changed.body).toBe(200);

    await page.goto(`${url}/?view=cards&kind=FirewallGroup`);
    const l = await revealCard(page, card('FirewallGroup', 'webserver'));
    // Opening the drawer has the daemon read the group's rules again at once.
    await l.click();
    const drawer = page.getByRole('dialog', { name: 'FirewallGroup webserver' });
    await drawer.waitFor();
    const table = drawer.getByRole('table', { name: /rules, in order$/ });
    await table.waitFor({ timeout: 30_000 });
    await expect.poll(async () => (await l.getAttribute('class')) ?? '').toContain('st-outofsync');
    expect(await table.locator('caption').textContent()).toMatch(/rules, in order$/);
    expect(await table.locator('thead th').allTextContents()).toEqual(['#', 'on the cluster', 'in the manifest']);
    // One row: the rule at position 1, the cluster's disabled beside the manifest's.
    const rows = await tableRows(table);
    expect(rows).toEqual([['1', 'disabled: in SSH(ACCEPT) -source +admins', 'in SSH(ACCEPT) -source +admins']]);
    // The aligned diff below lines the group's fields up with what the cluster
    // lists (the comment with proxmops' mark), each rule on a line of its own.
    // A row of it by its field (the header's title names the field and its path).
    const aligned = (field: string) => drawer.locator('.aligned tr', { has: page.locator(`th[title="${field}"], th[title^="${field} · "]`) });
    const lines = (row: Locator, side: 0 | 1) => row.locator('td').nth(side).locator('.val').allTextContents();
    expect(await lines(aligned('comment'), 0)).toEqual(['public web servers']);
    expect(await lines(aligned('comment'), 1)).toEqual(['public web servers (managed-by-proxmops)']);
    expect(await lines(aligned('rules'), 0)).toEqual([
      'type=in,action=ACCEPT,proto=tcp,dport=80,443,comment=web',
      'type=in,action=ACCEPT,macro=SSH,source=+admins',
      'type=in,action=ACCEPT,macro=Ping',
    ]);
    // Beside it, the cluster's list in the same form: the rule disabled by hand.
    expect(await lines(aligned('rules'), 1)).toEqual([
      'type=in,action=ACCEPT,proto=tcp,dport=80,443,comment=web',
      'type=in,action=ACCEPT,macro=SSH,source=+admins,enable=0',
      'type=in,action=ACCEPT,macro=Ping',
    ]);
    const changedRule = aligned('rules[1]');
    expect(await changedRule.getAttribute('class')).toBe('changed');
    expect(await lines(changedRule, 1)).toEqual([rows[0][1]]);
    // Its history: created, then this drift; no false drift or failed update
    // from a pass that read the rules while proxmops was still adding them.
    const history = await drawer.getByRole('region', { name: 'History' }).textContent();
    expect(history).toMatch(/\bcreated\b/);
    expect(history).not.toMatch(/\bfailed\b/);
    await b.shot('clusterkinds-drawer-rules');
    await bothThemes('drawer-rules');

    await drawer.getByRole('button', { name: 'Sync now' }).click();
    await expect.poll(() => synced(l), { timeout: 60_000, message: 'the group to be in sync after Sync now' }).toBe(true);
    await table.waitFor({ state: 'detached' });
    const after = JSON.parse((await simRequest(sim, 'GET', GROUP_RULES)).body).data as Record<string, unknown>[];
    expect(after.map((r) => [r.macro ?? r.dport, r.enable])).toEqual([
      ['80,443', 1],
      ['SSH', 1],
      ['Ping', 1],
    ]);
    await page.keyboard.press('Escape');
    await drawer.waitFor({ state: 'detached' });

    // Someone moves the last rule (Ping) to the top: every position differs,
    // and the table reads in list order, the cluster's order beside the manifest's.
    const moved = await simRequest(sim, 'PUT', `${GROUP_RULES}/2`, { moveto: '0' });
    expect(moved.status, moved.body).toBe(200);
    await l.click();
    await drawer.waitFor();
    await table.waitFor({ timeout: 30_000 });
    const web = 'in ACCEPT -p tcp -dport 80,443 # web';
    const ssh = 'in SSH(ACCEPT) -source +admins';
    const ping = 'in Ping(ACCEPT)';
    await expect.poll(() => tableRows(table)).toEqual([
      ['0', ping, web],
      ['1', web, ssh],
      ['2', ssh, ping],
    ]);
    await b.shot('clusterkinds-drawer-rules-moved');
    await drawer.getByRole('button', { name: 'Sync now' }).click();
    await expect.poll(() => synced(l), { timeout: 60_000, message: 'the group to be in sync after the second Sync now' }).toBe(true);
    const again = JSON.parse((await simRequest(sim, 'GET', GROUP_RULES)).body).data as Record<string, unknown>[];
    expect(again.map((r) => r.macro ?? r.dport)).toEqual(['80,443', 'SSH', 'Ping']);
    await page.keyboard.press('Escape');
  }, 180_000);
});

// tableRows is a table's body, a row a list of its cells' texts.
function tableRows(table: Locator): Promise<string[][]> {
  return table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
}
