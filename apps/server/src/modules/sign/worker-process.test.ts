import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDylib } from '@sideport/ipa/test-support/toolchain';
import { signRequests } from '../../db/schema/index.js';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { buildIpa, storeApp, storeWith } from '../../test/decrypt-support.js';
import { createTestApp, signedInUser, WEB_CLIENT, type TestApp } from '../../test/harness.js';
import { cliJs } from '../../test/server-process.js';
import * as devices from '../devices/queries.js';

const APP_ID = 6200;
const APP_VER_ID = 862000001;
const LEASE_SECONDS = 3;

interface Worker {
  child: ChildProcess;
  output(): string;
  /** Ids of the signs it started and those it committed, from its log lines. */
  started(): number[];
  signed(): number[];
}

// The worker logs JSON lines; each sign's are `"msg":"sign 12: signing"` and `"msg":"sign 12: signed"`.
const idsOf = (text: string, what: 'signing' | 'signed') =>
  [...text.matchAll(new RegExp(`"msg":"sign (\\d+): ${what}"`, 'g'))].map((m) => Number(m[1]));

/**
 * Sign workers as an operator runs them on other machines: `npx sideport worker` processes against
 * PostgreSQL and shared storage (a folder both see here), beside an API process that signs nothing.
 */
describe.skipIf(!process.env.TEST_DATABASE_URL)('sideport worker processes on postgres', () => {
  let store: ItunesServer;
  let t: TestApp;
  let env: Record<string, string>;
  let dylibs: string | undefined;
  const workers: Worker[] = [];

  function startWorker(): Worker {
    const child = spawn(process.execPath, [cliJs, 'worker', '--workers', '1'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    const worker = {
      child,
      output: () => out,
      started: () => idsOf(out, 'signing'),
      signed: () => idsOf(out, 'signed'),
    };
    workers.push(worker);
    return worker;
  }

  async function until(what: string, done: () => boolean | Promise<boolean>) {
    for (let i = 0; i < 1200; i++) {
      if (await done()) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`timed out waiting for ${what}:\n${workers.map((w) => w.output()).join('\n---\n')}`);
  }

  beforeAll(async () => {
    store = await storeWith([storeApp(APP_ID, 'com.example.workers')]);
    const dir = mkdtempSync(path.join(tmpdir(), 'sideport-worker-dylibs-'));
    dylibs = dir;
    const dylib = (name: string) => {
      const file = path.join(dir, `lib${name}.dylib`);
      writeFileSync(
        file,
        readFileSync(buildDylib(dir, name, `int ${name}(void) { return 1; }\n`, `@rpath/lib${name}.dylib`)),
      );
      return file;
    };
    const sign = {
      SIGN_LEASE_SECONDS: String(LEASE_SECONDS),
      SIGN_DYLIBS_IAP: dylib('iap'),
      SIGN_DYLIBS_IGG: dylib('igg'),
    };
    t = await createTestApp('postgres', {
      env: { ITUNES_BASE_URL: store.url, SIGN_WORKERS: '0', SIGN_IN_LIMIT_PER_ADDRESS: '10000', ...sign },
    });
    env = {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: t.database.url!,
      // The same folder as the API process: its files, and the secret key the dev identity is sealed with.
      DATA_DIR: t.dataDir,
      ...sign,
    };
    // Large enough that a sign takes a while, so a worker can be killed in the middle of one.
    const ipa = await buildIpa({
      bundleId: 'com.example.workers',
      version: '1.0',
      appVerId: String(APP_VER_ID),
      padBytes: 48 * 1024 * 1024,
    });
    await t.services.jobs.importIpa(ipa, { country: 'KR', appId: APP_ID });
  });
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await t?.close();
    await store?.close();
    if (dylibs) rmSync(dylibs, { recursive: true, force: true });
  });

  it(
    'signs 20 jobs once each; a worker killed mid-sign loses its job to the other',
    { timeout: 300_000 },
    async () => {
      for (let u = 0; u < 4; u++) {
        const user = `worker_user_${u}`;
        const cookie = await signedInUser(t, user);
        await devices.insertDevice(t.database.db, {
          userId: user,
          product: 'iPhone15,2',
          udid: `00008110-00000000000000${u}A`,
          status: 'Registered',
        });
        for (const type of [0, 1, 2, 3, 4]) {
          const res = await t.app.inject({
            method: 'PUT',
            url: `/api/sign/${APP_ID}/${APP_VER_ID}`,
            payload: { type },
            headers: { ...WEB_CLIENT, cookie },
          });
          expect(res.json()).toMatchObject({ status: 'Pending' });
        }
      }
      const doomed = startWorker();
      const survivor = startWorker();
      // Killed as it starts its second sign: the sign is under way, nothing of it committed.
      await until('the doomed worker starting a second sign', () => doomed.started().length >= 2);
      doomed.child.kill('SIGKILL');
      const lost = doomed.started()[1]!;

      const rows = () => t.database.db.select().from(signRequests);
      // A worker says a sign is done after committing it: wait for the last words too.
      const said = () => doomed.signed().length + survivor.signed().length;
      await until(
        'every sign Done and said so',
        async () => (await rows()).every((r) => r.status === 'Done') && said() >= 20,
      );
      const all = await rows();
      expect(all).toHaveLength(20);
      // Each signed once: by one worker or the other, never both; the lost job by the survivor.
      const [byDoomed, bySurvivor] = [doomed.signed(), survivor.signed()];
      expect([...byDoomed, ...bySurvivor].sort((a, b) => a - b)).toEqual(
        all.map((r) => r.id).sort((a, b) => a - b),
      );
      expect(byDoomed).not.toContain(lost);
      expect(bySurvivor).toContain(lost);
      const [lostRow] = await t.database.db.select().from(signRequests).where(eq(signRequests.id, lost));
      expect(lostRow!.attempts).toBe(2);
      // Exactly the committed artifacts are stored: nothing of the killed sign was kept.
      for (const row of all) expect(existsSync(path.join(t.dataDir, 'files', row.fileKey!))).toBe(true);
      const stored = readdirSync(path.join(t.dataDir, 'files', 'signed'), { recursive: true }).filter((n) =>
        String(n).endsWith('.ipa'),
      );
      expect(stored).toHaveLength(20);

      // SIGTERM: the survivor stops cleanly.
      const exited = new Promise<number | null>((resolve) =>
        survivor.child.once('exit', (code) => resolve(code)),
      );
      survivor.child.kill('SIGTERM');
      expect(await exited).toBe(0);
    },
  );
});
