import { cleanup } from '@testing-library/react';
import { afterEach, vi } from 'vitest';

// Every test starts from the real clock and the real globals (fetch,
// EventSource): whatever a test stubbed or faked ends with it.
afterEach(() => {
  cleanup();
  vi.useRealTimers();
  vi.unstubAllGlobals();
});
