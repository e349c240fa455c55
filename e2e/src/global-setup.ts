import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
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
  // vitest sets NODE_ENV=test, which would make vite emit React's development build into
  // apps/web/dist: the very files `npm start` serves afterwards.
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
