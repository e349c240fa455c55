import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from './db/client.js';
import { users } from './db/schema/index.js';
import { mainJs, md5, startServer, stopServer } from './test/server-process.js';

const ROUNDS = 10;
const WRITERS = 4;

/**
 * Signs up accounts from several writers at once until `killAfter` sign-ups have been
 * acknowledged, then SIGKILLs the server mid-stream. Returns every id the server answered 200 for.
 */
async function writeUntilKilled(
  url: string,
  pid: number,
  round: number,
  killAfter: number,
): Promise<string[]> {
  const acknowledged: string[] = [];
  let killed = false;
  const writer = async (w: number) => {
    for (let n = 0; !killed; n++) {
      const id = `r${round}w${w}n${n}`;
      const res = await fetch(`${url}/api/sign-up`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id, pw: md5(id) }),
      }).catch(() => undefined);
      if (res?.status === 200) acknowledged.push(id);
      else if (!killed) throw new Error(`sign-up ${id} answered ${res?.status ?? 'nothing'} before the kill`);
      if (!killed && acknowledged.length >= killAfter) {
        killed = true;
        process.kill(pid, 'SIGKILL');
      }
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  return acknowledged;
}

describe('the embedded database after SIGKILL', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'sideport-crash-'));
  const parents: ChildProcess[] = [];
  afterAll(() => {
    for (const parent of parents) parent.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it(
    `starts again at once, ${ROUNDS} times, with every acknowledged write`,
    { timeout: 600_000 },
    async () => {
      const env = { DATA_DIR: dataDir, WEB_DIST_DIR: dataDir, SIGN_IN_LIMIT_PER_ADDRESS: '1000000' };
      // A lock file naming a live process that holds no lock (this test's own) does not block a start.
      mkdirSync(path.join(dataDir, 'db'), { recursive: true });
      writeFileSync(path.join(dataDir, 'db', 'sideport.lock'), String(process.pid));

      const acknowledged: string[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        // Each server runs under a parent that never reaps it: killed, it stays a zombie whose pid is
        // still "alive", as under a supervisor that has not reaped it yet. The next starts at once.
        const running = await startServer(env, {
          file: 'sh',
          args: ['-c', `"${process.execPath}" "${mainJs}" & exec sleep 600 >/dev/null 2>&1`],
        });
        parents.push(running.child);
        const pid = Number(/"pid":(\d+)/.exec(running.output())![1]);
        acknowledged.push(...(await writeUntilKilled(running.url, pid, round, 3 + round)));
      }

      const last = await startServer(env);
      const signIn = await fetch(`${last.url}/api/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: acknowledged.at(-1), pw: md5(acknowledged.at(-1)!) }),
      });
      expect(signIn.status).toBe(200);
      expect(await stopServer(last)).toBe(0);

      const database = await openDatabase({ pgliteDir: path.join(dataDir, 'db') });
      try {
        const stored = new Set((await database.db.select({ id: users.id }).from(users)).map((u) => u.id));
        expect(acknowledged.length).toBeGreaterThanOrEqual((ROUNDS * (ROUNDS + 5)) / 2);
        expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
      } finally {
        await database.close();
      }
    },
  );
});
