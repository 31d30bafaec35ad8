import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import type { TestProject } from 'vitest/node';
import { startRealBackend } from './daemon';
import { SCREENSHOT_DIR } from './harness';

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

  // The binary is built after the UI, so it embeds this very build.
  const backend = await startRealBackend(join(webDir, '..'));
  console.log(`e2e: proxmops serve at ${backend.info.url}, simulator at ${backend.info.sim.apiURL}; output in ${backend.info.logDir}`);
  project.provide('backend', backend.info);
  return async () => {
    await backend.close();
  };
}
