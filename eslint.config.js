// One lint setup for every workspace (formatting is Prettier's: `npm run format`).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// TypeScript files no tsconfig includes (benchmarks, tool configs): linted without type information.
const OUTSIDE_PROJECTS = ['bench/**', '*/*/vitest.config.ts', 'apps/server/drizzle.config.ts'];

export default tseslint.config(
  {
    ignores: ['**/dist/**', '**/node_modules/**', '**/drizzle/**', 'data/**', 'coverage/**', 'bench/out/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', window: 'readonly', document: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'off',
    },
  },
  {
    // Type-aware rules, with each file's own tsconfig (typescript-eslint's project service).
    files: ['**/*.{ts,tsx}'],
    ignores: OUTSIDE_PROJECTS,
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
);
