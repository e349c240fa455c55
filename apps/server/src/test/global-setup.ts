import { execFileSync } from 'node:child_process';
import path from 'node:path';

/**
 * Brings the build up to date before the tests (incremental: about a second when it is). The tests
 * that start `node dist/main.js` or the CLI run it, and the sign workers start the build's signing
 * process (SIGN_RUNNER_BUILT, run-task.ts) rather than compiling the toolkit through tsx for every
 * sign, about a second of CPU each.
 */
export default function setup() {
  const serverDir = path.resolve(import.meta.dirname, '../..');
  execFileSync('npx', ['tsc', '-b', 'tsconfig.build.json'], { cwd: serverDir, stdio: 'inherit' });
  process.env.SIGN_RUNNER_BUILT = '1';
}
