/// <reference types="vitest/config" />
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { existsSync } from 'node:fs';

// The e2e suite drives Chromium (web/e2e/harness.ts). Without it the suite is
// skipped with a message on a developer's machine, and fails in CI, whose
// .ci/run installs it.
const chromium = process.env.PROXMOPS_CHROMIUM ?? '/usr/bin/chromium';
const runE2E = existsSync(chromium) || !!process.env.CI;
if (!runE2E && process.env.VITEST) {
  console.warn(`e2e: skipped: no Chromium at ${chromium} (apt-get install chromium, or set PROXMOPS_CHROMIUM)`);
}

// The build lands in embedded/dist, next to the committed fallback page, so that
// embed.go can always embed the embedded/ directory (go:embed fails on a missing one).
export default defineConfig({
  plugins: [react()],
  build: {
    outDir: 'embedded/dist',
    emptyOutDir: true,
    chunkSizeWarningLimit: 1200,
  },
  server: {
    // `npm run dev` proxies the API to a daemon started with `proxmops serve`.
    proxy: { '/api': { target: process.env.PROXMOPS_URL ?? 'http://127.0.0.1:8080', changeOrigin: false } },
  },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          environment: 'happy-dom',
          include: ['src/**/*.test.{ts,tsx}'],
          setupFiles: ['src/test/setup.ts'],
          globals: true,
        },
      },
      ...(runE2E ? [{
        extends: true as const,
        test: {
          name: 'e2e',
          environment: 'node',
          include: ['e2e/**/*.e2e.ts'],
          globalSetup: ['e2e/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 240_000,
          fileParallelism: false,
        },
      }] : []),
    ],
  },
});
