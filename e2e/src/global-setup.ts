import { execFileSync } from 'node:child_process';
import { repoRoot } from './paths.js';

/** The browser tests run the built server and web app, exactly what `npm start` serves. */
export default function setup() {
  execFileSync('npx', ['tsc', '-b', 'apps/server'], { cwd: repoRoot, stdio: 'inherit' });
  // vitest sets NODE_ENV=test, which would make vite emit React's development build into
  // apps/web/dist: the very files `npm start` serves afterwards.
  execFileSync('npm', ['run', 'build', '-w', '@sideport/web'], {
    cwd: repoRoot,
    stdio: 'inherit',
    env: { ...process.env, NODE_ENV: 'production' },
  });
}
