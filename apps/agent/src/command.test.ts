import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { commandEnvironment, failureOf, runCommand } from './command.js';

const dir = mkdtempSync(path.join(tmpdir(), 'agent-command-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const run = (command: string, signal = new AbortController().signal) => {
  const stdout: string[] = [];
  const result = runCommand(command, {
    env: commandEnvironment({}),
    cwd: dir,
    signal,
    onStdoutLine: (l) => stdout.push(l),
    onStderrLine: () => {},
  });
  return { result, stdout };
};
const isAlive = (pid: number) => {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
};

describe("running the operator's command", () => {
  it('delivers stdout lines and keeps the last stderr line as the reason of a failure', async () => {
    const { result, stdout } = run(
      'echo one; echo "first problem" >&2; echo two; echo "The real reason." >&2; echo >&2; exit 7',
    );
    const done = await result;
    expect(stdout).toEqual(['one', 'two']);
    expect(failureOf(done)).toEqual({ reason: 'The real reason.', unsupported: false });
  });

  it('reads exit 3 as unsupported, and says so itself when the command printed no reason', async () => {
    expect(failureOf(await run('exit 3').result)).toEqual({
      reason: 'The command exited with code 3 (unsupported) and wrote nothing on stderr.',
      unsupported: true,
    });
    expect(failureOf(await run('exit 0').result)).toBeUndefined();
  });

  it('ends the whole process group when aborted, not just the shell', async () => {
    const stop = new AbortController();
    const pidFile = path.join(dir, 'child.pid');
    const { result } = run(`sleep 300 & echo $! > "${pidFile}"; echo started; wait`, stop.signal);
    while (!existsSync(pidFile) || readFileSync(pidFile, 'utf8') === '')
      await new Promise((r) => setTimeout(r, 20));
    const child = Number(readFileSync(pidFile, 'utf8'));
    stop.abort();
    const done = await result;
    expect(done.signal ?? done.code).toBeTruthy();
    for (let i = 0; i < 100 && isAlive(child); i++) await new Promise((r) => setTimeout(r, 20));
    expect(isAlive(child)).toBe(false);
  });

  it("gives the command the job's SIDEPORT_ variables and none of the agent's own", () => {
    const env = commandEnvironment(
      { SIDEPORT_APP_ID: '1' },
      { PATH: '/bin', SIDEPORT_AGENT_TOKEN: 'spa_secret', sideport_other: 'x' },
    );
    expect(env).toEqual({ PATH: '/bin', SIDEPORT_APP_ID: '1' });
  });
});
