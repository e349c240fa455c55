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
    // The files of a worker share one module graph: the server's modules are loaded once per worker,
    // not once per file (about 2.5 s of CPU each), and so are PGlite's compiled code and the
    // migrated database image. Nothing a test leaves in a module may be another file's business:
    // temporary files go under the run's folder (src/test/global-setup.ts).
    isolate: false,
    // Vitest defaults to one worker on a 2-core machine; the suites are I/O-bound enough
    // (PGlite, openssl, child servers) that two files at a time halve the wall time.
    maxWorkers: 2,
    // Tests that only wait on the server's timeouts run side by side (it.concurrent).
    maxConcurrency: 16,
  },
});
