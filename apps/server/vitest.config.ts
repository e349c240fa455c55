import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
  test: {
    include: ['src/**/*.test.ts'],
    globalSetup: ['src/test/global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 300_000,
    pool: 'forks',
    // Vitest defaults to one worker on a 2-core machine; the suites are I/O-bound enough
    // (PGlite, openssl, child servers) that two files at a time halve the wall time.
    maxWorkers: 2,
    // Tests that only wait on the server's timeouts run side by side (it.concurrent).
    maxConcurrency: 16,
  },
});
