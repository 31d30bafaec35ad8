// axe-core in the browser under test: the accessibility checks (no serious or critical
// violation on any page, in both themes) and the phone-width check (no page scrolls
// sideways at 390x844).

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { settled } from './settle';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface Violation {
  id: string;
  impact: string;
  help: string;
  nodes: string[];
}

// axeViolations runs axe on the page as it is and returns the serious and critical
// violations, each with the selectors of (at most five of) its nodes. The source is
// evaluated through the DevTools protocol, which the page's CSP does not govern.
export async function axeViolations(page: Page): Promise<Violation[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
  const found = await page.evaluate(async () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const axe = (window as any).axe;
    // label-content-name-mismatch is experimental in axe, off unless asked for: a
    // control's accessible name must contain its visible text (WCAG 2.5.3).
    const r = await axe.run(document, { resultTypes: ['violations'], rules: { 'label-content-name-mismatch': { enabled: true } } });
    return (r.violations as { id: string; impact: string; help: string; nodes: { target: string[]; failureSummary?: string }[] }[]).map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 5).map((n) => `${n.target.join(' ')} :: ${(n.failureSummary ?? '').split('\n').slice(1, 2).join('').trim()}`),
    }));
  });
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

// sidewaysScroll is how many pixels the page scrolls horizontally (0 when it fits).
export async function sidewaysScroll(page: Page): Promise<number> {
  return page.evaluate(() => {
    const el = document.scrollingElement!;
    return el.scrollWidth - el.clientWidth;
  });
}

// layoutProblems lists what breaks the UI's layout rules on the page as it
// is: an element reaching past the viewport's sides outside a scroll or clip
// container (a code block, an ellipsis) that itself fits; on a phone also a table
// of more than three columns that is not stacked into rows. And, at any size, a
// page without exactly one h1 or a table header without a name.
export async function layoutProblems(page: Page, phone: boolean): Promise<string[]> {
  return page.evaluate((phone) => {
    const out: string[] = [];
    const vw = document.documentElement.clientWidth;
    const name = (el: Element) =>
      `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}${typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\s+/).join('.') : ''} "${(el.textContent ?? '').trim().slice(0, 40)}"`;
    const fits = (r: DOMRect) => r.left >= -1 && r.right <= vw + 1;
    for (const el of document.body.querySelectorAll('*')) {
      const r = el.getBoundingClientRect();
      if ((r.width === 0 && r.height === 0) || fits(r)) continue;
      // Not drawn: in a closed <details> (content-visibility: hidden) or hidden.
      if (!el.checkVisibility({ visibilityProperty: true })) continue;
      // Wholly off-screen to the left is the skip link's resting place: nothing scrolls to it.
      if (r.right <= 0) continue;
      // Clipped by a container (any of its ancestors) that itself fits: it cannot stick out.
      let contained = false;
      for (let a = el.parentElement; a && a !== document.body && !contained; a = a.parentElement) {
        contained = getComputedStyle(a).overflowX !== 'visible' && fits(a.getBoundingClientRect());
      }
      if (!contained) out.push(`wider than the viewport (${Math.round(r.left)}..${Math.round(r.right)} of ${vw}): ${name(el)}`);
      if (out.length > 8) break;
    }
    const h1 = document.querySelectorAll('h1').length;
    if (h1 !== 1) out.push(`${h1} h1 elements`);
    for (const th of document.querySelectorAll('th')) {
      if (!(th.textContent ?? '').trim() && !th.getAttribute('aria-label')) out.push(`a table header without a name: ${name(th.closest('table')!)}`);
    }
    if (phone) {
      for (const t of document.querySelectorAll('table')) {
        const cols = Math.max(0, ...[...t.rows].map((row) => row.cells.length));
        if (cols > 3 && getComputedStyle(t).display === 'table' && t.getBoundingClientRect().width > 0) out.push(`a table of ${cols} columns not stacked on a phone: ${name(t)}`);
      }
    }
    return out;
  }, phone);
}

export const SIZES = [
  { size: 'desktop', width: 1440, height: 900 },
  { size: 'phone', width: 390, height: 844 },
] as const;

// auditEverywhere checks the page as it is (a dialog open, a tab chosen) at desktop
// and phone size in both themes: axe, sideways scroll and layoutProblems. The size
// is the viewport's; the theme is set on <html> as the app sets it (useTheme), so
// an open dialog stays open. A screenshot of each lands in web/screenshots/.
// Returns the problems found, keyed by size and theme (empty when all is well).
export async function auditEverywhere(page: Page, what: string, shot: (name: string) => Promise<string>): Promise<Record<string, string[]>> {
  const before = { size: page.viewportSize(), theme: await page.evaluate(() => document.documentElement.dataset.theme) };
  const found: Record<string, string[]> = {};
  try {
    for (const s of SIZES) {
      await page.setViewportSize({ width: s.width, height: s.height });
      for (const theme of ['light', 'dark'] as const) {
        await page.evaluate((t) => (document.documentElement.dataset.theme = t), theme);
        // Let the layout and any transition settle before measuring colours.
        await settled(page);
        const problems = (await axeViolations(page)).map((v) => `axe ${v.impact} ${v.id}: ${v.help}: ${v.nodes.join(' | ')}`);
        if (s.size === 'phone') {
          const px = await sidewaysScroll(page);
          if (px > 0) problems.push(`the page scrolls ${px}px sideways`);
        }
        problems.push(...(await layoutProblems(page, s.size === 'phone')));
        if (problems.length) found[`${what}, ${s.size}, ${theme}`] = problems;
        await shot(`${what}-${s.size}-${theme}`);
      }
    }
  } finally {
    if (before.size) await page.setViewportSize(before.size);
    await page.evaluate((t) => {
      if (t) document.documentElement.dataset.theme = t;
    }, before.theme);
  }
  return found;
}
