import react from '@vitejs/plugin-react';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  plugins: [react()],
  // @sideport/contracts is consumed from its TypeScript source.
  resolve: { conditions: ['source', 'module', 'browser', 'development|production'] },
  build: { outDir: 'dist', sourcemap: true, chunkSizeWarningLimit: 1024 },
  server: { proxy: { '/api': 'http://127.0.0.1:8080', '/billing': 'http://127.0.0.1:8080' } },
  test: { include: ['src/**/*.test.ts'], environment: 'node' },
});
