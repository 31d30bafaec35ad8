// Browser harness for the end-to-end tests: Debian's Chromium driven by
// playwright-core (no browser download), a fresh profile per run, every console
// error and uncaught exception collected so that a test fails on them, and
// screenshots saved under web/screenshots/ (git-ignored) to be looked at.

import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { startDemo, type RunningDemo } from './daemon';

export const CHROMIUM = process.env.PROXMOPS_CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];
export const SCREENSHOT_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'screenshots');

// One numbering for every browser of a run, so the files sort in the order taken.
let shots = 0;

export interface BrowserSession {
  context: BrowserContext;
  page: Page;
  // Problems seen so far: console errors, uncaught exceptions, failed requests.
  problems: string[];
  // Lets a console message matching `pattern` through once, for an error the test
  // provokes on purpose (a wrong password answered with 401, for example).
  expectProblem: (pattern: RegExp) => void;
  takeProblems: () => string[];
  shot: (name: string) => Promise<string>;
  close: () => Promise<void>;
}

// signIn fills in the sign-in form page shows and sends it.
export async function signIn(page: Page, username: string, password: string) {
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

// openSignedIn opens a browser on the UI at url and signs in as who, returning
// once the signed-in app's page navigation is there.
export async function openSignedIn(url: string, who: { username: string; password: string }): Promise<BrowserSession> {
  const b = await openBrowser({ width: 1440, height: 900 });
  await b.page.goto(url);
  await signIn(b.page, who.username, who.password);
  await b.page.getByRole('navigation', { name: 'Pages' }).waitFor();
  return b;
}

export interface DemoSession {
  demo: RunningDemo;
  b: BrowserSession;
  // Closes the browser, then stops the demo.
  close: () => Promise<void>;
}

// openDemo starts `proxmops demo` (startDemo's arguments) and a browser signed
// in to it as its admin: how a file over a demo of its own starts.
export async function openDemo(...args: Parameters<typeof startDemo>): Promise<DemoSession> {
  const demo = await startDemo(...args);
  try {
    const b = await openSignedIn(demo.url, demo.admin);
    return {
      demo,
      b,
      close: async () => {
        await b.close();
        await demo.close();
      },
    };
  } catch (err) {
    await demo.close();
    throw err;
  }
}

export async function openBrowser(opts: { colorScheme?: 'light' | 'dark'; width?: number; height?: number } = {}): Promise<BrowserSession> {
  const userDataDir = mkdtempSync(join(tmpdir(), 'proxmops-e2e-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: opts.width ?? 1440, height: opts.height ?? 900 },
    colorScheme: opts.colorScheme ?? 'light',
    timeout: 60_000,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(15_000);
  const problems: string[] = [];
  const expected: RegExp[] = [];
  const note = (text: string) => {
    const i = expected.findIndex((re) => re.test(text));
    if (i >= 0) expected.splice(i, 1);
    else problems.push(text);
  };
  page.on('console', (msg) => {
    if (msg.type() === 'error') note(`console error: ${msg.text()} (${msg.location().url})`);
  });
  page.on('pageerror', (err) => note(`uncaught exception: ${err.message}`));
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  return {
    context,
    page,
    problems,
    expectProblem: (re) => expected.push(re),
    takeProblems: () => problems.splice(0, problems.length),
    shot: async (name) => {
      const file = join(SCREENSHOT_DIR, `${String(++shots).padStart(2, '0')}-${name}.png`);
      await page.screenshot({ path: file });
      return file;
    },
    close: async () => {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

// revealCard scrolls the overview's cards, a virtual list, until the card
// is in the page: a card below the fold is not rendered until the list is
// scrolled to it. It scrolls down half a screen at a time, from the top
// again after the end, until the card shows.
export async function revealCard(page: Page, card: Locator, timeout = 30_000): Promise<Locator> {
  const list = page.locator('.vlist:has(.card)').first();
  await expect
    .poll(
      async () => {
        if (await card.count()) return true;
        await list.evaluate((el) => {
          const atEnd = el.scrollTop + el.clientHeight >= el.scrollHeight - 1;
          el.scrollTop = atEnd ? 0 : el.scrollTop + el.clientHeight / 2;
        });
        return false;
      },
      { timeout, message: `the card ${card} to show in the overview` },
    )
    .toBe(true);
  return card;
}
