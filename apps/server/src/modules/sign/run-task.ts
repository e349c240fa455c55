import { fork, type ChildProcess } from 'node:child_process';
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
 * A signing process takes tasks one at a time and stays for the next one: starting Node and loading
 * the toolkit is about 0.4 s of CPU, a fifth of a popular version's sign. It ends after
 * TASKS_PER_PROCESS tasks, or when no task came for IDLE_MS, so its memory goes back soon after the
 * queue empties; a task that fails to finish (a crash, an abort) ends its process.
 */
const TASKS_PER_PROCESS = 50;
const IDLE_MS = 10_000;

interface SignProcess {
  child: ChildProcess;
  tasks: number;
  idleTimer?: NodeJS.Timeout;
}

/** Processes waiting for a task: unreferenced, so they never keep a stopping process alive. */
const waiting = new Set<SignProcess>();

function startSignProcess(): SignProcess {
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
  const signProcess: SignProcess = { child, tasks: 0 };
  child.once('exit', () => {
    clearTimeout(signProcess.idleTimer);
    waiting.delete(signProcess);
  });
  return signProcess;
}

/** A waiting process, or a new one. */
function takeSignProcess(): SignProcess {
  for (const signProcess of waiting) {
    waiting.delete(signProcess);
    clearTimeout(signProcess.idleTimer);
    if (!signProcess.child.connected) continue;
    signProcess.child.ref();
    signProcess.child.channel?.ref();
    return signProcess;
  }
  return startSignProcess();
}

/** After an answered task: waits for the next one, or ends (closing the channel ends the process). */
function releaseSignProcess(signProcess: SignProcess) {
  const { child } = signProcess;
  if (signProcess.tasks >= TASKS_PER_PROCESS || !child.connected) {
    if (child.connected) child.disconnect();
    return;
  }
  child.unref();
  child.channel?.unref();
  signProcess.idleTimer = setTimeout(() => {
    waiting.delete(signProcess);
    if (child.connected) child.disconnect();
  }, IDLE_MS).unref();
  waiting.add(signProcess);
}

/**
 * Runs one task in a signing process started as SIGN_PROCESS_TUNING says, a waiting one or a new
 * one. The process gets only PATH and the temp folder of our environment: none of the server's
 * secrets. An abort kills it at once (its partial output is the caller's to remove).
 */
export const runInSignProcess: RunTask = (task, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new TaskAborted('The task was stopped before it started.'));
    if (!existsSync(runnerPath))
      return reject(new Error(`The signing process's program is missing: ${runnerPath}. Run npm run build.`));
    const signProcess = takeSignProcess();
    const { child } = signProcess;
    signProcess.tasks += 1;
    const settle = () => {
      signal?.removeEventListener('abort', onAbort);
      child.off('message', onMessage);
      child.off('exit', onExit);
      child.off('error', onError);
    };
    const onAbort = () => child.kill('SIGKILL');
    const onMessage = (result: RunnerResult) => {
      settle();
      resolve(result);
      releaseSignProcess(signProcess);
    };
    const onError = (err: Error) => {
      settle();
      child.kill('SIGKILL');
      reject(err);
    };
    const onExit = (code: number | null, killedBy: NodeJS.Signals | null) => {
      settle();
      if (signal?.aborted) return reject(new TaskAborted('The task was stopped.'));
      reject(new Error(`The signing process ended without an answer (${killedBy ?? `exit code ${code}`}).`));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    child.on('message', onMessage);
    child.once('exit', onExit);
    child.once('error', onError);
    child.send(task);
  });
