// The 1,000 resources of graph.e2e.ts and the API answers that serve them.

import { loadavg } from 'node:os';
import type { Page } from 'playwright-core';
import type { Dependency, Resource, Summary } from '../src/api/types';
import { partial } from '../src/test/partial';

// manyResources builds n resources the way a big repository declares them.
export function manyResources(n: number): Resource[] {
  const out: Resource[] = [];
  const nodes = ['pve1', 'pve2', 'pve3'];
  const statuses = ['Synced', 'Synced', 'Synced', 'Synced', 'OutOfSync', 'Progressing', 'Failed', 'Unknown'] as const;
  const add = (kind: string, name: string, i: number, node: string | undefined, dependsOn?: Dependency[]) =>
    out.push(partial({ kind, name, node, status: statuses[i % statuses.length], tags: [], dependsOn, vmid: kind === 'VirtualMachine' || kind === 'Container' ? 1000 + out.length : undefined }));
  for (let i = 0; i < 4; i++) add('SdnZone', `zone${i}`, i, undefined);
  for (let i = 0; i < 20; i++) add('SdnVnet', `vnet${i}`, i, undefined, [{ kind: 'SdnZone', name: `zone${i % 4}`, relation: 'inZone' }]);
  for (let i = 0; i < 6; i++) add('Network', `${nodes[i % 3]}-vmbr${1 + Math.floor(i / 3)}`, i, nodes[i % 3]);
  for (let i = 0; i < 12; i++) add('Template', `tpl-${i}`, i, nodes[i % 3]);
  for (let i = 0; i < 8; i++) add('Iso', `iso-${i}`, i, nodes[i % 3]);
  for (let i = 0; i < 10; i++) add('ContainerTemplate', `ct-tpl-${i}`, i, nodes[i % 3]);
  const rest = n - out.length;
  const cts = Math.floor(rest / 4);
  for (let i = 0; i < cts; i++) {
    add('Container', `ct-${String(i).padStart(4, '0')}`, i, nodes[i % 3], [
      { kind: 'ContainerTemplate', name: `ct-tpl-${i % 10}`, relation: 'builtFrom' },
      { kind: 'SdnVnet', name: `vnet${i % 20}`, relation: 'uses' },
    ]);
  }
  for (let i = 0; i < rest - cts; i++) {
    const deps: Dependency[] = [];
    if (i % 3 !== 2) deps.push({ kind: 'Template', name: `tpl-${i % 12}`, relation: 'clones' });
    else deps.push({ kind: 'Iso', name: `iso-${i % 8}`, relation: 'mounts' });
    deps.push(i % 2 ? { kind: 'SdnVnet', name: `vnet${i % 20}`, relation: 'uses' } : { kind: 'Network', name: `${nodes[i % 3]}-vmbr1`, relation: 'uses' });
    add('VirtualMachine', `vm-${String(i).padStart(4, '0')}`, i, nodes[i % 3], deps);
  }
  return out;
}

export const RESOURCES = manyResources(1000);

export async function fakeAPI(page: Page) {
  const summary: Summary = partial({
    revision: 'f00dfeedf00dfeedf00dfeedf00dfeedf00dfeed',
    revisionMessage: 'a thousand resources',
    lastPass: new Date().toISOString(),
    passDurationMs: 900,
    sourceError: '',
    counts: {},
    resources: RESOURCES,
  });
  // Signed in as far as the page knows (App.tsx's hint); /api/v1/me says who.
  await page.addInitScript(() => localStorage.setItem('proxmops.signedIn', '1'));
  await page.route('**/api/v1/**', async (route) => {
    const path = new URL(route.request().url()).pathname;
    const json = (body: unknown) => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(body) });
    switch (path) {
      case '/api/v1/setup':
        return json({ needed: false });
      case '/api/v1/me':
        return json({ username: 'perf', role: 'admin', csrfToken: 'x' });
      case '/api/v1/replicas':
        return json({ role: 'single', replica: 'perf' });
      case '/api/v1/resources':
        return json(summary);
      case '/api/v1/events':
        // An open stream with nothing in it; the browser waits long before asking again.
        return route.fulfill({ status: 200, contentType: 'text/event-stream', body: 'retry: 600000\n: nothing\n\n' });
    }
    return route.fulfill({ status: 404, contentType: 'application/json', body: '{"error":"not in this test"}' });
  });
}


export interface Measure {
  frames: number;
  ms: number;
  fps: number;
  // The longest gap between two frames, in ms.
  worstFrameMs: number;
  // CPU time of the page's main thread per frame (ms), and the frame rate that
  // would give on a core of its own: on a loaded machine the page waits for a core
  // far longer than it works, and fps alone measures the load.
  cpuMsPerFrame: number;
  fpsOnOwnCore: number;
  // The machine's 1-minute load average when measured (2 cores).
  load: number;
}

// measure counts animation frames while act() runs, and the main thread's CPU time.
export async function measure(page: Page, act: () => Promise<void>): Promise<Measure> {
  const cdp = await page.context().newCDPSession(page);
  // threadTicks: TaskDuration counts the main thread's CPU time, not wall time.
  await cdp.send('Performance.enable', { timeDomain: 'threadTicks' } as never);
  const cpu = async () =>
    ((await cdp.send('Performance.getMetrics')) as { metrics: { name: string; value: number }[] }).metrics.find((m) => m.name === 'TaskDuration')?.value ?? 0;
  await page.evaluate(() => {
    const w = window as unknown as { __frames: number[]; __stop: boolean };
    w.__frames = [];
    w.__stop = false;
    const tick = (t: number) => {
      w.__frames.push(t);
      if (!w.__stop) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  const cpu0 = await cpu();
  await act();
  const frames = await page.evaluate(() => {
    const w = window as unknown as { __frames: number[]; __stop: boolean };
    w.__stop = true;
    return w.__frames;
  });
  const cpuMs = ((await cpu()) - cpu0) * 1000;
  await cdp.detach();
  const ms = frames[frames.length - 1] - frames[0];
  const n = frames.length - 1;
  let worst = 0;
  for (let i = 1; i < frames.length; i++) worst = Math.max(worst, frames[i] - frames[i - 1]);
  const perFrame = cpuMs / Math.max(n, 1);
  return {
    frames: n,
    ms: Math.round(ms),
    fps: Math.round((n / ms) * 1000 * 10) / 10,
    worstFrameMs: Math.round(worst),
    cpuMsPerFrame: Math.round(perFrame * 10) / 10,
    fpsOnOwnCore: Math.round(Math.min(60, 1000 / perFrame)),
    load: Math.round(loadavg()[0] * 10) / 10,
  };
}

// panAndZoom drags the pane around a circle, then zooms in and out with the wheel
// (Control held: plain wheel pans), for about `ms` milliseconds.
export async function panAndZoom(page: Page, ms: number) {
  const box = (await page.locator('.react-flow__pane').boundingBox())!;
  const cx = box.x + box.width / 2;
  const cy = box.y + box.height / 2;
  const end = Date.now() + ms;
  await page.mouse.move(cx, cy);
  await page.mouse.down();
  let a = 0;
  while (Date.now() < end - ms / 2) {
    a += 0.08;
    await page.mouse.move(cx + Math.cos(a) * 200, cy + Math.sin(a) * 120);
    await page.waitForTimeout(8);
  }
  await page.mouse.up();
  await page.keyboard.down('Control');
  let dir = -1;
  let n = 0;
  while (Date.now() < end) {
    await page.mouse.wheel(0, dir * 40);
    await page.waitForTimeout(8);
    if (++n % 15 === 0) dir = -dir;
  }
  await page.keyboard.up('Control');
}

