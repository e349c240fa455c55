// One lint setup for every workspace (formatting is Prettier's: `npm run format`).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import noImportCycle from './scripts/lint/no-import-cycle.js';

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

const workspacePatterns = (workspace) => {
  const allowed = MAY_IMPORT[workspace];
  return [
    {
      regex: `^@sideport/(?!(${allowed.join('|') || '$^'})(/|$))`,
      message: `${workspace} may use ${allowed.length ? `only ${allowed.map((p) => `@sideport/${p}`).join(' and ')}` : 'none'} of our packages (docs/architecture.md, Layout).`,
    },
    {
      // A path out of the workspace into another one: it would pass the rule above unseen.
      regex: '^(\\.\\./)+(apps|packages|server|agent|web|e2e|contracts|ipa)(/|$)',
      message: 'Import another workspace by its package name, never by a relative path.',
    },
  ];
};

/** One rule's options per file group: a later config's `no-restricted-imports` replaces an earlier one's. */
const restrictImports = (files, patterns, ignores = []) => ({
  files,
  ignores,
  rules: { 'no-restricted-imports': ['error', { patterns }] },
});

const boundary = (workspace) => restrictImports([`${workspace}/**`], workspacePatterns(workspace));

/**
 * Which other features each web feature may import (docs/architecture.md, Web client): the
 * catalogue opens the version modal and asks for decrypts; the admin console deletes entries as the
 * version modal does, and checks the setup form by sign-up's rules. What several features need of
 * an entry (its caches and their keys, the live updates, its facts) is in `src/entries/`, which
 * imports no feature, so the features' imports point one way.
 */
const FEATURE_MAY_IMPORT = {
  account: ['notifications'],
  admin: ['auth', 'versions'],
  auth: [],
  catalog: ['versions'],
  live: [],
  notifications: [],
  versions: [],
};

const WEB = 'apps/web/src';

const featurePatterns = (feature) => {
  const allowed = [feature, ...FEATURE_MAY_IMPORT[feature]].join('|');
  return [
    ...workspacePatterns('apps/web'),
    {
      regex: `^(\\.\\./(?!(${allowed})(/|$))[^./][^/]*|(\\.\\./)+features/(?!(${allowed})(/|$))[^/]+)(/|$)`,
      message: `features/${feature} may import ${FEATURE_MAY_IMPORT[feature].length ? `only ${FEATURE_MAY_IMPORT[feature].join(' and ')} of the other features` : 'no other feature'}; what features share of an entry is in src/entries (docs/architecture.md, Web client).`,
    },
  ];
};

/** A feature calls the API in its queries.ts only, with the contract's schema (CONTRIBUTING.md). */
const API_IN_QUERIES = {
  regex: '(^|/)lib/api$',
  importNames: ['api', 'apiFetch'],
  message: "Call the API from the feature's queries.ts, and use its function here.",
};

/** `src/<folder>` (its tests aside) imports none of the `above` folders of the web app. */
const layerBelow = (folder, above, message) =>
  restrictImports(
    [`${WEB}/${folder}/**`],
    [...workspacePatterns('apps/web'), { regex: `^(\\.\\./)+(${above.join('|')})(/|$)`, message }],
    ['**/*.test.ts'],
  );

const webBoundaries = [
  ...Object.keys(FEATURE_MAY_IMPORT).flatMap((feature) => {
    const files = [`${WEB}/features/${feature}/**`];
    const queries = `${WEB}/features/${feature}/queries.ts`;
    return [
      restrictImports(files, [...featurePatterns(feature), API_IN_QUERIES], [queries]),
      restrictImports([queries], featurePatterns(feature)),
    ];
  }),
  // The neutral module imports no feature (its tests may, to check the features use its keys).
  layerBelow(
    'entries',
    ['features', 'app'],
    'src/entries is below the features: it imports none (docs/architecture.md, Web client).',
  ),
  layerBelow(
    'lib',
    ['features', 'app', 'entries'],
    'src/lib is the bottom layer: it imports no feature, no entries module and no app code.',
  ),
];

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
  ...Object.keys(MAY_IMPORT).map(boundary),
  ...webBoundaries,
  {
    // A file that imports itself through others, in every workspace's sources: two files that
    // cannot change apart (docs/architecture.md).
    files: ['{apps,packages}/*/src/**/*.{ts,tsx}'],
    plugins: { sideport: { rules: { 'no-import-cycle': noImportCycle } } },
    rules: { 'sideport/no-import-cycle': 'error' },
  },
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
