import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItunesServer } from './dev/itunes-server.js';
import { buildIpa, storeApp, storeWith } from './test/decrypt-support.js';
import { createPostgresDatabase, WEB_CLIENT } from './test/harness.js';
import { md5, runCli, startServer, stopServer, type Running } from './test/server-process.js';

const PASSWORD = md5('backup test password');
const APPS = 10;
const appId = (i: number) => 9100 + i;
const appVerId = (i: number) => 910000 + i;
const ADMIN = { ADMIN_ID: 'backup_admin', ADMIN_PASSWORD: 'backup admin password' };

/** What the server acknowledged (a 2xx answer), and when the answer arrived. */
interface Acked {
  what: 'account' | 'payment' | 'version';
  user: string;
  app?: number;
  ipa?: Buffer;
  at: number;
}

const cookieOf = (res: Response) => res.headers.get('set-cookie')!.split(';')[0]!;

/**
 * `sideport backup` while the server runs and is written to: sign-ups, test-mode payments and
 * agents' uploads keep coming while the snapshot is taken. Restored into an empty DATA_DIR,
 * every account, payment and version the server acknowledged before the backup began is there,
 * files included, and the restored server starts and answers.
 */
describe('sideport backup and restore of the embedded default', () => {
  let work: string;
  let store: ItunesServer;
  let server: Running | undefined;
  const ipas: Buffer[] = [];

  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'sideport-backup-'));
    store = await storeWith(
      Array.from({ length: APPS }, (_, i) => storeApp(appId(i), `com.example.backup${i}`)),
    );
    for (let i = 0; i < APPS; i++) {
      ipas.push(
        readFileSync(
          await buildIpa({
            bundleId: `com.example.backup${i}`,
            version: '1.0',
            appVerId: String(appVerId(i)),
          }),
        ),
      );
    }
  });
  afterAll(async () => {
    if (server) await stopServer(server);
    await store?.close();
    rmSync(work, { recursive: true, force: true });
  });

  const serverEnv = (dataDir: string) => ({
    DATA_DIR: dataDir,
    WEB_DIST_DIR: dataDir,
    ITUNES_BASE_URL: store.url,
    SIGN_IN_LIMIT_PER_ADDRESS: '100000',
    FREE_DAILY_LIMIT: '1000',
    ...ADMIN,
  });

  it(
    'keeps every acknowledged account, payment and version of a backup taken under load',
    { timeout: 900_000 },
    async () => {
      const dataDir = path.join(work, 'data');
      server = await startServer(serverEnv(dataDir));
      const base = server.url;
      const post = (url: string, body: unknown, cookie?: string) =>
        fetch(`${base}${url}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(cookie ? { cookie, ...WEB_CLIENT } : {}) },
          body: JSON.stringify(body),
        });
      const admin = cookieOf(
        await post('/api/sign-in', { id: ADMIN.ADMIN_ID, pw: md5(ADMIN.ADMIN_PASSWORD) }),
      );
      const { token } = (await (await post('/api/admin/agents', { name: 'backup-agent' }, admin)).json()) as {
        token: string;
      };
      const agent = { authorization: `Bearer ${token}` };

      const acked: Acked[] = [];
      let stopping = false;
      const signUp = async (id: string) => {
        const res = await post('/api/sign-up', { id, pw: PASSWORD });
        expect(res.status, await res.clone().text()).toBe(200);
        return cookieOf(res);
      };
      const accounts = async () => {
        for (let i = 0; i < 200 && !stopping; i++) {
          await signUp(`acct_${i}`);
          acked.push({ what: 'account', user: `acct_${i}`, at: Date.now() });
        }
      };
      const payments = async () => {
        for (let i = 0; i < 100 && !stopping; i++) {
          const user = `payer_${i}`;
          const cookie = await signUp(user);
          const { url } = (await (
            await fetch(`${base}/api/pay/service/0`, { headers: { cookie, ...WEB_CLIENT } })
          ).json()) as { url: string };
          const paid = await fetch(`${base}${new URL(url).pathname}/pay`, {
            method: 'POST',
            redirect: 'manual',
            headers: {
              cookie,
              'sec-fetch-site': 'same-origin',
              'content-type': 'application/x-www-form-urlencoded',
            },
            body: '',
          });
          expect(paid.status).toBe(303);
          acked.push({ what: 'payment', user, at: Date.now() });
        }
      };
      const versions = async () => {
        const cookie = await signUp('requester');
        for (let i = 0; i < APPS && !stopping; i++) {
          expect(
            (await fetch(`${base}/api/decrypt/KR/${appId(i)}`, { headers: { cookie, ...WEB_CLIENT } }))
              .status,
          ).toBe(200);
          const claim = await fetch(`${base}/api/agent/claim`, {
            method: 'POST',
            headers: { ...agent, 'content-type': 'application/json' },
            body: '{}',
          });
          const { job } = (await claim.json()) as { job: { id: string; app_id: string } };
          expect(job.app_id).toBe(String(appId(i)));
          const upload = await fetch(`${base}/api/agent/jobs/${job.id}/ipa?app_ver_id=${appVerId(i)}`, {
            method: 'PUT',
            headers: { ...agent, 'content-type': 'application/octet-stream' },
            body: new Uint8Array(ipas[i]!),
          });
          expect(upload.status, await upload.clone().text()).toBe(200);
          acked.push({ what: 'version', user: 'requester', app: i, ipa: ipas[i], at: Date.now() });
        }
      };
      const load = Promise.all([accounts(), payments(), versions()]);
      load.catch(() => {
        stopping = true;
      });
      const count = (what: Acked['what']) => acked.filter((a) => a.what === what).length;
      while (count('account') < 3 || count('payment') < 2 || count('version') < 2) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }

      const file = path.join(work, 'under-load.tar');
      const backupBegan = Date.now();
      const backup = await runCli(['backup', file], { DATA_DIR: dataDir });
      const backupEnded = Date.now();
      stopping = true;
      await load;
      expect(backup.code, backup.out).toBe(0);
      // Through the running server (it holds the database), with the counts the file holds.
      const written = backup.out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(written.find((l) => l.msg === 'backup written')).toMatchObject({
        viaServer: true,
        files: expect.any(Number),
      });
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(readdirSync(work).filter((n) => n.includes('.partial'))).toEqual([]);
      const during = acked.filter((a) => a.at > backupBegan && a.at < backupEnded).length;
      console.info(
        `backup took ${backupEnded - backupBegan} ms; ${during} requests were acknowledged while it ran`,
      );
      expect(await stopServer(server)).toBe(0);
      server = undefined;

      const restored = path.join(work, 'restored');
      const restore = await runCli(['restore', file], { DATA_DIR: restored });
      expect(restore.code, restore.out).toBe(0);
      expect(statSync(path.join(restored, 'secret-key')).mode & 0o777).toBe(0o600);

      server = await startServer(serverEnv(restored));
      const before = acked.filter((a) => a.at < backupBegan);
      expect(before.length).toBeGreaterThanOrEqual(7);
      for (const a of before) {
        const signIn = await fetch(`${server.url}/api/sign-in`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ id: a.user, pw: PASSWORD }),
        });
        expect(signIn.status, `${a.what} of ${a.user}`).toBe(200);
        const cookie = cookieOf(signIn);
        if (a.what === 'payment')
          expect((await fetch(`${server.url}/api/premium`, { headers: { cookie } })).status, a.user).toBe(
            200,
          );
        if (a.what === 'version') {
          const link = await fetch(`${server.url}/api/download/${appId(a.app!)}/${appVerId(a.app!)}`, {
            headers: { cookie },
          });
          expect(link.status, `version of app ${appId(a.app!)}`).toBe(200);
          const file = await fetch(new URL(((await link.json()) as { url: string }).url).href);
          expect(Buffer.from(await file.arrayBuffer()).equals(a.ipa!)).toBe(true);
        }
      }
      expect(await (await fetch(`${server.url}/healthz`)).json()).toEqual({
        status: 'ok',
        database: 'pglite',
      });
      expect(await stopServer(server)).toBe(0);
      server = undefined;

      // A folder that is not empty is refused, and left as it was.
      const refused = await runCli(['restore', file], { DATA_DIR: restored });
      expect(refused.code).toBe(2);
      expect(refused.out).toContain(`DATA_DIR ${restored} is not empty`);
      // A backup cut short is refused, and leaves the empty folder empty.
      const cut = path.join(work, 'cut.tar');
      writeFileSync(cut, readFileSync(file).subarray(0, Math.floor(statSync(file).size / 2)));
      const empty = path.join(work, 'empty');
      mkdirSync(empty);
      const cutShort = await runCli(['restore', cut], { DATA_DIR: empty });
      expect(cutShort.code).toBe(1);
      expect(cutShort.out).toMatch(/The backup (was cut short|is damaged)|Unexpected end of data/);
      expect(readdirSync(empty)).toEqual([]);
    },
  );

  it(
    'opens the folder itself when no server runs, and refuses PostgreSQL and S3 with the tools to use',
    { timeout: 300_000 },
    async () => {
      const dataDir = path.join(work, 'stopped');
      const migrated = await runCli(['user:create', 'offline_user', '--password-env', 'PW'], {
        DATA_DIR: dataDir,
        PW: 'a long password',
      });
      expect(migrated.code, migrated.out).toBe(0);
      const file = path.join(work, 'stopped.tar');
      const backup = await runCli(['backup', file], { DATA_DIR: dataDir });
      expect(backup.code, backup.out).toBe(0);
      expect(backup.out).toContain('"viaServer":false');
      // The file exists now: a second backup to it is refused rather than overwriting it.
      const again = await runCli(['backup', file], { DATA_DIR: dataDir });
      expect([again.code, again.out.includes(`There is already a file at ${file}`)]).toEqual([2, true]);
      const restored = path.join(work, 'stopped-restored');
      expect((await runCli(['restore', file], { DATA_DIR: restored })).code).toBe(0);
      const grade = await runCli(['user:grade', 'offline_user', '1'], { DATA_DIR: restored });
      expect(grade.out).toContain('User offline_user now has grade 1.');

      const scaled: Array<[Record<string, string>, string]> = [
        [{ DATABASE_URL: 'postgres://sideport@127.0.0.1:1/sideport' }, 'DATABASE_URL (use pg_dump)'],
        [{ STORAGE_URL: 's3://bucket?endpoint=http://127.0.0.1:1' }, 'STORAGE_URL (copy the bucket)'],
      ];
      const postgres = process.env.TEST_DATABASE_URL ? await createPostgresDatabase() : undefined;
      if (postgres) scaled.push([{ DATABASE_URL: postgres.url }, 'DATABASE_URL (use pg_dump)']);
      try {
        for (const [env, says] of scaled) {
          for (const command of ['backup', 'restore']) {
            const run = await runCli([command, path.join(work, `scaled-${command}.tar`)], {
              DATA_DIR: path.join(work, 'scaled'),
              ...env,
            });
            expect(run.code).toBe(2);
            expect(run.out).toContain(says);
            expect(run.out).toContain("see the README's Backups section");
          }
        }
      } finally {
        await postgres?.drop();
      }
    },
  );
});
