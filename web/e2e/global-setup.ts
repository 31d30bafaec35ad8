import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import type { TestProject } from 'vitest/node';
import type { BackendInfo } from './backend';
import { SCREENSHOT_DIR } from './harness';
import { startFakeDaemon } from './stopgap/fake-daemon';

const webDir = join(dirname(fileURLToPath(import.meta.url)), '..');

export default async function setup(project: TestProject) {
  // Test the UI as it is in the source tree, built as `make build` embeds it.
  // Vitest sets NODE_ENV=test, and Vite would then bundle React's slow development
  // build; the test must see what users get.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({ root: webDir, logLevel: 'warn', configFile: join(webDir, 'vite.config.ts'), mode: 'production' });
  } finally {
    process.env.NODE_ENV = nodeEnv;
  }
  rmSync(SCREENSHOT_DIR, { recursive: true, force: true });

  // STOP-GAP: until `proxmops serve` is on main, the tests run against a fake.
  const fake = await startFakeDaemon({ distDir: join(webDir, 'embedded', 'dist') });
  const info: BackendInfo = { kind: 'stopgap', url: fake.url, setupToken: fake.setupToken, driftURL: `${fake.url}/__stopgap/drift` };
  console.log(`e2e: running against the STOP-GAP fake daemon at ${fake.url} (proxmops serve is not available yet)`);
  project.provide('backend', info);
  return async () => {
    await fake.close();
  };
}
