import { fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SIGN_PROCESS_TUNING } from '@sideport/ipa';
import type { RunnerResult, RunnerTask } from './runner-protocol.js';

const here = fileURLToPath(import.meta.url);
const isSource = path.extname(here) === '.ts';
/**
 * The signing process's program: sign-runner.js beside this module once built. When the sources
 * run (tests, tsx), sign-runner.ts through tsx, which compiles the runner and the toolkit again in
 * every signing process (about a second of CPU); or, when SIGN_RUNNER_BUILT is set (the server's
 * test setup sets it after bringing the build up to date), the build's runner.
 */
const useBuild = isSource && Boolean(process.env.SIGN_RUNNER_BUILT);
const runnerPath = useBuild
  ? path.resolve(path.dirname(here), '../../../dist/modules/sign/sign-runner.js')
  : path.join(path.dirname(here), `sign-runner${path.extname(here)}`);
const fromSource = isSource && !useBuild;

/** Ends a task early: a lost lease or a stopping worker. */
export class TaskAborted extends Error {
  override name = 'TaskAborted';
}

export type RunTask = (task: RunnerTask, signal?: AbortSignal) => Promise<RunnerResult>;

/**
 * Runs one task in a new signing process started as SIGN_PROCESS_TUNING says. The process gets
 * only PATH and the temp folder of our environment: none of the server's secrets. An abort kills
 * it at once (its partial output is the caller's to remove).
 */
export const runInSignProcess: RunTask = (task, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new TaskAborted('The task was stopped before it started.'));
    if (!existsSync(runnerPath))
      return reject(new Error(`The signing process's program is missing: ${runnerPath}. Run npm run build.`));
    const child = fork(runnerPath, [], {
      cwd: path.dirname(runnerPath),
      execArgv: [
        ...SIGN_PROCESS_TUNING.execArgv,
        ...(fromSource ? ['--import', 'tsx', '--conditions=source'] : []),
      ],
      env: {
        PATH: process.env.PATH ?? '',
        ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}),
        ...SIGN_PROCESS_TUNING.env,
      },
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let result: RunnerResult | undefined;
    const onAbort = () => child.kill('SIGKILL');
    signal?.addEventListener('abort', onAbort, { once: true });
    child.once('message', (message: RunnerResult) => {
      result = message;
    });
    child.once('error', (err) => {
      signal?.removeEventListener('abort', onAbort);
      reject(err);
    });
    child.once('exit', (code, killedBy) => {
      signal?.removeEventListener('abort', onAbort);
      if (signal?.aborted) return reject(new TaskAborted('The task was stopped.'));
      if (result) return resolve(result);
      reject(new Error(`The signing process ended without an answer (${killedBy ?? `exit code ${code}`}).`));
    });
    child.send(task);
  });
