import react from '@vitejs/plugin-react';
import { defineConfig } from 'vitest/config';
import { precompress } from './precompress.ts';

export default defineConfig({
  plugins: [react(), precompress()],
  // @sideport/contracts is consumed from its TypeScript source.
  resolve: { conditions: ['source', 'module', 'browser', 'development|production'] },
  // No source maps in the build: the server would publish them beside the scripts.
  build: {
    outDir: 'dist',
    sourcemap: false,
    rolldownOptions: {
      // What the first screen needs in one file: one request, and one compression context (a few kB
      // less than the dozen small shared chunks the splitter makes by default).
      output: { codeSplitting: { groups: [{ name: 'app', tags: ['$initial'] }] } },
    },
  },
  server: { proxy: { '/api': 'http://127.0.0.1:8080', '/billing': 'http://127.0.0.1:8080' } },
  test: { include: ['src/**/*.test.ts'], environment: 'node' },
});
