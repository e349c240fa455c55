import { readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The IPA toolkit's own test zip writer: ordinary writers refuse to make a zip-slip archive.
import { openZipFromBuffer } from '@sideport/ipa';
import { buildZip, withEntry, withSharedRecord } from '@sideport/ipa/test-support/build-zip';
import { withCryptid } from '@sideport/ipa/test-support/macho-bytes';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { createTestApp, databaseKinds, signedInUser, WEB_CLIENT, type TestApp } from '../../test/harness.js';
import {
  buildIpa,
  makeAgent,
  makePremium,
  storeApp,
  storeWith,
  type AgentClient,
} from '../../test/decrypt-support.js';

const FREE_LIMIT = 3;

/** Every file stored under DATA_DIR/files (local storage), as relative paths. */
function storedFiles(dataDir: string): string[] {
  const root = path.join(dataDir, 'files');
  const walk = (dir: string): string[] => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return [];
    }
    return names.flatMap((name) => {
      const full = path.join(dir, name);
      return statSync(full).isDirectory() ? walk(full) : [path.relative(root, full)];
    });
  };
  return walk(root);
}

describe.each(databaseKinds)('decrypt pipeline on %s', (kind) => {
  let store: ItunesServer;
  let t: TestApp;
  let now = new Date('2026-11-23T10:00:00Z');
  let user: string;
  let other: string;
  let admin: string;
  let agent: AgentClient;
  let seq = 0;
  const app = (n: number) => 5000 + n;
  const READY = { appId: app(28), appVerId: '880028', bundleId: 'com.example.app28' };

  beforeAll(async () => {
    store = await storeWith([
      ...Array.from({ length: 30 }, (_, i) => storeApp(app(i), `com.example.app${i}`, { version: `1.${i}` })),
      storeApp(7001, 'com.example.paid', { price: 4.99, trackName: 'Paid App' }),
    ]);
    t = await createTestApp(kind, {
      env: {
        ITUNES_BASE_URL: store.url,
        LIST_CACHE_MS: '0',
        SIGN_IN_LIMIT_PER_ADDRESS: '10000',
        FREE_DAILY_LIMIT: String(FREE_LIMIT),
        DECRYPT_MAX_ATTEMPTS: '2',
        DECRYPT_LEASE_SECONDS: '30',
        DECRYPT_MAX_IPA_MB: '5',
        VERSIONS_WAIT_SECONDS: '10',
      },
      clock: () => now,
    });
    user = await signedInUser(t, `user_${kind}`);
    other = await signedInUser(t, `other_${kind}`);
    admin = await signedInUser(t, `admin_${kind}`, 1);
    agent = await makeAgent(t, admin);
    // A Done version the tests only read (an operator's import: no request, no job).
    await t.services.jobs.importIpa(
      await buildIpa({ bundleId: READY.bundleId, version: '1.28', appVerId: READY.appVerId }),
      {
        country: 'KR',
        appId: READY.appId,
      },
    );
  });
  afterAll(async () => {
    await t.close();
    await store.close();
  });

  const get = (url: string, cookie: string) => t.app.inject({ url, headers: { cookie, ...WEB_CLIENT } });
  const request = (n: number, cookie = user) => get(`/api/decrypt/KR/${app(n)}`, cookie);
  /** Claims until the job of `appId` comes (other tests' jobs are failed out of the way). */
  async function claimFor(appId: number, by = agent) {
    for (let i = 0; i < 50; i++) {
      const { job } = await by.claim();
      if (!job) throw new Error(`no job for ${appId}`);
      if (job.app_id === String(appId)) return job;
      await by.call('POST', `/api/agent/jobs/${job.id}/fail`, { reason: 'not this test', unsupported: true });
    }
    throw new Error('too many jobs');
  }
  const upload = (jobId: string, file: string, query = '', by = agent) =>
    by.call('PUT', `/api/agent/jobs/${jobId}/ipa${query}`, readFileSync(file));

  it('takes a request from a signed-in person to a download, through an agent', async () => {
    const asked = await request(0);
    expect(asked.statusCode).toBe(200);
    expect(asked.json()).toMatchObject({
      status: 'Pending',
      app_id: String(app(0)),
      app_ver_id: null,
      joined: false,
      premium: false,
    });

    const queue = await get('/api/queue/0', user);
    expect(queue.json()).toEqual([expect.objectContaining({ app_id: String(app(0)), status: 'Pending' })]);

    const job = await claimFor(app(0));
    expect(job).toMatchObject({
      kind: 'decrypt',
      country: 'kr',
      bundle_id: 'com.example.app0',
      app_ver_id: null,
      attempt: 1,
    });

    const beat = await agent.call('POST', `/api/agent/jobs/${job.id}/heartbeat`, {
      status: 'Downloaded',
      progress: 40,
      app_ver_id: '880001',
    });
    expect(beat.statusCode).toBe(200);
    expect((await get('/api/queue/0', user)).json()[0]).toMatchObject({ status: 'Downloaded' });

    const ipa = await buildIpa({ bundleId: 'com.example.app0', version: '1.0' });
    const done = await upload(job.id, ipa);
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json()).toEqual({
      status: 'Done',
      app_ver_id: '880001',
      version: '1.0',
      size_bytes: statSync(ipa).size,
    });

    const latest = (await get('/api/latest/0', user)).json() as Array<Record<string, unknown>>;
    expect(latest[0]).toMatchObject({
      app_id: String(app(0)),
      app_ver_id: '880001',
      status: 'Done',
      version: '1.0',
      require: '11.2',
    });
    expect((await get('/api/queue/0', user)).json()).toEqual([]);

    const versions = (await get(`/api/version/KR/${app(0)}`, user)).json() as Array<Record<string, unknown>>;
    expect(versions).toEqual([
      expect.objectContaining({ app_ver_id: '880001', status: 'Done', normal_sign: 'No', dup_sign: 'No' }),
    ]);

    const link = await get(`/api/download/${app(0)}/880001`, user);
    expect(link.statusCode).toBe(200);
    const url = new URL((link.json() as { url: string }).url);
    const file = await t.app.inject({ url: url.pathname + url.search });
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-disposition']).toContain(`filename="App ${app(0)}_1.0.ipa"`);
    expect(file.rawPayload.equals(readFileSync(ipa))).toBe(true);

    const part = await t.app.inject({ url: url.pathname + url.search, headers: { range: 'bytes=0-3' } });
    expect(part.statusCode).toBe(206);
    expect(part.rawPayload).toEqual(Buffer.from('PK\x03\x04', 'latin1'));
  });

  it('refuses a tampered or expired download link with 403', async () => {
    const link = await get(`/api/download/${READY.appId}/${READY.appVerId}`, user);
    const url = new URL((link.json() as { url: string }).url);
    const tampered = url.pathname.replace(READY.appVerId, '880002') + url.search;
    const res = await t.app.inject({ url: tampered });
    expect(res.statusCode).toBe(403);
    expect(res.body).toBe('This download link is not valid or has expired. Ask for a new one.');
    const before = now;
    try {
      now = new Date(now.getTime() + 601_000);
      expect((await t.app.inject({ url: url.pathname + url.search })).statusCode).toBe(403);
    } finally {
      now = before;
    }
  });

  it('lets a second request join the first without counting against the daily limit', async () => {
    const joiner = `joiner_${kind}_${++seq}`;
    const cookie = await signedInUser(t, joiner);
    const first = await request(1, other);
    expect(first.json()).toMatchObject({ status: 'Pending', joined: false });
    const joined = await request(1, cookie);
    expect(joined.json()).toMatchObject({
      status: 'Pending',
      joined: true,
      message: 'This app is already requested; your request joined it.',
    });
    const ready = await get(`/api/decrypt/KR/${READY.appId}`, cookie);
    expect(ready.json()).toMatchObject({ status: 'Done', message: 'This version is already decrypted.' });
    expect((await t.services.billing.dailyUsage(joiner)).used).toBe(0);
  });

  it('refuses the request past the daily limit with 429, and counts nothing for it', async () => {
    const cookie = await signedInUser(t, `limited_${kind}_${++seq}`);
    for (let n = 10; n < 10 + FREE_LIMIT; n++) expect((await request(n, cookie)).statusCode).toBe(200);
    const refused = await request(10 + FREE_LIMIT, cookie);
    expect(refused.statusCode).toBe(429);
    expect(refused.body).toBe('Daily limit reached.');
    const queue = (await get('/api/queue/0', user)).json() as Array<{ app_id: string }>;
    expect(queue.map((e) => e.app_id)).not.toContain(String(app(10 + FREE_LIMIT)));
  });

  it('refuses blacklisted and paid apps with a sentence', async () => {
    expect((await request(22, await signedInUser(t, `asker_${kind}_${++seq}`))).statusCode).toBe(200);
    await t.services.catalog.deleteQueued(`admin_${kind}`, app(22), null, { blacklist: true });
    const black = await request(22);
    expect(black.statusCode).toBe(403);
    expect(black.body).toBe('This app is on the black list and cannot be requested.');

    const paid = await get('/api/decrypt/KR/7001', user);
    expect(paid.statusCode).toBe(403);
    expect(paid.body).toBe('Paid apps are not decrypted on this server.');
    const search = await t.app.inject({
      url: '/api/search/kr/Paid App',
      headers: { cookie: user, ...WEB_CLIENT },
    });
    expect(search.json()).toEqual([expect.objectContaining({ app_id: '7001', status: 'Not' })]);
  });

  it('keeps version requests, version lists and the premium queue for premium users', async () => {
    expect((await get(`/api/decrypt/KR/${app(2)}/123`, user)).body).toBe('Need decrypt premium.');
    expect(
      (
        await t.app.inject({
          method: 'PATCH',
          url: `/api/decrypt/KR/${app(2)}`,
          headers: { cookie: user, ...WEB_CLIENT },
        })
      ).statusCode,
    ).toBe(403);
    expect(
      (
        await t.app.inject({
          method: 'POST',
          url: `/api/version/KR/${app(2)}`,
          headers: { cookie: user, ...WEB_CLIENT },
        })
      ).body,
    ).toBe('Need decrypt premium.');
  });

  it('lists the store versions of a downgrade from a versions job, and queues a version-specific request first', async () => {
    const premium = await signedInUser(t, `premium_${kind}`);
    await makePremium(t, premium);
    // A free request waits; then a premium user asks for the app's history.
    const free = await signedInUser(t, `free_${kind}`);
    expect((await request(20, free)).json()).toMatchObject({ status: 'Pending', premium: false });

    const history = t.app.inject({
      method: 'POST',
      url: `/api/version/KR/${app(20)}`,
      headers: { cookie: premium, ...WEB_CLIENT },
    });
    const job = await claimFor(app(20));
    expect(job).toMatchObject({ kind: 'versions', bundle_id: 'com.example.app20' });
    const listed = await agent.call('POST', `/api/agent/jobs/${job.id}/versions`, {
      versions: [
        { app_ver_id: 900003, version: '1.20' },
        { app_ver_id: '900002', version: '1.19' },
        { app_ver_id: 900001, version: '1.18' },
      ],
    });
    expect(listed.statusCode).toBe(204);
    const answer = (await history).json() as {
      name: string;
      version_list: Array<{ app_ver_id: string | null; status: string; version: string }>;
    };
    expect(answer.name).toBe(`App ${app(20)}`);
    expect(answer.version_list.map((v) => [v.app_ver_id, v.version, v.status])).toEqual([
      [null, '1.20', 'Pending'],
      ['900003', '1.20', 'Available'],
      ['900002', '1.19', 'Available'],
      ['900001', '1.18', 'Available'],
    ]);

    const old = await get(`/api/decrypt/KR/${app(20)}/900001`, premium);
    expect(old.json()).toMatchObject({
      status: 'Pending',
      app_ver_id: '900001',
      version: '1.18',
      premium: true,
      joined: false,
    });
    const unknown = await get(`/api/decrypt/KR/${app(20)}/900009`, premium);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toBe("This version is not in the app's version list. Open Downgrade to load it.");

    // Premium entries come first; a PATCH moves the free one up beside it.
    const order = async () =>
      ((await get('/api/queue/0', premium)).json() as Array<{ app_id: string; app_ver_id: string | null }>)
        .filter((e) => e.app_id === String(app(20)))
        .map((e) => e.app_ver_id);
    expect(await order()).toEqual(['900001', null]);
    const moved = await t.app.inject({
      method: 'PATCH',
      url: `/api/decrypt/KR/${app(20)}`,
      headers: { cookie: premium, ...WEB_CLIENT },
    });
    expect(moved.json()).toMatchObject({ premium: true, app_ver_id: null });
    expect(await order()).toEqual([null, '900001']);
    const next = await claimFor(app(20));
    expect(next.app_ver_id).toBeNull();
  });

  it('refuses an encrypted upload, stores nothing, and gives the job back with the reason', async () => {
    const before = storedFiles(t.dataDir);
    expect((await request(3)).statusCode).toBe(200);
    const job = await claimFor(app(3));
    const encrypted = await buildIpa({ bundleId: 'com.example.app3', version: '1.3', cryptid: 1 });
    const refused = await upload(job.id, encrypted, '?app_ver_id=880003');
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toMatch(
      /^The IPA is still encrypted \(cryptid is not 0 in Payload\/very-capable-app\.app\/very-capable-app\)\.$/,
    );
    expect(storedFiles(t.dataDir)).toEqual(before);
    const queued = (await get('/api/queue/0', user)).json() as Array<{ app_id: string; status: string }>;
    expect(queued.find((e) => e.app_id === String(app(3)))?.status).toBe('Pending');

    // Second and last attempt (DECRYPT_MAX_ATTEMPTS=2): a wrong app.
    const again = await claimFor(app(3));
    expect(again.attempt).toBe(2);
    const wrong = await buildIpa({ bundleId: 'com.example.other', version: '1.3' });
    const second = await upload(again.id, wrong, '?app_ver_id=880003');
    expect(second.statusCode).toBe(422);
    expect(second.body).toBe('The IPA is com.example.other, not the requested com.example.app3.');
    const search = await t.app.inject({
      url: `/api/search/kr/App ${app(3)}`,
      headers: { cookie: user, ...WEB_CLIENT },
    });
    expect(search.json()).toEqual([expect.objectContaining({ status: 'Not' })]);
    expect(storedFiles(t.dataDir)).toEqual(before);
  });

  it('refuses truncated, oversized and unsafe uploads and wrong tokens, changing nothing', async () => {
    expect((await request(4)).statusCode).toBe(200);
    const job = await claimFor(app(4));
    const good = readFileSync(await buildIpa({ bundleId: 'com.example.app4', version: '1.4' }));
    const before = storedFiles(t.dataDir);

    const stranger = await t.app.inject({
      method: 'PUT',
      url: `/api/agent/jobs/${job.id}/ipa`,
      headers: { authorization: 'Bearer spa_nottoken', 'content-type': 'application/octet-stream' },
      payload: good,
    });
    expect(stranger.statusCode).toBe(401);

    const truncated = await upload(
      job.id,
      writeTemp(good.subarray(0, good.length - 200)),
      '?app_ver_id=880004',
    );
    expect(truncated.statusCode).toBe(422);
    expect(truncated.body).toMatch(/^The IPA is not usable: /);

    const again = await claimFor(app(4));
    const big = Buffer.alloc(5 * 1024 * 1024 + 1, 1);
    const oversized = await agent.call('PUT', `/api/agent/jobs/${again.id}/ipa?app_ver_id=880004`, big);
    expect(oversized.statusCode).toBe(413);

    // A zip whose entry climbs out of the archive (zip-slip): refused before anything is unpacked.
    const slip = buildZip([
      { name: 'Payload/App.app/Info.plist', data: '<plist/>' },
      { name: '../../escaped.txt', data: 'x' },
    ]);
    const slipped = await agent.call('PUT', `/api/agent/jobs/${again.id}/ipa?app_ver_id=880004`, slip);
    expect(slipped.statusCode).toBe(422);
    expect(slipped.body).toMatch(/^The IPA is not usable: .*\.\.\/\.\.\/escaped\.txt/);
    expect(storedFiles(t.dataDir)).toEqual(before);
    expect(readdirSync(path.dirname(t.dataDir)).filter((name) => name === 'escaped.txt')).toEqual([]);
  });

  it('refuses uploads that hide encrypted code or share bytes between entries, storing nothing', async () => {
    expect((await request(25, await signedInUser(t, `uploader_${kind}`))).statusCode).toBe(200);
    const job = await claimFor(app(25));
    const good = readFileSync(await buildIpa({ bundleId: 'com.example.app25', version: '1.25' }));
    const before = storedFiles(t.dataDir);

    // A decrypted app that also carries an encrypted Mach-O under a resource's name and mode.
    const sample = await openZipFromBuffer(good);
    const encrypted = withCryptid(
      await sample.readEntry(sample.find('Payload/very-capable-app.app/very-capable-app')!),
      1,
    );
    sample.close();
    const hidden = withEntry(good, {
      name: 'Payload/very-capable-app.app/Frameworks/Hidden.framework/Hidden.dat',
      data: encrypted,
      mode: 0o100644,
    });
    const hiding = await agent.call('PUT', `/api/agent/jobs/${job.id}/ipa?app_ver_id=880025`, hidden);
    expect(hiding.statusCode).toBe(422);
    expect(hiding.body).toBe(
      'The IPA is still encrypted (cryptid is not 0 in Payload/very-capable-app.app/Frameworks/Hidden.framework/Hidden.dat).',
    );

    // A decrypted app with 100 more central entries over one record (signing copied it once per entry).
    const again = await claimFor(app(25));
    const shared = await agent.call(
      'PUT',
      `/api/agent/jobs/${again.id}/ipa?app_ver_id=880025`,
      withSharedRecord(good, 100),
    );
    expect(shared.statusCode).toBe(422);
    expect(shared.body).toMatch(
      /^The IPA is not usable: Expected each entry's bytes to follow the previous entry's, found ".*\.copy-0" starting at offset \d+, inside /,
    );
    expect(storedFiles(t.dataDir)).toEqual(before);
    const search = await t.app.inject({
      url: `/api/search/kr/App ${app(25)}`,
      headers: { cookie: user, ...WEB_CLIENT },
    });
    expect(search.json()).toEqual([expect.objectContaining({ status: 'Not' })]);
  });

  it('gives a job whose agent went quiet back to the queue, and refuses the old agent afterwards', async () => {
    expect((await request(5, other)).statusCode).toBe(200);
    const job = await claimFor(app(5));
    now = new Date(now.getTime() + 31_000);
    expect(await t.services.jobs.sweepExpiredLeases()).toBeGreaterThan(0);
    const queued = (await get('/api/queue/0', user)).json() as Array<{ app_id: string; status: string }>;
    expect(queued.find((e) => e.app_id === String(app(5)))?.status).toBe('Pending');
    const late = await agent.call('POST', `/api/agent/jobs/${job.id}/heartbeat`, { progress: 90 });
    expect(late.statusCode).toBe(409);
    const second = await makeAgent(t, admin, 'second');
    const retaken = await claimFor(app(5), second);
    expect(retaken.attempt).toBe(2);
    const ipa = await buildIpa({ bundleId: 'com.example.app5', version: '1.5' });
    expect((await upload(retaken.id, ipa, '?app_ver_id=880005', second)).statusCode).toBe(200);
    expect((await upload(job.id, ipa, '?app_ver_id=880005')).statusCode).toBe(409);
  });

  it('gives an admin-retried job a new lease, so the agent that held the old one cannot act on it', async () => {
    expect((await request(6, other)).statusCode).toBe(200);
    const held = await claimFor(app(6));
    const queue = (
      await t.app.inject({ url: '/api/admin/queue/0', headers: { cookie: admin, ...WEB_CLIENT } })
    ).json() as Array<{ seq: string; app_id: string }>;
    const seqOf = queue.find((e) => e.app_id === String(app(6)))!.seq;
    const retried = await t.app.inject({
      method: 'POST',
      url: `/api/admin/queue/${seqOf}/retry`,
      headers: { cookie: admin, ...WEB_CLIENT },
    });
    expect(retried.statusCode).toBe(204);

    const second = await makeAgent(t, admin, 'after-retry');
    const fresh = await claimFor(app(6), second);
    expect(fresh.attempt).toBe(1);
    expect(fresh.id).not.toBe(held.id);
    const late = await agent.call('POST', `/api/agent/jobs/${held.id}/heartbeat`, { progress: 50 });
    expect(late.statusCode).toBe(409);
    const ipa = await buildIpa({ bundleId: 'com.example.app6', version: '1.6' });
    expect((await upload(held.id, ipa, '?app_ver_id=880006')).statusCode).toBe(409);
    expect((await upload(fresh.id, ipa, '?app_ver_id=880006', second)).statusCode).toBe(200);
  });

  it('keeps every admin route from non-admins', async () => {
    for (const [method, url] of [
      ['POST', '/api/admin/agents'],
      ['GET', '/api/admin/agents'],
      ['DELETE', `/api/admin/agents/${agent.id}`],
      ['GET', '/api/admin/queue/0'],
      ['POST', '/api/admin/queue/1/retry'],
      ['GET', '/api/admin/audit/0'],
    ] as const) {
      const res = await t.app.inject({
        method,
        url,
        headers: { cookie: user, ...WEB_CLIENT },
        ...(method === 'POST' ? { payload: { name: 'x' } } : {}),
      });
      expect(res.statusCode, `${method} ${url}`).toBe(403);
    }
  });
});

let tempCount = 0;
const temps: string[] = [];
afterAll(() => temps.forEach((file) => rmSync(file, { force: true })));
function writeTemp(bytes: Buffer) {
  const file = path.join(process.env.TMPDIR ?? '/tmp', `sideport-upload-${process.pid}-${++tempCount}.ipa`);
  writeFileSync(file, bytes);
  temps.push(file);
  return file;
}
