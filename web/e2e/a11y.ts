// axe-core in the browser under test: the checks of issue 13 (no serious or critical
// violation on any page, in both themes) and the phone-width check (no page scrolls
// sideways at 390x844).

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

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
    const r = await axe.run(document, { resultTypes: ['violations'] });
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
