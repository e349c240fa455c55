import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
  test: {
    include: ['src/**/*.test.ts'],
    globalSetup: ['src/global-setup.ts'],
    // One Chromium and one server at a time: the machine has 2 cores.
    fileParallelism: false,
    testTimeout: 180_000,
    // A page that waits for a lazily loaded part and an answer can take more than a second on a
    // busy machine; a poll that succeeds returns at once, so only failures wait this long.
    expect: { poll: { timeout: 60_000 } },
    hookTimeout: 300_000,
  },
});
