import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main, type MainIo } from './main.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A job folder as an agent leaves it: the command's IPA inside, and who made it. */
function jobFolder(
  workDir: string,
  name: string,
  options: { bytes: number; owner?: { host: string; pid: number }; ageMs?: number },
) {
  const dir = path.join(workDir, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, '284882215.ipa'), 'x'.repeat(options.bytes));
  if (options.owner) writeFileSync(path.join(dir, '.sideport-agent'), JSON.stringify(options.owner));
  if (options.ageMs) {
    const then = new Date(Date.now() - options.ageMs);
    utimesSync(dir, then, then);
  }
  return dir;
}

/** The agent started over `workDir` and stopped at once (its server is never reached). */
async function startAgent(workDir: string) {
  let out = '';
  const io: MainIo = {
    stdout: { write: (t: string) => (out += t) },
    stderr: { write: (t: string) => (out += t) },
    env: { SIDEPORT_AGENT_TOKEN: 'spa_test' },
    stop: AbortSignal.abort(),
  };
  const code = await main(['--server', 'http://127.0.0.1:9', '--command', 'true', '--work-dir', workDir], io);
  return { code, out };
}

describe("the agent's work dir", () => {
  it('removes, as it starts, the job folders a killed agent left and keeps those of a running one', async () => {
    const workDir = mkdtempSync(path.join(tmpdir(), 'sideport-agent-workdir-'));
    dirs.push(workDir);
    // An agent of this machine that is gone: its process has exited.
    const gone = spawnSync(process.execPath, ['-e', '']).pid!;
    const deadOwner = { host: hostname(), pid: gone };
    const deadAgents = jobFolder(workDir, 'job-41-1-aaaaaa', { bytes: 3000, owner: deadOwner });
    // Untouched for two hours (another machine's agent, or one from before folders were marked).
    const old = jobFolder(workDir, 'job-42-1-bbbbbb', { bytes: 2000, ageMs: 2 * 3_600_000 });
    // A running agent's (this test's process stands for it), and a fresh unmarked one.
    const running = jobFolder(workDir, 'job-43-1-cccccc', {
      bytes: 500,
      owner: { host: hostname(), pid: process.ppid },
    });
    const fresh = jobFolder(workDir, 'job-44-1-dddddd', { bytes: 700 });
    // Not a job folder: the operator's own.
    const operators = path.join(workDir, 'keys');
    mkdirSync(operators);
    utimesSync(operators, new Date(0), new Date(0));

    const { code, out } = await startAgent(workDir);
    expect(code).toBe(0);
    expect({
      deadAgents: existsSync(deadAgents),
      old: existsSync(old),
      running: existsSync(running),
      fresh: existsSync(fresh),
      operators: existsSync(operators),
    }).toEqual({ deadAgents: false, old: false, running: true, fresh: true, operators: true });
    const bytes = 5000 + JSON.stringify(deadOwner).length;
    expect(out).toContain(`removed 2 stale job folders (${bytes} bytes) from ${workDir}\n`);
  });

  it('says nothing of a work dir with nothing stale', async () => {
    const workDir = mkdtempSync(path.join(tmpdir(), 'sideport-agent-workdir-'));
    dirs.push(workDir);
    const fresh = jobFolder(workDir, 'job-45-1-eeeeee', { bytes: 10 });
    const { out } = await startAgent(workDir);
    expect(existsSync(fresh)).toBe(true);
    expect(out).not.toContain('stale job folder');
  });
});
