import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { buildIpa, storeApp, storeWith } from '../../test/decrypt-support.js';
import { createTestApp, databaseKinds, signedInUser, WEB_CLIENT, type TestApp } from '../../test/harness.js';
import * as devices from '../devices/queries.js';
import { whileSweepLocked } from './queries.js';
import { createFileSweep } from './sweep.js';

const APP_ID = 6500;
const APP_VER_ID = 865000001;
const UDID = '00008110-000A1B2C3D4E5F65';
const HOUR_MS = 3_600_000;
const TWO_HOURS_AGO = () => new Date(Date.now() - 2 * HOUR_MS);

const stores = ['local disk', 'S3'] as const;
const cases = databaseKinds.flatMap((kind) => stores.map((storage) => [storage, kind] as const));

describe.each(cases)('the file sweep with %s storage on %s', (storage, kind) => {
  let s3: S3rver | undefined;
  let s3Dir: string | undefined;
  let store: ItunesServer;
  let t: TestApp;
  let scratch: string;
  const lines: Array<{ obj: object; msg: string }> = [];
  const log = { info: (obj: object, msg: string) => lines.push({ obj, msg }), warn: () => {} };

  /** A sweep of this app's store and folders, as a process would run it at the time `now` says. */
  const sweepAt = (now: () => Date) =>
    createFileSweep({
      db: t.database.db,
      databaseKind: kind,
      files: t.services.files,
      clock: now,
      tmpDir: path.join(t.dataDir, 'tmp'),
      signCacheDir: path.join(t.dataDir, 'sign-cache'),
      spoolDir: path.join(scratch, 'spool'),
      minAgeMs: HOUR_MS,
      log,
    }).sweep();
  const storedKeys = async () => {
    const keys: string[] = [];
    for await (const file of t.services.files.list()) keys.push(file.key);
    return keys.sort();
  };
  /** Stores `bytes` under `key` as a process would before committing its row. */
  const storeFile = async (key: string, bytes: string) => {
    const file = path.join(scratch, randomUUID());
    writeFileSync(file, bytes);
    await t.services.files.putFile(key, file);
  };

  beforeAll(async () => {
    scratch = mkdtempSync(path.join(tmpdir(), 'sideport-sweep-'));
    let storageUrl: string | undefined;
    if (storage === 'S3') {
      s3Dir = mkdtempSync(path.join(tmpdir(), 'sideport-sweep-s3-'));
      s3 = new S3rver({
        port: 0,
        address: '127.0.0.1',
        directory: s3Dir,
        silent: true,
        configureBuckets: [{ name: 'ipas', configs: [] }],
      });
      const { port } = await s3.run();
      // s3rver's fixed credentials, found by the AWS SDK the usual way.
      process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
      process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
      storageUrl = `s3://ipas/sideport?endpoint=http://127.0.0.1:${port}&region=us-east-1&forcePathStyle=true`;
    }
    store = await storeWith([storeApp(APP_ID, 'com.example.sweep')]);
    t = await createTestApp(kind, {
      env: {
        ITUNES_BASE_URL: store.url,
        ORPHAN_SWEEP_MINUTES: '0',
        ...(storageUrl ? { STORAGE_URL: storageUrl } : {}),
      },
    });
    // A Done version and a user's signed artifact of it: two stored files their rows name.
    const ipa = await buildIpa({
      bundleId: 'com.example.sweep',
      version: '2.0',
      appVerId: String(APP_VER_ID),
    });
    await t.services.jobs.importIpa(ipa, { country: 'KR', appId: APP_ID });
    const user = `sweeper_${kind}_${storage === 'S3' ? 's3' : 'local'}`;
    const cookie = await signedInUser(t, user);
    await devices.insertDevice(t.database.db, {
      userId: user,
      product: 'iPhone15,2',
      udid: UDID,
      status: 'Registered',
    });
    const signed = new Promise<void>((resolve) =>
      t.services.bus.subscribe((m) => {
        if (m.kind === 'live' && m.event.type === 'sign' && m.event.status === 'Done') resolve();
      }),
    );
    const res = await t.app.inject({
      method: 'PUT',
      url: `/api/sign/${APP_ID}/${APP_VER_ID}`,
      payload: { type: 0 },
      headers: { ...WEB_CLIENT, cookie },
    });
    expect(res.statusCode, res.body).toBe(200);
    await signed;
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await store?.close();
    await s3?.close();
    if (s3Dir) rmSync(s3Dir, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  });

  it('removes stored files no row names once they are old, and keeps named, young and foreign ones', async () => {
    // The version's digest cache, kept in the store while the version exists.
    await storeFile(`sign-cache/${APP_ID}/${APP_VER_ID}.json`, '{"files":{}}');
    const named = await storedKeys();
    expect(named.filter((key) => key.startsWith('ipa/'))).toHaveLength(1);
    expect(named.filter((key) => key.startsWith('signed/'))).toHaveLength(1);
    // What killed processes leave: an upload stored but never committed, an artifact likewise,
    // and the digest cache of a version that was deleted since. And a file that is not Sideport's.
    const orphans = [
      `ipa/${APP_ID}/865000999/${randomUUID()}.ipa`,
      `signed/424242/${randomUUID()}.ipa`,
      `sign-cache/${APP_ID}/865000999.json`,
    ];
    for (const key of orphans) await storeFile(key, 'x'.repeat(1000));
    await storeFile('notes/readme.txt', 'the operator keeps this here');

    lines.length = 0;
    const young = await sweepAt(() => new Date());
    expect(young.stored).toEqual({ files: 0, bytes: 0 });
    expect(await storedKeys()).toEqual([...named, ...orphans, 'notes/readme.txt'].sort());

    const later = await sweepAt(() => new Date(Date.now() + 2 * HOUR_MS));
    expect(later.stored).toEqual({ files: 3, bytes: 3000 });
    expect(await storedKeys()).toEqual([...named, 'notes/readme.txt'].sort());
    expect(lines.at(-1)!.msg).toBe('file sweep: removed 3 files (3000 bytes) nothing uses');
    expect(lines.at(-1)!.obj).toMatchObject({ sweep: { stored: { files: 3, bytes: 3000 } } });

    // The user still downloads the version.
    const cookie = await signedInUser(t, `downloader_${kind}_${storage === 'S3' ? 's3' : 'local'}`);
    const link = await t.app.inject({
      url: `/api/download/${APP_ID}/${APP_VER_ID}`,
      headers: { ...WEB_CLIENT, cookie },
    });
    expect(link.statusCode, link.body).toBe(200);
  });

  it('removes a stale partial upload in DATA_DIR/tmp and a dead signing spool, and keeps fresh ones', async () => {
    const tmp = path.join(t.dataDir, 'tmp');
    mkdirSync(tmp, { recursive: true });
    const stale = path.join(tmp, `upload-${randomUUID()}.ipa`);
    const receiving = path.join(tmp, `upload-${randomUUID()}.ipa`);
    writeFileSync(stale, 'p'.repeat(500));
    utimesSync(stale, TWO_HOURS_AGO(), TWO_HOURS_AGO());
    writeFileSync(receiving, 'r'.repeat(300));
    const deadSpool = path.join(scratch, 'spool', 'sideport-sign-dead01');
    const liveSpool = path.join(scratch, 'spool', 'sideport-sign-live01');
    for (const dir of [deadSpool, liveSpool]) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'binary'), 'b'.repeat(200));
    }
    utimesSync(path.join(deadSpool, 'binary'), TWO_HOURS_AGO(), TWO_HOURS_AGO());
    utimesSync(deadSpool, TWO_HOURS_AGO(), TWO_HOURS_AGO());

    const result = await sweepAt(() => new Date());
    expect(result.temporary).toEqual({ files: 2, bytes: 700 });
    expect([existsSync(stale), existsSync(receiving), existsSync(deadSpool), existsSync(liveSpool)]).toEqual([
      false,
      true,
      false,
      true,
    ]);
  });

  it("removes this machine's digest cache of a version that is gone, and keeps the existing version's", async () => {
    const root = path.join(t.dataDir, 'sign-cache', 'versions');
    const gone = path.join(root, `${APP_ID}-865000998`);
    mkdirSync(path.join(gone, 'resource-digests'), { recursive: true });
    writeFileSync(path.join(gone, 'resource-digests', `${'a'.repeat(64)}.json`), '{}');
    for (const p of [
      path.join(gone, 'resource-digests', `${'a'.repeat(64)}.json`),
      path.join(gone, 'resource-digests'),
      gone,
    ]) {
      utimesSync(p, TWO_HOURS_AGO(), TWO_HOURS_AGO());
    }
    const kept = path.join(root, `${APP_ID}-${APP_VER_ID}`);
    mkdirSync(kept, { recursive: true });
    utimesSync(kept, TWO_HOURS_AGO(), TWO_HOURS_AGO());

    const result = await sweepAt(() => new Date());
    expect(result.signCache).toEqual({ files: 1, bytes: 2 });
    expect([existsSync(gone), existsSync(kept)]).toEqual([false, true]);
  });

  it.skipIf(kind !== 'postgres')('leaves the store to the process that holds the sweep lock', async () => {
    const orphan = `ipa/${APP_ID}/865000997/${randomUUID()}.ipa`;
    await storeFile(orphan, 'y');
    const later = () => new Date(Date.now() + 2 * HOUR_MS);
    // Another process is sweeping: this one sweeps only its own folders.
    const meanwhile = await whileSweepLocked(t.database.db, () => sweepAt(later));
    expect(meanwhile!.stored).toBeUndefined();
    expect(lines.at(-1)!.msg).toMatch(/; another process swept the store$/);
    expect(await storedKeys()).toContain(orphan);
    expect((await sweepAt(later)).stored).toEqual({ files: 1, bytes: 1 });
    expect(await storedKeys()).not.toContain(orphan);
  });
});
