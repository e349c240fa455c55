import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { repoRoot } from './paths.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A migrated, empty embedded database folder each test's data folder starts from (harness.ts). */
    databaseTemplate: string;
  }
}

/** The browser tests run the built server and web app, exactly what `npm start` serves. */
export default function setup(project: TestProject) {
  execFileSync('npx', ['tsc', '-b', 'apps/server'], { cwd: repoRoot, stdio: 'inherit' });
  // `npm install` builds the web app; it is built again only when a source is newer than the build.
  // vitest sets NODE_ENV=test, which would make vite emit React's development build into
  // apps/web/dist: the very files `npm start` serves afterwards.
  if (webBuildIsStale())
    execFileSync('npm', ['run', 'build', '-w', '@sideport/web'], {
      cwd: repoRoot,
      stdio: 'inherit',
      env: { ...process.env, NODE_ENV: 'production' },
    });
  // The built server's own `migrate` makes it, once: a first start in a new folder otherwise spends
  // seconds of CPU in PGlite's initdb, for each of the suite's servers.
  const template = mkdtempSync(path.join(tmpdir(), 'sideport-e2e-template-'));
  execFileSync(process.execPath, [path.join(repoRoot, 'apps/server/bin/sideport.js'), 'migrate'], {
    cwd: repoRoot,
    stdio: 'ignore',
    env: { PATH: process.env.PATH ?? '', DATA_DIR: template, LOG_LEVEL: 'silent' },
  });
  project.provide('databaseTemplate', path.join(template, 'db'));
  return () => rmSync(template, { recursive: true, force: true });
}

/** What the web build is made from: the app's files and the contracts it imports. */
const WEB_SOURCES = [
  'apps/web/src',
  'apps/web/public',
  'apps/web/index.html',
  'apps/web/vite.config.ts',
  'apps/web/precompress.ts',
  'apps/web/package.json',
  'packages/contracts/src',
  'package-lock.json',
];

/** True when apps/web/dist is missing or older than any file it is built from. */
function webBuildIsStale(): boolean {
  const built = newest(path.join(repoRoot, 'apps/web/dist/index.html'));
  if (built === 0) return true;
  return WEB_SOURCES.some((source) => newest(path.join(repoRoot, source)) > built);
}

/** The newest modification time (ms) of a file, or of any file under a folder; 0 when absent. */
function newest(target: string): number {
  let stats;
  try {
    stats = statSync(target);
  } catch {
    return 0;
  }
  if (!stats.isDirectory()) return stats.mtimeMs;
  const names = readdirSync(target, { recursive: true, encoding: 'utf8' });
  return Math.max(stats.mtimeMs, ...names.map((name) => statSync(path.join(target, name)).mtimeMs));
}
