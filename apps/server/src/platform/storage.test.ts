import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItunesServer } from '../dev/itunes-server.js';
import { buildIpa, makeAgent, storeApp, storeWith } from '../test/decrypt-support.js';
import { createTestApp, databaseKinds, signedInUser, WEB_CLIENT, type TestApp } from '../test/harness.js';
import { createLocalStore, parseStorageUrl } from './storage.js';

describe('storage URLs', () => {
  it('reads bucket, prefix, endpoint, region and path style from STORAGE_URL', () => {
    expect(
      parseStorageUrl(
        's3://ipas/sideport?endpoint=https://s3.example:9000&region=eu-west-1&forcePathStyle=true',
      ),
    ).toEqual({
      bucket: 'ipas',
      prefix: 'sideport',
      endpoint: 'https://s3.example:9000',
      region: 'eu-west-1',
      forcePathStyle: true,
    });
    expect(() => parseStorageUrl('https://bucket')).toThrow(/s3:\/\/bucket/);
    expect(() => parseStorageUrl('s3://b?endpoint=ftp://x')).toThrow(/http/);
  });

  it('never writes outside its folder, whatever key it is given', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'sideport-store-'));
    const store = createLocalStore(path.join(root, 'files'));
    const source = path.join(root, 'x');
    writeFileSync(source, 'x');
    for (const key of ['../escape', 'a/../../b', '/abs', 'a//b', 'a/./b', '']) {
      await expect(store.putFile(key, source)).rejects.toThrow(/Refusing the storage key/);
    }
    rmSync(root, { recursive: true, force: true });
  });
});

describe.each(databaseKinds)('S3-compatible storage on %s', (kind) => {
  let s3: S3rver;
  let s3Dir: string;
  let store: ItunesServer;
  let t: TestApp;
  let user: string;
  let admin: string;

  beforeAll(async () => {
    s3Dir = mkdtempSync(path.join(tmpdir(), 'sideport-s3-'));
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
    store = await storeWith([storeApp(6101, 'com.example.s3')]);
    t = await createTestApp(kind, {
      env: {
        ITUNES_BASE_URL: store.url,
        STORAGE_URL: `s3://ipas/sideport?endpoint=http://127.0.0.1:${port}&region=us-east-1&forcePathStyle=true`,
      },
    });
    user = await signedInUser(t, `s3user_${kind}`);
    admin = await signedInUser(t, `s3admin_${kind}`, 1);
  });
  afterAll(async () => {
    await t.close();
    await store.close();
    await s3.close();
    rmSync(s3Dir, { recursive: true, force: true });
  });

  it('stores an accepted IPA in the bucket, hands out a presigned link, and deletes it with the version', async () => {
    expect(
      (await t.app.inject({ url: '/api/decrypt/KR/6101', headers: { cookie: user, ...WEB_CLIENT } }))
        .statusCode,
    ).toBe(200);
    const agent = await makeAgent(t, admin);
    const { job } = await agent.claim();
    const ipa = await buildIpa({ bundleId: 'com.example.s3', version: '2.0' });
    const done = await agent.call(
      'PUT',
      `/api/agent/jobs/${job!.id}/ipa?app_ver_id=77001`,
      readFileSync(ipa),
    );
    expect(done.statusCode, done.body).toBe(200);

    const link = (
      await t.app.inject({ url: '/api/download/6101/77001', headers: { cookie: user } })
    ).json() as { url: string };
    expect(link.url).toMatch(
      /^http:\/\/127\.0\.0\.1:\d+\/ipas\/sideport\/ipa\/6101\/77001\/[0-9a-f-]+\.ipa\?.*X-Amz-Signature=/,
    );
    const fetched = await fetch(link.url);
    expect(fetched.status).toBe(200);
    expect(fetched.headers.get('content-disposition')).toContain('App 6101_2.0.ipa');
    expect(Buffer.from(await fetched.arrayBuffer()).equals(readFileSync(ipa))).toBe(true);

    // The store checks the signature; the link lives DOWNLOAD_URL_TTL_SECONDS (600 by default).
    expect(new URL(link.url).searchParams.get('X-Amz-Expires')).toBe('600');

    const removed = await t.app.inject({
      method: 'DELETE',
      url: '/api/app/6101/77001',
      headers: { cookie: admin, ...WEB_CLIENT },
    });
    expect(removed.statusCode).toBe(204);
    expect((await fetch(link.url)).status).toBe(404);
  });
});
