import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildIpa } from '../../test/decrypt-support.js';
import { runInSignProcess, TaskAborted } from './run-task.js';

/** The signing processes this test process has started and that are still running. */
function signProcesses(): number[] {
  const lines = execFileSync('ps', ['--ppid', String(process.pid), '-o', 'pid=,args='], {
    encoding: 'utf8',
  }).split('\n');
  return lines.filter((line) => line.includes('sign-runner')).map((line) => Number.parseInt(line, 10));
}

describe('signing processes', () => {
  let ipa: string;
  const newCacheDir = () => mkdtempSync(path.join(tmpdir(), 'sideport-run-task-'));

  beforeAll(async () => {
    ipa = await buildIpa({ bundleId: 'com.example.runtask', version: '1.0' });
  });

  it('answers task after task from one process, a refused task included', async () => {
    const cacheDir = newCacheDir();
    expect(await runInSignProcess({ kind: 'warm', input: ipa, cacheDir })).toEqual({
      ok: true,
      kind: 'warm',
      fromCache: false,
    });
    const [first, ...others] = signProcesses();
    expect(others).toEqual([]);
    const missing = path.join(cacheDir, 'missing.ipa');
    const refused = await runInSignProcess({ kind: 'warm', input: missing, cacheDir });
    expect(refused).toMatchObject({ ok: false, message: expect.stringContaining('missing.ipa') });
    expect(await runInSignProcess({ kind: 'warm', input: ipa, cacheDir })).toEqual({
      ok: true,
      kind: 'warm',
      fromCache: true,
    });
    expect(signProcesses()).toEqual([first]);
  });

  it('ends the process of a stopped task, and the next task starts another', async () => {
    const cacheDir = newCacheDir();
    await runInSignProcess({ kind: 'warm', input: ipa, cacheDir });
    const [waiting] = signProcesses();
    const stop = new AbortController();
    const stopped = runInSignProcess({ kind: 'warm', input: ipa, cacheDir: newCacheDir() }, stop.signal);
    stop.abort();
    await expect(stopped).rejects.toBeInstanceOf(TaskAborted);
    await expect.poll(signProcesses, { timeout: 30_000 }).not.toContain(waiting);
    expect(await runInSignProcess({ kind: 'warm', input: ipa, cacheDir })).toMatchObject({ ok: true });
    expect(signProcesses()).toHaveLength(1);
    expect(signProcesses()).not.toContain(waiting);
  });

  it('refuses a task whose signal has already stopped it, starting nothing', async () => {
    const before = signProcesses();
    await expect(
      runInSignProcess({ kind: 'warm', input: ipa, cacheDir: newCacheDir() }, AbortSignal.abort()),
    ).rejects.toBeInstanceOf(TaskAborted);
    expect(signProcesses()).toEqual(before);
  });
});
