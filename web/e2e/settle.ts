// Waiting for the page to stand still, instead of waiting a fixed time: a
// drawer that slides in, a theme's colour transition or React Flow's animated
// fit and zoom are done when no finite animation runs and the graph's viewport
// transform has not moved for a few frames.

import type { Page } from 'playwright-core';

// settled resolves once no finite CSS or Web animation runs and React Flow's
// viewport (when there is one) kept its transform for three frames in a row.
export async function settled(page: Page, timeoutMs = 10_000): Promise<void> {
  await page.waitForFunction(
    () => {
      const w = window as unknown as { __settle?: { key: string; frames: number } };
      const running = document
        .getAnimations()
        .some((a) => a.playState === 'running' && a.effect?.getComputedTiming().endTime !== Infinity);
      const key = `${document.querySelector<HTMLElement>('.react-flow__viewport')?.style.transform ?? ''}|${running}`;
      if (running || w.__settle?.key !== key) {
        w.__settle = { key, frames: 0 };
        return false;
      }
      w.__settle.frames++;
      return w.__settle.frames >= 3;
    },
    undefined,
    { polling: 'raf', timeout: timeoutMs },
  );
  await page.evaluate(() => delete (window as unknown as { __settle?: unknown }).__settle);
}

// until polls check until it holds, a check that throws counting as not yet,
// and fails after timeoutMs naming what it waited for and where the processes'
// output is.
export async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number, outputIn: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const holds = await Promise.resolve()
      .then(check)
      .catch(() => false);
    if (holds) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting until ${what} (output in ${outputIn})`);
}
