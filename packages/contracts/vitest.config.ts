import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
  test: {
    // The sources only: dist holds no tests, and a stale build must not run twice.
    include: ['src/**/*.test.ts'],
  },
});
