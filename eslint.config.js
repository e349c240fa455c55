// One lint setup for every workspace (formatting is Prettier's: `npm run format`).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// TypeScript files no tsconfig includes (tool configs): linted without type information.
const OUTSIDE_PROJECTS = ['*/*/vitest.config.ts', 'apps/server/drizzle.config.ts'];

/**
 * Which of our packages each workspace may import (docs/architecture.md, Layout): dependencies point
 * one way, `ipa` knows nothing of the service, `contracts` depends on nothing of ours but ipa's one
 * self-contained module of what each sign mode does. e2e, chaos and
 * bench drive the real apps and may reach into them.
 */
const MAY_IMPORT = {
  'packages/contracts': ['ipa/sign-modes'],
  'packages/ipa': [],
  'apps/web': ['contracts'],
  'apps/server': ['contracts', 'ipa'],
  'apps/agent': ['contracts', 'ipa'],
};

const boundary = ([workspace, allowed]) => ({
  files: [`${workspace}/**`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          {
            regex: `^@sideport/(?!(${allowed.join('|') || '$^'})(/|$))`,
            message: `${workspace} may use ${allowed.length ? `only ${allowed.map((p) => `@sideport/${p}`).join(' and ')}` : 'none'} of our packages (docs/architecture.md, Layout).`,
          },
          {
            // A path out of the workspace into another one: it would pass the rule above unseen.
            regex: '^(\\.\\./)+(apps|packages|server|agent|web|e2e|contracts|ipa)(/|$)',
            message: 'Import another workspace by its package name, never by a relative path.',
          },
        ],
      },
    ],
  },
});

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
  ...Object.entries(MAY_IMPORT).map(boundary),
  {
    // Each package's errors are listed once, code, status and sentence (docs/architecture.md, API
    // conventions): a new refusal is added to the registry, not written inline.
    files: ['apps/server/src/**/*.ts'],
    ignores: ['apps/server/src/platform/errors.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='AppError']",
          message: "Add the code to platform/error-codes.ts and raise it with fail('CODE', ...parts).",
        },
      ],
    },
  },
);
