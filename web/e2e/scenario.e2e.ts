// The end-to-end scenario, against `proxmops serve` and `proxmops sim`
// built from this checkout: setup → login → settings → the examples sync → a drift
// made through the simulator shows as a diff in the drawer → delete → the logs show
// it; plus filters kept in the URL, the plan preview of a branch and the dark theme.
// Screenshots of each page land in web/screenshots/ (git-ignored).

import type { Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, inject, test } from 'vitest';
import { auditEverywhere, axeViolations, layoutProblems, sidewaysScroll, SIZES } from './a11y';
import { ROUTES, type RoutePath } from '../src/lib/routes';
import { simRequest } from './daemon';
import { openBrowser, revealCard, signIn, type BrowserSession } from './harness';
import { settled } from './settle';

const backend = inject('backend');
const ADMIN = { username: 'admin', password: 'correct horse battery' };
const VIEWER = { username: 'vera', password: 'read only please' };

let b: BrowserSession;
let page: Page;

async function until(what: string, fn: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await fn()) return;
    await page.waitForTimeout(250);
  }
  throw new Error(`timed out waiting until ${what} (daemon output in ${backend.logDir})`);
}

const card = (kind: string, name: string): Locator => page.locator(`.card[data-key="${kind}/${name}"]`);
// A card scrolled into the page first (the cards are a virtual list).
const shownCard = (kind: string, name: string): Promise<Locator> => revealCard(page, card(kind, name));
const hasStatus = (l: Locator, status: string) => async () => ((await l.getAttribute('class').catch(() => null)) ?? '').includes(`st-${status.toLowerCase()}`);

async function saveSettings() {
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByText(/^Saved\./).waitFor();
}

// audit checks the page as it is, a dialog open, at both sizes in both themes
// (a11y.ts auditEverywhere); the test goes on, and fails at its end, on a problem.
async function audit(what: string) {
  expect.soft(await auditEverywhere(page, what, b.shot), `${what}: accessibility and layout`).toEqual({});
}

describe('dashboard against proxmops serve and the simulator', () => {
  beforeAll(async () => {
    b = await openBrowser();
    page = b.page;
  });
  afterAll(async () => {
    await b?.close();
  });
  afterEach(() => {
    expect(b.takeProblems(), 'console errors or uncaught exceptions').toEqual([]);
  });

  test('first run: the setup page creates the first administrator', async () => {
    await page.goto(backend.url);
    await page.getByRole('heading', { name: /create the first administrator/i }).waitFor();
    await b.shot('setup');
    await audit('setup');
    await page.getByLabel('Setup token').fill(backend.setupToken);
    await page.getByLabel("Administrator's username").fill(ADMIN.username);
    await page.getByLabel('Password', { exact: true }).fill(ADMIN.password);
    await page.getByLabel('Password again').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Create administrator' }).click();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    expect(await page.getByRole('link', { name: 'Settings' }).count()).toBe(1);
  }, 240_000);

  test('sign out, a wrong password is refused, sign in', async () => {
    await page.locator('.user-menu summary').click();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await b.shot('login');
    await page.getByLabel('Username').fill(ADMIN.username);
    await page.getByLabel('Password').fill('wrong password');
    b.expectProblem(/status of 401/);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    await audit('login-refused');
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
  }, 240_000);

  test('settings: connect the simulated cluster and the example repository, test, create a token', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
    await page.getByLabel('API endpoint').fill(backend.cluster.endpoint);
    await page.getByLabel('API token ID').fill(backend.cluster.tokenId);
    await page.getByLabel('API token secret').fill(backend.cluster.tokenSecret);
    await page.getByLabel('Certificate fingerprint (SHA-256)').fill(backend.cluster.fingerprint);
    await page.getByLabel('Repository URL').fill(backend.source.repoURL);
    await page.getByLabel('Revision').fill(backend.source.revision);
    await saveSettings();
    // The secret is never shown again, only that it is set.
    await expect.poll(() => page.getByLabel('API token secret').getAttribute('placeholder')).toBe('set (leave blank to keep)');
    expect(await page.getByLabel('API token secret').inputValue()).toBe('');
    await page.getByRole('button', { name: 'Test connection' }).click();
    const checks = page.getByRole('region', { name: 'Connection test' });
    await checks.waitFor();
    await checks.getByRole('listitem').filter({ hasText: 'cluster: version' }).filter({ hasText: 'passed' }).waitFor();
    // The same report as `proxmops check`: the pinned certificate, each line's level.
    await checks.getByRole('listitem').filter({ hasText: 'cluster: tls' }).filter({ hasText: 'certificate pinned' }).waitFor();
    await checks.getByRole('listitem').filter({ hasText: 'cluster: quorum' }).filter({ hasText: 'OK' }).waitFor();
    await checks.getByRole('listitem').filter({ hasText: /source/ }).filter({ hasText: 'passed' }).waitFor();
    await page.getByLabel("New user's name").fill(VIEWER.username);
    await page.getByLabel("New user's password").fill(VIEWER.password);
    await page.getByLabel("New user's role").selectOption('viewer');
    await page.getByRole('button', { name: 'Add user' }).click();
    await page.getByRole('region', { name: 'Users' }).getByRole('cell', { name: VIEWER.username, exact: true }).waitFor();
    await page.getByLabel("New token's name").fill('ci');
    await page.getByRole('button', { name: 'Create token' }).click();
    await expect.poll(() => page.getByTestId('new-token').textContent()).toMatch(/\S{16,}/);
    // The cluster's guests as manifests, downloaded (GET /api/v1/export).
    const exportPanel = page.getByRole('region', { name: 'Export' });
    const [download] = await Promise.all([page.waitForEvent('download'), exportPanel.getByRole('button', { name: /^Download manifests/ }).click()]);
    expect(download.suggestedFilename()).toMatch(/\.tar\.gz$/);
    await exportPanel.getByRole('status').filter({ hasText: /^Downloaded \S+\.tar\.gz \(\d+ manifests\)\.$/ }).waitFor();
    await page.evaluate(() => window.scrollTo(0, 0));
    await b.shot('settings');
  });

  test('overview: the examples sync, live, without a reload', async () => {
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByTestId('graph').waitFor();
    const node = (name: string) => page.locator(`.react-flow__node[data-id="res:VirtualMachine/${name}"] .gres`);
    await until('app-01 and app-02 are synced', async () => (await hasStatus(node('app-01'), 'Synced')()) && (await hasStatus(node('app-02'), 'Synced')()), 120_000);
    await until(`${backend.conflicting} is a conflict`, hasStatus(node(backend.conflicting), 'Conflict'));
    // What depends on what, each edge named by both its ends.
    for (const label of ['app-02 clones debian-12-tpl', 'debian-install mounts iso debian-12', 'debian-install uses vnet iot', 'vnet iot is in zone vlans', 'dns-01 is built from container template debian-12-standard']) {
      // A minute, as the syncs above: on a loaded machine the graph redraws late.
      await page.locator(`.react-flow__edge.gdep[aria-label="${label}"]`).waitFor({ state: 'attached', timeout: 60_000 });
    }
    await b.shot('overview-graph');
  });

  test('filters live in the URL, so a view can be shared', async () => {
    await page.getByRole('button', { name: 'Cards' }).click();
    await page.locator('summary', { hasText: 'Kind' }).click();
    await page.getByRole('checkbox', { name: 'VirtualMachine' }).check();
    await page.keyboard.press('Escape');
    await page.getByRole('searchbox', { name: 'Search resources' }).fill('app');
    // page.url() follows history.replaceState a moment later, hence the polls.
    const param = (k: string) => () => new URL(page.url()).searchParams.get(k);
    await expect.poll(param('kind')).toBe('VirtualMachine');
    await expect.poll(param('view')).toBe('cards');
    await expect.poll(param('q')).toBe('app');
    // A fresh load of the same link shows the same view.
    await page.reload();
    await page.locator('.card').first().waitFor();
    const names = await page.locator('.card .card-name').allTextContents();
    // The search looks at names, tags, reasons and files, so more than app-* may match;
    // the kind filter holds for every card.
    expect(names).toEqual(expect.arrayContaining(['app-01', 'app-02']));
    expect(names).not.toContain('debian-install');
    expect((await page.locator('.card-meta').allTextContents()).every((m) => m.startsWith('VirtualMachine'))).toBe(true);
    await b.shot('overview-cards-filtered');
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(param('kind')).toBeNull();
  });

  test('a drift made through the simulator shows in the drawer, field by field; sync now fixes it', async () => {
    // Automatic sync would repair the drift before anyone could look at it.
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Apply changes automatically').uncheck();
    await saveSettings();
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('button', { name: 'Cards' }).click();
    const changed = await simRequest(backend, 'PUT', '/nodes/pve1/qemu/120/config', { cores: '4' });
    expect(changed.status, changed.body).toBe(200);
    // The change waits as pending on the running VM, which /cluster/resources
    // does not show: the daemon finds it on its next full read of the guest,
    // spread over reconcile.driftCheckInterval, or at once when someone opens
    // the guest's drawer, as here.
    await (await shownCard('VirtualMachine', 'app-01')).click();
    const drawer = page.getByRole('dialog', { name: 'VirtualMachine app-01' });
    await drawer.waitFor();
    await until('app-01 is out of sync', hasStatus(card('VirtualMachine', 'app-01'), 'OutOfSync'));
    const row = drawer.locator('.changes tbody tr', { hasText: 'cores' });
    await row.waitFor();
    expect(await row.locator('td').allTextContents()).toEqual(['cores', '4', '2']);
    // The aligned diff: one row for cores, the manifest's 2 beside the cluster's 4.
    const aligned = drawer.locator('.aligned tr.changed', { hasText: 'cores' });
    await aligned.waitFor();
    // The running VM got the change as pending: the cluster's side says it waits for a reboot.
    expect(await aligned.locator('td').allTextContents()).toEqual(['2', '4pending: waits for a reboot']);
    // Cloud-init decoded: the manifest's key and the cluster's, one per line.
    const keys = drawer.locator('.aligned tr', { has: page.locator('th', { hasText: /^sshkeys$/ }) });
    expect((await keys.locator('td').first().textContent()) ?? '').toMatch(/^ssh-ed25519 \S+…\S+ alice@laptop$/);
    await b.shot('drawer-drift');
    await audit('drawer-aligned-diff');
    await drawer.getByRole('tab', { name: 'Desired manifest' }).click();
    expect(await drawer.getByLabel('Desired manifest, vms/app-01.yaml').textContent()).toContain("# The seed's cloud-image VM.");
    await audit('drawer-desired-manifest');
    await drawer.getByRole('tab', { name: 'Live manifest' }).click();
    const live = drawer.getByLabel('Live config, as Proxmox answers it');
    await expect.poll(() => live.textContent()).toMatch(/^cores: 4$/m);
    await b.shot('drawer-live-manifest');
    await audit('drawer-live-manifest');
    await drawer.getByRole('tab', { name: 'Diff' }).click();
    // The sync dialog of one resource, over the drawer.
    await drawer.getByRole('button', { name: 'Sync…' }).click();
    const one = page.getByRole('dialog', { name: 'Sync VirtualMachine app-01' });
    await one.getByTestId('sync-counts').waitFor({ timeout: 30_000 });
    await audit('drawer-sync-dialog');
    await one.getByRole('button', { name: 'Cancel' }).click();
    await one.waitFor({ state: 'detached' });
    await drawer.getByRole('button', { name: 'Sync now' }).click();
    await until('app-01 is synced again', hasStatus(card('VirtualMachine', 'app-01'), 'Synced'), 60_000);
    await drawer.locator('.changes').waitFor({ state: 'detached' });
    // The task log of the sync, opened.
    const log = drawer.locator('details.tasklog');
    await log.waitFor();
    if (!(await log.getAttribute('open'))) await log.locator('summary').click();
    await drawer.getByLabel('Task log lines').waitFor();
    await audit('drawer-task-log');
    await page.keyboard.press('Escape');
    await drawer.waitFor({ state: 'detached' });
    await expect.poll(() => new URL(page.url()).searchParams.get('r')).toBeNull();
  }, 240_000);

  test('a guest proxmops does not own offers no delete', async () => {
    await (await shownCard('VirtualMachine', backend.conflicting)).click();
    const drawer = page.getByRole('dialog', { name: `VirtualMachine ${backend.conflicting}` });
    await drawer.getByText('proxmops does not own this resource').waitFor();
    expect(await drawer.getByRole('button', { name: /Delete/ }).count()).toBe(0);
    await page.keyboard.press('Escape');
  });

  test('delete asks for the name typed, then the guest is gone from the cluster', async () => {
    await (await shownCard('VirtualMachine', 'app-02')).click();
    const drawer = page.getByRole('dialog', { name: 'VirtualMachine app-02' });
    await drawer.getByRole('button', { name: 'Delete…' }).click();
    const confirm = drawer.getByRole('button', { name: 'Delete', exact: true });
    expect(await confirm.isDisabled()).toBe(true);
    await drawer.getByLabel("Type the resource's name to confirm").fill('app-0');
    expect(await confirm.isDisabled()).toBe(true);
    await drawer.getByLabel("Type the resource's name to confirm").fill('app-02');
    await b.shot('drawer-delete-confirm');
    await audit('drawer-delete-confirm');
    await confirm.click();
    // Its manifest is still in Git and automatic sync is off: it waits to be created again.
    await drawer.locator('.timeline li', { hasText: 'deleted' }).first().waitFor({ timeout: 60_000 });
    // The history names who deleted it: the signed-in admin, not the pass.
    expect(await drawer.locator('.timeline li', { hasText: 'deleted' }).first().textContent()).toMatch(/by admin/);
    await until('app-02 is out of sync', hasStatus(card('VirtualMachine', 'app-02'), 'OutOfSync'));
    await b.shot('drawer-after-delete');
    await page.keyboard.press('Escape');
  }, 240_000);

  test('the logs page shows the deletion, with level filter, search and pause', async () => {
    await page.getByRole('link', { name: 'Logs' }).click();
    await page.getByRole('searchbox', { name: 'Search logs' }).fill('app-02');
    await page.locator('.log-line', { hasText: /delet/i }).first().waitFor();
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('button', { name: /Resume/ }).waitFor();
    await b.shot('logs');
    await page.getByRole('button', { name: /Resume/ }).click();
    // The deletion's line links its resource and its commit.
    const done = page.locator('.log-line', { hasText: 'action=delete' }).filter({ has: page.locator('.log-res', { hasText: 'VirtualMachine/app-02' }) }).first();
    const commit = done.locator('.log-commit');
    const full = (await commit.getAttribute('title')) ?? '';
    expect(full).toMatch(/^[0-9a-f]{40}$/);
    expect(await commit.textContent()).toBe(full.slice(0, 8));
    await commit.click();
    const linked = page.locator('.rev-row[aria-current="true"]');
    await linked.waitFor();
    expect(await linked.locator('code').first().getAttribute('title')).toBe(full);
    // The linked commit lists what happened at it, each entry linking to its resource.
    const events = linked.getByRole('list', { name: /^Events at / });
    await events.getByRole('link', { name: 'VirtualMachine/app-02' }).first().waitFor();
    await b.shot('revisions-linked-from-log');
    await events.getByRole('link', { name: 'VirtualMachine/app-02' }).first().click();
    await page.getByRole('dialog', { name: 'VirtualMachine app-02' }).waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('link', { name: 'Logs' }).click();
    await page.getByRole('searchbox', { name: 'Search logs' }).fill('app-02');
    await done.locator('.log-res').click();
    await page.getByRole('dialog', { name: 'VirtualMachine app-02' }).waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('link', { name: 'Logs' }).click();
    await page.getByLabel('Minimum level').selectOption('ERROR');
    await expect.poll(() => page.locator('.log-line', { hasText: /delet/i }).count()).toBe(0);
  });

  test('plan preview of a branch lists what merging it would do', async () => {
    await page.getByRole('link', { name: 'Plan' }).click();
    await page.getByRole('heading', { name: 'Plan preview' }).waitFor();
    await page.locator('.plan-summary').waitFor();
    await page.getByLabel('Revision').fill(backend.planBranch);
    await page.getByRole('button', { name: 'Preview' }).click();
    await expect.poll(() => new URL(page.url()).searchParams.get('revision')).toBe(backend.planBranch);
    const row = page.locator('.plan-table tr', { hasText: backend.planBranchAdds });
    await row.waitFor();
    expect(await row.locator('.action').textContent()).toBe('create');
    await b.shot('plan');
    await audit('plan-of-a-branch');
  }, 240_000);

  test('dark theme, and the graph highlights one status', async () => {
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('button', { name: 'Graph' }).click();
    await page.getByRole('button', { name: /Switch to the dark theme/ }).click();
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    await page.getByLabel('Highlight').selectOption('Conflict');
    await page.locator('.gres.hl').first().waitFor();
    // The one highlighted resource is brought to the middle of the graph.
    const offCentre = () =>
      page.evaluate(() => {
        const g = document.querySelector('.react-flow')!.getBoundingClientRect();
        const n = document.querySelector('.gres.hl')!.getBoundingClientRect();
        return Math.round(Math.hypot(n.x + n.width / 2 - (g.x + g.width / 2), n.y + n.height / 2 - (g.y + g.height / 2)));
      });
    await expect.poll(offCentre).toBeLessThan(4);
    await b.shot('overview-graph-dark');
    await page.getByRole('button', { name: 'Cards' }).click();
    await b.shot('overview-cards-dark');
  });

  test('a viewer sees everything and can change nothing', async () => {
    const v = await openBrowser();
    try {
      await v.page.goto(backend.url);
      await signIn(v.page, VIEWER.username, VIEWER.password);
      await v.page.getByRole('navigation', { name: 'Pages' }).waitFor();
      expect(await v.page.getByRole('link', { name: 'Settings' }).count()).toBe(0);
      expect(await v.page.getByRole('button', { name: 'Sync all' }).count()).toBe(0);
      await v.page.goto(`${backend.url}/?view=cards&r=VirtualMachine%2Fapp-01`);
      const drawer = v.page.getByRole('dialog', { name: 'VirtualMachine app-01' });
      await drawer.locator('.timeline').waitFor();
      expect(await drawer.getByRole('button', { name: /Sync now|Delete/ }).count()).toBe(0);
      await v.shot('viewer-drawer');
      expect(v.takeProblems(), 'console errors in the viewer’s browser').toEqual([]);
    } finally {
      await v.close();
    }
  });

  test('Sync all asks first, with the plan’s counts; a dry run changes nothing; the banner goes by itself', async () => {
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('button', { name: 'Sync all' }).click();
    const dialog = page.getByRole('dialog', { name: 'Sync all resources' });
    await dialog.waitFor();
    await expect.poll(() => dialog.getByTestId('sync-counts').textContent(), { timeout: 30_000 }).toMatch(/\d+ in sync/);
    await dialog.getByRole('checkbox', { name: /Prune/ }).check();
    await expect.poll(() => dialog.getByTestId('sync-counts').textContent(), { timeout: 30_000 }).toMatch(/in sync/);
    await b.shot('sync-all-dialog');
    await audit('sync-all-dialog');
    await dialog.getByRole('checkbox', { name: /Dry run/ }).check();
    await dialog.getByRole('button', { name: 'Done' }).click();
    const banner = page.getByRole('status').filter({ hasText: /^Dry run of all resources: .*Nothing was changed\.$/ });
    await banner.waitFor();
    await banner.waitFor({ state: 'detached', timeout: 10_000 });
  }, 240_000);

  test('on a phone the diff and both manifests fit the width, and pass axe in both themes', async () => {
    for (const theme of ['light', 'dark'] as const) {
      const v = await openBrowser({ width: 390, height: 844, colorScheme: theme });
      try {
        await v.page.goto(backend.url);
        await signIn(v.page, ADMIN.username, ADMIN.password);
        await v.page.locator('header.topbar').waitFor();
        await v.page.goto(`${backend.url}/?view=cards&r=VirtualMachine%2Fapp-01`);
        const drawer = v.page.getByRole('dialog', { name: 'VirtualMachine app-01' });
        await drawer.locator('.aligned').waitFor();
        const extra = drawer.getByRole('button', { name: /^Show \d+ cluster settings?/ });
        if (await extra.count()) await extra.click();
        for (const tab of ['Diff', 'Desired manifest', 'Live manifest']) {
          await drawer.getByRole('tab', { name: tab }).click();
          await drawer.locator(tab === 'Diff' ? '.aligned' : '.tabpanel pre.yaml').waitFor();
          await settled(v.page);
          const wide = await drawer.evaluate((el) =>
            [...el.querySelectorAll('*')]
              .filter((n) => n.getBoundingClientRect().right > window.innerWidth + 1)
              .map((n) => `${n.tagName}.${n.className}: ${(n.textContent ?? '').slice(0, 40)}`)
              .slice(0, 5),
          );
          expect(wide, `${tab}: elements past the right edge`).toEqual([]);
          expect(await sidewaysScroll(v.page)).toBe(0);
          expect(await axeViolations(v.page), `${tab}, ${theme}`).toEqual([]);
          await v.shot(`phone-${theme}-drawer-${tab.toLowerCase().replace(/ /g, '-')}`);
        }
        expect(v.takeProblems(), 'console errors').toEqual([]);
      } finally {
        await v.close();
      }
    }
  }, 180_000);

  test('accounts: a viewer changes her password; an admin makes her an admin, then resets it', async () => {
    const v = await openBrowser({ width: 390, height: 844 });
    const NEW = 'vera changed it herself';
    try {
      await v.page.goto(backend.url);
      await signIn(v.page, VIEWER.username, VIEWER.password);
      await v.page.locator('.user-menu summary').click();
      await v.page.getByRole('link', { name: 'Change password' }).click();
      await v.page.getByRole('heading', { name: 'Your account', level: 1 }).waitFor();
      await v.page.getByLabel('Current password').fill('not my password');
      await v.page.getByLabel('New password', { exact: true }).fill(NEW);
      await v.page.getByLabel('New password again').fill(NEW);
      v.expectProblem(/status of 403/);
      await v.page.getByRole('button', { name: 'Change password' }).click();
      expect(await v.page.getByRole('alert').textContent()).toBe('the current password is wrong');
      await v.page.getByLabel('Current password').fill(VIEWER.password);
      await v.page.getByRole('button', { name: 'Change password' }).click();
      await v.page.getByText(/^Password changed/).waitFor();
      expect(await v.page.evaluate(() => document.scrollingElement!.scrollWidth - document.scrollingElement!.clientWidth)).toBe(0);
      await v.shot('phone-account-password-changed');
      expect(await axeViolations(v.page)).toEqual([]);

      // The admin's side: vera's role and password, on the Settings page.
      await page.getByRole('link', { name: 'Settings' }).click();
      const users = page.getByRole('region', { name: 'Users' });
      await users.getByLabel(`Role of ${VIEWER.username}`).selectOption('admin');
      await users.getByText(`${VIEWER.username} is now admin.`).waitFor();
      // Her open session has the new role at once: the next page load shows Settings.
      // Her admin page reads settings, users and tokens; they must be answered
      // before her role goes back, or they are refused (403) half-way.
      const adminReads = Promise.all(
        ['/api/v1/settings', '/api/v1/users', '/api/v1/tokens'].map((path) =>
          v.page.waitForResponse((r) => new URL(r.url()).pathname === path),
        ),
      );
      await v.page.reload();
      await v.page.locator('#pages-nav a[href="/settings"]').waitFor({ state: 'attached' });
      await adminReads;
      await users.getByLabel(`Role of ${VIEWER.username}`).selectOption('viewer');
      await users.getByText(`${VIEWER.username} is now viewer.`).waitFor();
      await users.getByRole('button', { name: 'Reset password…' }).click();
      await users.getByLabel(`New password for ${VIEWER.username}`).fill(VIEWER.password);
      await b.shot('settings-user-reset');
    await audit('settings-user-reset');
      await users.getByRole('button', { name: 'Set' }).click();
      await users.getByText(/password of vera was reset/).waitFor();
      // Her session ended with the reset; the reset password signs her in.
      v.expectProblem(/status of 401/);
      await v.page.reload();
      await v.page.getByRole('heading', { name: 'Sign in' }).waitFor();
      await signIn(v.page, VIEWER.username, VIEWER.password);
      await v.page.locator('header.topbar').waitFor();
      expect(v.takeProblems(), 'console errors in the viewer’s browser').toEqual([]);
    } finally {
      await v.close();
    }
  }, 240_000);

  // Adoption: an admin adopts the Conflict's hand-made guest from its drawer. The
  // confirmation shows the plan first, the guest's undeclared tag's removal named; the
  // adoption only tags the guest, and its history says who adopted it.
  test('adopt: a Conflict is adopted from the drawer after a confirmation that shows the plan', async () => {
    const tagged = await simRequest(backend, 'PUT', '/nodes/pve1/qemu/122/config', { tags: 'handmade' });
    expect(tagged.status, tagged.body).toBe(200);
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('button', { name: 'Cards' }).click();
    await until(`${backend.conflicting} is a conflict`, hasStatus(await shownCard('VirtualMachine', backend.conflicting), 'Conflict'));
    await (await shownCard('VirtualMachine', backend.conflicting)).click();
    const drawer = page.getByRole('dialog', { name: `VirtualMachine ${backend.conflicting}` });
    await drawer.getByRole('button', { name: 'Adopt…' }).click();
    const confirm = drawer.getByRole('alertdialog', { name: `Adopt VMID 122 on pve1 as ${backend.conflicting}?` });
    await confirm.waitFor();
    const tags = confirm.locator('tbody tr', { hasText: /^tags/ });
    expect(await tags.locator('td').allTextContents()).toEqual(['tags', 'handmade', 'adopted-by-proxmops;app;managed-by-proxmops;prod', 'ownership tag now, the rest at the next sync']);
    await confirm.getByText(/removes the tag handmade from the guest/).waitFor();
    expect(await confirm.locator('tbody tr').count()).toBeGreaterThan(1);
    await b.shot('drawer-adopt-confirm');
    await audit('drawer-adopt-confirm');
    // Nothing changed on the cluster yet.
    const before = JSON.parse((await simRequest(backend, 'GET', '/nodes/pve1/qemu/122/config')).body).data;
    expect(before.tags).toBe('handmade');
    await confirm.getByRole('button', { name: 'Adopt', exact: true }).click();
    await drawer.getByRole('status').filter({ hasText: /^Adopted\. adopted: VMID 122 on pve1 now carries managed-by-proxmops/ }).waitFor({ timeout: 30_000 });
    const after = JSON.parse((await simRequest(backend, 'GET', '/nodes/pve1/qemu/122/config')).body).data;
    expect(after.tags).toBe('adopted-by-proxmops;handmade;managed-by-proxmops');
    expect(after.memory).toBe(before.memory);
    // Automatic sync is off: the rest waits for a sync, and the history says who adopted it.
    await until(`${backend.conflicting} is out of sync`, hasStatus(card('VirtualMachine', backend.conflicting), 'OutOfSync'));
    const entry = drawer.locator('.timeline li.tl-adopted');
    await entry.waitFor();
    expect(await entry.textContent()).toMatch(/adopted.* by admin/);
    expect(await entry.textContent()).toContain('adopted VMID 122 on pve1');
    await drawer.getByRole('button', { name: 'Adopt…' }).waitFor({ state: 'detached' });
    await b.shot('drawer-adopted');
    await page.keyboard.press('Escape');
  }, 240_000);
});

// Every view of every route, at desktop and phone size, in
// both themes: no serious or critical axe violation, one h1, named table headers and,
// on a phone, nothing wider than the screen and tables stacked. The routes are the
// router's own (src/lib/routes.ts): a route without a view here fails the suite.
// Screenshots of each land in web/screenshots/.
interface View {
  name: string;
  // Opens the view from anywhere: a page load, then what the view needs clicked.
  open: (p: Page) => Promise<unknown>;
  // A console error the view provokes on purpose (a refused request).
  expect?: RegExp;
}

const go = (p: Page, path: string) => p.goto(backend.url + path);
const drawerOf = (p: Page, key: string) => p.getByRole('dialog', { name: key.replace('/', ' ') });
const openDrawer = async (p: Page, key: string) => {
  await go(p, `/?view=cards&r=${encodeURIComponent(key)}`);
  const d = drawerOf(p, key);
  await d.getByRole('region', { name: 'History' }).waitFor();
  await d.locator('.tabpanel > *').first().waitFor();
};

const LONG_VALUE = 'a-long-value-without-a-space,'.repeat(11).slice(0, 300);

const VIEWS: Record<RoutePath | '*', View[]> = {
  '/': [
    { name: 'overview-graph', open: async (p) => (await go(p, '/?view=graph'), p.locator('.react-flow__node .gres').first().waitFor()) },
    { name: 'overview-cards', open: async (p) => (await go(p, '/?view=cards'), p.locator('.card').first().waitFor()) },
    {
      // The right-most filter menu, the one closest to the screen's edge.
      name: 'overview-filter-menu-open',
      open: async (p) => {
        await go(p, '/?view=cards');
        await p.locator('summary', { hasText: 'Tag' }).click();
        await p.getByRole('group', { name: 'Tag' }).getByRole('checkbox').first().waitFor();
      },
    },
    {
      name: 'user-menu-open',
      open: async (p) => {
        await go(p, '/?view=cards');
        await p.locator('.user-menu summary').click();
        await p.getByRole('button', { name: 'Sign out' }).waitFor();
      },
    },
    {
      // Two replicas, the other one leading (the daemon under test is a single one).
      name: 'replica-badge',
      open: async (p) => {
        await p.route('**/api/v1/replicas', (r) =>
          r.fulfill({
            json: { role: 'follower', replica: 'proxmops-b', leader: { replica: 'proxmops-a', host: 'pve-ha-1', pid: 4242, term: 7, since: new Date(Date.now() - 600_000).toISOString() } },
          }),
        );
        try {
          await go(p, '/?view=cards');
          await p.locator('.replica-badge').waitFor();
        } finally {
          await p.unroute('**/api/v1/replicas');
        }
      },
    },
    { name: 'drawer-synced', open: (p) => openDrawer(p, 'VirtualMachine/app-01') },
    {
      name: 'drawer-task-log',
      open: async (p) => {
        await openDrawer(p, 'VirtualMachine/app-01');
        await p.locator('.tasklog summary').click();
        await p.getByLabel('Task log lines').waitFor();
      },
    },
    // Deleted by the scenario above, its manifest still in Git: a create, nothing on the cluster.
    { name: 'drawer-to-create', open: (p) => openDrawer(p, 'VirtualMachine/app-02') },
    {
      // Adopted above, the rest of its manifest not applied yet: changed rows in the
      // aligned diff; and a description set by hand, 300 characters without a space,
      // cut in the diff with the whole of it as the tooltip.
      name: 'drawer-out-of-sync',
      open: async (p) => {
        const set = await simRequest(backend, 'PUT', '/nodes/pve1/qemu/122/config', { description: LONG_VALUE });
        expect(set.status, set.body).toBe(200);
        const key = `VirtualMachine/${backend.conflicting}`;
        const long = drawerOf(p, key).locator(`.aligned .val[title="${LONG_VALUE}"]`);
        const end = Date.now() + 30_000;
        for (;;) {
          // Opening the drawer has the daemon read the guest; the next opening shows it.
          await openDrawer(p, key);
          const more = drawerOf(p, key).getByRole('button', { name: /^Show \d+ cluster settings?/ });
          if (await more.count()) await more.click();
          if (await long.count()) break;
          if (Date.now() > end) throw new Error('the hand-set description never showed in the drawer');
          await p.waitForTimeout(500);
        }
        expect(await long.textContent()).toBe(`${LONG_VALUE.slice(0, 160)}…`);
      },
    },
    {
      name: 'drawer-sync-dialog',
      open: async (p) => {
        await openDrawer(p, `VirtualMachine/${backend.conflicting}`);
        await p.getByRole('button', { name: 'Sync…' }).click();
        await p.getByRole('dialog', { name: `Sync VirtualMachine ${backend.conflicting}` }).getByTestId('sync-counts').waitFor();
      },
    },
    {
      name: 'sync-all-dialog',
      open: async (p) => {
        await go(p, '/?view=cards');
        await p.getByRole('button', { name: 'Sync all' }).click();
        await p.getByRole('dialog', { name: 'Sync all resources' }).getByTestId('sync-counts').waitFor({ timeout: 30_000 });
      },
    },
  ],
  '/plan': [
    { name: 'plan', open: async (p) => (await go(p, '/plan'), p.locator('.plan-summary').waitFor()) },
    {
      name: 'plan-of-a-branch',
      open: async (p) => {
        await go(p, `/plan?revision=${encodeURIComponent(backend.planBranch)}`);
        await p.locator('.plan-table tr', { hasText: backend.planBranchAdds }).waitFor();
      },
    },
  ],
  '/revisions': [
    { name: 'revisions', open: async (p) => (await go(p, '/revisions'), p.locator('.rev-row').first().waitFor()) },
    {
      name: 'revisions-events-and-confirm',
      open: async (p) => {
        await go(p, '/revisions');
        const row = p.locator('.rev-row').first();
        await row.getByRole('button', { name: /^Show what happened/ }).click();
        await row.getByRole('list', { name: /^Events at / }).waitFor();
        // The commit applied now offers no sync to itself; an older one, if any, asks first.
        const older = p.locator('.rev-row').getByRole('button', { name: /^Sync to this revision/ }).first();
        if (await older.count()) {
          await older.click();
          await p.getByRole('group', { name: /^Confirm sync to / }).waitFor();
        }
      },
    },
  ],
  '/previews': [{ name: 'previews', open: async (p) => (await go(p, '/previews'), p.getByRole('heading', { name: 'No open requests' }).waitFor()) }],
  '/logs': [{ name: 'logs', open: async (p) => (await go(p, '/logs'), p.locator('.log-line').first().waitFor()) }],
  '/settings': [
    { name: 'settings', open: async (p) => (await go(p, '/settings'), p.getByLabel('API endpoint').waitFor()) },
    {
      name: 'accounts-reset-form',
      open: async (p) => {
        await go(p, '/settings');
        const users = p.getByRole('region', { name: 'Users' });
        await users.getByRole('button', { name: 'Reset password…' }).click();
        await users.getByLabel(`New password for ${VIEWER.username}`).scrollIntoViewIfNeeded();
      },
    },
    {
      name: 'settings-export-error',
      expect: /status of 400/,
      open: async (p) => {
        await go(p, '/settings');
        const panel = p.getByRole('region', { name: 'Export' });
        await panel.getByLabel('VMIDs to export').fill('not-a-vmid');
        await panel.getByRole('button', { name: /^Download manifests/ }).click();
        await panel.getByRole('alert').waitFor();
        await panel.scrollIntoViewIfNeeded();
      },
    },
  ],
  '*': [{ name: 'not-found', open: async (p) => (await go(p, '/no-such-page'), p.getByRole('heading', { name: 'Not found', level: 1 }).waitFor()) }],
};

// accessibleName is the name Chromium's accessibility tree gives the first element
// matching selector.
async function accessibleName(p: Page, selector: string): Promise<string> {
  const cdp = await p.context().newCDPSession(p);
  try {
    const { root } = await cdp.send('DOM.getDocument', { depth: 0 });
    const { nodeId } = await cdp.send('DOM.querySelector', { nodeId: root.nodeId, selector });
    const { nodes } = await cdp.send('Accessibility.getPartialAXTree', { nodeId, fetchRelatives: false });
    return String(nodes[0]?.name?.value ?? '');
  } finally {
    await cdp.detach();
  }
}

describe.each(SIZES.flatMap((s) => (['light', 'dark'] as const).map((theme) => ({ ...s, theme }))))(
  'accessibility and layout: $size, $theme theme',
  ({ size, width, height, theme }) => {
    const phone = size === 'phone';
    let s: BrowserSession;
    const boot: Record<string, string[]> = {};
    const check = async (name: string) => {
      const problems = (await axeViolations(s.page)).map((v) => `axe ${v.impact} ${v.id}: ${v.help}: ${v.nodes.join(' | ')}`);
      if (phone) {
        const px = await sidewaysScroll(s.page);
        if (px > 0) problems.push(`the page scrolls ${px}px sideways`);
      }
      problems.push(...(await layoutProblems(s.page, phone)));
      await s.shot(`${size}-${theme}-${name}`);
      return problems;
    };
    beforeAll(async () => {
      s = await openBrowser({ colorScheme: theme, width, height });
      // The page shown when the daemon does not answer.
      await s.page.route('**/api/v1/setup', (r) => r.fulfill({ status: 503, json: { error: 'the daemon is starting' } }));
      s.expectProblem(/status of 503/);
      await s.page.goto(backend.url);
      await s.page.getByRole('heading', { name: 'Cannot reach proxmops', level: 1 }).waitFor();
      const down = await check('cannot-reach');
      if (down.length) boot['cannot-reach'] = down;
      await s.page.unroute('**/api/v1/setup');
      await s.page.goto(backend.url);
      await s.page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
      const login = await check('login');
      if (login.length) boot.login = login;
      await signIn(s.page, ADMIN.username, ADMIN.password);
      await s.page.locator('header.topbar').waitFor();
    });
    afterAll(async () => {
      await s?.close();
    });

    if (size === 'desktop' && theme === 'light') {
      test('every route of the router has views checked here, and the navigation links to routes only', async () => {
        expect(Object.keys(VIEWS).sort()).toEqual([...ROUTES.map((r) => r.path), '*'].sort());
        for (const [path, views] of Object.entries(VIEWS)) expect(views.length, `views of ${path}`).toBeGreaterThan(0);
        await go(s.page, '/');
        await s.page.locator('#pages-nav a').first().waitFor({ state: 'attached' });
        const links = await s.page.locator('#pages-nav a').evaluateAll((as) => as.map((a) => new URL((a as HTMLAnchorElement).href).pathname));
        expect(links.sort()).toEqual(ROUTES.map((r) => r.path).sort());
      });
    }

    test('every view: no serious or critical axe violation, one h1, named table headers' + (phone ? ', nothing wider than the screen, tables stacked' : ''), async () => {
      const found: Record<string, string[]> = { ...boot };
      for (const [path, views] of Object.entries(VIEWS)) {
        for (const view of views) {
          if (view.expect) s.expectProblem(view.expect);
          await view.open(s.page);
          // Let transitions (the drawer slides in) settle before measuring colours.
          await settled(s.page);
          expect(await s.page.evaluate(() => document.documentElement.dataset.theme)).toBe(theme);
          const problems = await check(view.name);
          if (phone && view.name.startsWith('drawer')) {
            // On a phone the drawer takes the whole screen.
            const box = await s.page.getByRole('dialog').first().boundingBox();
            if (!box || box.x !== 0 || box.width !== width) problems.push(`the drawer is not full-screen: ${JSON.stringify(box)}`);
          }
          if (problems.length) found[`${path} ${view.name}`] = problems;
        }
      }
      expect(found).toEqual({});
      expect(s.takeProblems(), 'console errors').toEqual([]);
    }, 300_000);

    test("the user menu's accessible name is its text, the user's name", async () => {
      await go(s.page, '/plan');
      const summary = s.page.locator('.user-menu summary');
      await summary.waitFor();
      const text = await summary.evaluate((el) =>
        [...el.childNodes]
          .filter((n) => !(n instanceof Element && n.getAttribute('aria-hidden') === 'true'))
          .map((n) => n.textContent)
          .join('')
          .trim(),
      );
      expect(text).toBe(ADMIN.username);
      expect(await accessibleName(s.page, '.user-menu summary')).toBe(text);
    });

    test('the log list is reached with Tab and scrolled with the keyboard', async () => {
      await go(s.page, '/logs');
      await s.page.locator('.log-line').first().waitFor();
      // Every level: more lines than the list shows at once.
      await s.page.getByLabel('Minimum level').selectOption('DEBUG');
      await expect.poll(() => s.page.getByRole('region', { name: 'Log lines' }).evaluate((el) => el.scrollHeight > el.clientHeight + 100)).toBe(true);
      await s.page.getByRole('button', { name: 'Pause' }).focus();
      await s.page.keyboard.press('Tab');
      expect(await s.page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Log lines');
      const list = s.page.getByRole('region', { name: 'Log lines' });
      const top = () => list.evaluate((el) => el.scrollTop);
      const focused = () => s.page.evaluate(() => document.activeElement?.getAttribute('aria-label'));
      // New lines keep arriving while the list is followed: the keys act on
      // the list as long as it keeps the focus (checked each time), and
      // Chromium's keyboard scroll is animated and may be cut short on a
      // busy machine, so Home and End are pressed until the list has moved.
      await expect
        .poll(async () => {
          expect(await focused()).toBe('Log lines');
          if ((await top()) !== 0) await s.page.keyboard.press('Home');
          return top();
        })
        .toBe(0);
      await expect
        .poll(async () => {
          expect(await focused()).toBe('Log lines');
          await s.page.keyboard.press('End');
          return top();
        })
        .toBeGreaterThan(0);
    });

    if (phone) {
      test('the pages fold into a menu button that says whether it is open', async () => {
        await go(s.page, '/');
        const menu = s.page.getByRole('button', { name: 'Menu' });
        const plan = s.page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Plan' });
        expect(await menu.getAttribute('aria-expanded')).toBe('false');
        expect(await plan.isVisible()).toBe(false);
        await menu.click();
        expect(await menu.getAttribute('aria-expanded')).toBe('true');
        await plan.waitFor({ state: 'visible' });
        expect(await check('menu-open')).toEqual([]);
        await plan.click();
        await s.page.getByRole('heading', { name: 'Plan preview', level: 1 }).waitFor();
        expect(await menu.getAttribute('aria-expanded')).toBe('false');
      });
    }
  },
);
