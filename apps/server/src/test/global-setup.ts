import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * Brings the build up to date before the tests (incremental: about a second when it is). The tests
 * that start `node dist/main.js` or the CLI run it, and the sign workers start the build's signing
 * process (SIGN_RUNNER_BUILT, run-task.ts) rather than compiling the toolkit through tsx for every
 * sign, about a second of CPU each.
 *
 * The run's temporary files all go under one folder (TMPDIR, which the test workers and the
 * processes they start read), removed when the run ends: the files of one worker share its modules,
 * so no file's end can remove what a shared helper made, and a killed test leaves nothing behind.
 */
export default function setup() {
  const serverDir = path.resolve(import.meta.dirname, '../..');
  execFileSync('npx', ['tsc', '-b', 'tsconfig.build.json'], { cwd: serverDir, stdio: 'inherit' });
  process.env.SIGN_RUNNER_BUILT = '1';
  const runDir = mkdtempSync(path.join(tmpdir(), 'sideport-server-tests-'));
  chmodSync(runDir, 0o711); // PostgreSQL clusters the tests start run as the postgres user
  process.env.TMPDIR = runDir;
  return () => rmSync(runDir, { recursive: true, force: true });
}
