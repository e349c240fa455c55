// Builds the self-contained agent: one ES module file with every dependency inlined (only Node's
// built-ins stay imports), plus a package.json, so an operator's machine needs nothing but
// Node.js 20.19+. Usage: node scripts/bundle.mjs [output folder] (default dist/standalone).
import { readFile, writeFile, mkdir, chmod } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

const root = path.resolve(import.meta.dirname, '..');
const outDir = path.resolve(process.argv[2] ?? path.join(root, 'dist/standalone'));
const { version } = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8'));
const file = path.join(outDir, 'sideport-agent.mjs');

await mkdir(outDir, { recursive: true });
await build({
  entryPoints: [path.join(root, 'src/cli.ts')],
  outfile: file,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20.19',
  // The workspace packages' TypeScript sources, as tests and tsx read them.
  conditions: ['source'],
  // Some dependencies are CommonJS and call require() for Node built-ins; ES modules have none.
  banner: {
    js: "#!/usr/bin/env node\nimport { createRequire as __sideportCreateRequire } from 'node:module';\nconst require = __sideportCreateRequire(import.meta.url);",
  },
  legalComments: 'eof',
  logLevel: 'warning',
});
await chmod(file, 0o755);
await writeFile(
  path.join(outDir, 'package.json'),
  `${JSON.stringify(
    {
      name: 'sideport-agent',
      version,
      description:
        "Sideport's decrypt worker agent in one file: claims jobs, runs the operator's command, checks and uploads the IPA.",
      type: 'module',
      bin: { 'sideport-agent': 'sideport-agent.mjs' },
      files: ['sideport-agent.mjs'],
      engines: { node: '>=20.19' },
    },
    null,
    2,
  )}\n`,
);
console.log(`sideport-agent ${version}: ${path.relative(process.cwd(), file) || file}`);
