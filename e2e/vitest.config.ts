import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
  test: {
    include: ['src/**/*.test.ts'],
    globalSetup: ['src/global-setup.ts'],
    // Two files at a time, each with its own server and Chromium: much of a browser test is waiting
    // for a page or a server's answer, which the other file's work fills.
    maxWorkers: 2,
    // A worker's files share one module graph: the server's and the doubles' modules load once per
    // worker, not once per file. Each file still starts its own server, stores and browser.
    isolate: false,
    testTimeout: 180_000,
    // A page that waits for a lazily loaded part and an answer can take more than a second on a
    // busy machine; a poll that succeeds returns at once, so only failures wait this long.
    expect: { poll: { timeout: 60_000 } },
    hookTimeout: 300_000,
  },
});
