import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePlist, parseProfile, type PlistObject } from '@sideport/ipa';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { buildIpa, storeApp, storeWith } from '../../test/decrypt-support.js';
import { createTestApp, databaseKinds, signedInUser, WEB_CLIENT, type TestApp } from '../../test/harness.js';
import * as devices from '../devices/queries.js';
import { missingTools } from '@sideport/ipa/test-support/system-tools';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('unzip');

const APP_ID = 6300;
const APP_VER_ID = 863000001;
const UDID = '00008110-000A1B2C3D4E5F61';

/** With S3 storage, where sign workers may run on other machines than the one a version arrived on. */
describe.skipIf(skip).each(databaseKinds)('sign service with S3 storage on %s', (kind) => {
  let s3: S3rver;
  let s3Dir: string;
  let store: ItunesServer;
  let t: TestApp;
  const cacheDir = () =>
    path.join(t.dataDir, 'sign-cache', 'versions', `${APP_ID}-${APP_VER_ID}`, 'resource-digests');

  beforeAll(async () => {
    s3Dir = mkdtempSync(path.join(tmpdir(), 'sideport-sign-s3-'));
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
    store = await storeWith([storeApp(APP_ID, 'com.example.signs3')]);
    t = await createTestApp(kind, {
      env: {
        ITUNES_BASE_URL: store.url,
        STORAGE_URL: `s3://ipas/sideport?endpoint=http://127.0.0.1:${port}&region=us-east-1&forcePathStyle=true`,
      },
    });
    const ipa = await buildIpa({
      bundleId: 'com.example.signs3',
      version: '2.0',
      appVerId: String(APP_VER_ID),
    });
    await t.services.jobs.importIpa(ipa, { country: 'KR', appId: APP_ID });
  });
  afterAll(async () => {
    await t?.close();
    await store?.close();
    await s3?.close();
    rmSync(s3Dir, { recursive: true, force: true });
  });

  it("keeps the version's digest cache in the bucket, and a worker without it fetches it before signing", async () => {
    const warmed = readdirSync(cacheDir()).sort();
    expect(warmed).toHaveLength(2);
    // As a worker on another machine: no local cache.
    rmSync(path.join(t.dataDir, 'sign-cache'), { recursive: true, force: true });
    const cookie = await signedInUser(t, `s3signer_${kind}`);
    await devices.insertDevice(t.database.db, {
      userId: `s3signer_${kind}`,
      product: 'iPhone15,2',
      udid: UDID,
      status: 'Registered',
    });
    const done = new Promise<void>((resolve) =>
      t.services.bus.subscribe((m) => {
        if (m.kind === 'live' && m.event.type === 'sign' && m.event.status === 'Done') resolve();
      }),
    );
    const res = await t.app.inject({
      method: 'PUT',
      url: `/api/sign/${APP_ID}/${APP_VER_ID}`,
      payload: { type: 0 },
      headers: { cookie, ...WEB_CLIENT },
    });
    expect(res.json()).toMatchObject({ status: 'Pending' });
    await done;
    // Both modes' digests came back from the bucket (a sign that digested itself writes only its own).
    expect(readdirSync(cacheDir()).sort()).toEqual(warmed);

    // The manifest names the IPA on a presigned URL of the bucket, which iOS fetches directly.
    const install = await t.app.inject({
      url: `/api/install/${APP_ID}/${APP_VER_ID}/0`,
      headers: { cookie, ...WEB_CLIENT },
    });
    const manifestUrl = new URL(decodeURIComponent(/&url=(.+)$/.exec(install.json().url)![1]!));
    const manifest = await t.app.inject({ url: `${manifestUrl.pathname}${manifestUrl.search}` });
    const [item] = (parsePlist(Buffer.from(manifest.body)) as { items: PlistObject[] }).items;
    const ipaUrl = (item!.assets as PlistObject[])[0]!.url as string;
    expect(ipaUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/ipas\/sideport\/signed\/.+X-Amz-Signature=/);
    const ipa = Buffer.from(await (await fetch(ipaUrl)).arrayBuffer());
    const dir = mkdtempSync(path.join(tmpdir(), 'sideport-sign-s3-ipa-'));
    writeFileSync(path.join(dir, 'app.ipa'), ipa);
    mkdirSync(path.join(dir, 'x'));
    execFileSync('unzip', ['-q', 'app.ipa', '-d', 'x'], { cwd: dir });
    const profile = readFileSync(
      path.join(dir, 'x', 'Payload', 'very-capable-app.app', 'embedded.mobileprovision'),
    );
    expect(parseProfile(profile).provisionedDevices).toEqual([UDID]);
    rmSync(dir, { recursive: true, force: true });
  });
});
