import { readFileSync, statSync } from 'node:fs';
import { appList, queueStatus, type AppEntry } from '@sideport/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import * as catalog from '../catalog/queries.js';

/**
 * What an entry tells beyond the spec's fields, as the web app shows it: the decrypted IPA's size
 * and minimum iOS beside the store listing's, when it was decrypted, a waiting entry's place in the
 * queue, whether anyone works the queue, why an entry is Not (to whom), and versions newest first.
 */
describe.each(databaseKinds)('entry facts on %s', (kind) => {
  let store: ItunesServer;
  let t: TestApp;
  let now = new Date('2026-11-23T10:00:00Z');
  let user: string;
  let premium: string;
  let other: string;
  let admin: string;
  let agent: AgentClient;

  const APPS = { free: 6100, waiting: 6101, premium: 6102, unsupported: 6103, paid: 6104, versions: 6105 };

  beforeAll(async () => {
    store = await storeWith([
      // The store lists 64.49 MB and iOS 7.0 (the recorded Facebook answer); the sample IPA needs 11.2.
      storeApp(APPS.free, 'com.example.free', { trackName: 'Free Facts' }),
      storeApp(APPS.waiting, 'com.example.waiting', { trackName: 'Waiting Facts' }),
      storeApp(APPS.premium, 'com.example.premium', { trackName: 'Premium Facts' }),
      storeApp(APPS.unsupported, 'com.example.unsupported', { trackName: 'Unsupported Facts' }),
      storeApp(APPS.paid, 'com.example.paidfacts', { trackName: 'Paid Facts', price: 2.99 }),
      storeApp(APPS.versions, 'com.example.versions', { trackName: 'Versioned Facts' }),
    ]);
    t = await createTestApp(kind, {
      env: { ITUNES_BASE_URL: store.url, LIST_CACHE_MS: '0', SIGN_IN_LIMIT_PER_ADDRESS: '10000' },
      clock: () => now,
    });
    user = await signedInUser(t, `facts_user_${kind}`);
    premium = await signedInUser(t, `facts_premium_${kind}`);
    other = await signedInUser(t, `facts_other_${kind}`);
    admin = await signedInUser(t, `facts_admin_${kind}`, 1);
    await makePremium(t, premium);
    agent = await makeAgent(t, admin);
  });
  afterAll(async () => {
    await t.close();
    await store.close();
  });

  const get = (url: string, cookie: string) => t.app.inject({ url, headers: { cookie, ...WEB_CLIENT } });
  const list = async (url: string, cookie = user) => appList.parse((await get(url, cookie)).json());
  const status = async () => queueStatus.parse((await t.app.inject({ url: '/api/queue-status' })).json());
  async function claimFor(appId: number) {
    for (let i = 0; i < 20; i++) {
      const { job } = await agent.claim({ wait_seconds: 0 });
      if (!job) break;
      if (job.app_id === String(appId)) return job;
      await agent.call('POST', `/api/agent/jobs/${job.id}/fail`, {
        reason: 'not this test',
        unsupported: true,
      });
    }
    throw new Error(`no job for ${appId}`);
  }

  it("gives a waiting entry its place in the agents' order, premium first, and says when no agent works", async () => {
    expect(await status()).toEqual({ waiting: 0, agent_seen_at: null, waiting_for_agent: false });
    await get(`/api/decrypt/KR/${APPS.waiting}`, user);
    await get(`/api/decrypt/KR/${APPS.premium}`, premium);
    const queue = await list('/api/queue/0');
    expect(queue.map((e) => [e.name, e.premium, e.position])).toEqual([
      ['Premium Facts', true, 1],
      ['Waiting Facts', false, 2],
    ]);
    // Requests wait and no agent has ever called.
    expect(await status()).toEqual({ waiting: 2, agent_seen_at: null, waiting_for_agent: true });

    // An agent calls: it works the queue, until it has been quiet for minutes.
    await agent.claim({ kinds: ['versions'], wait_seconds: 0 });
    const seen = now.toISOString();
    expect(await status()).toEqual({ waiting: 2, agent_seen_at: seen, waiting_for_agent: false });
    now = new Date(now.getTime() + 4 * 60_000);
    expect(await status()).toEqual({ waiting: 2, agent_seen_at: seen, waiting_for_agent: true });

    // A working entry has no place in line; the one behind it moves up.
    const job = await claimFor(APPS.premium);
    await agent.call('POST', `/api/agent/jobs/${job.id}/heartbeat`, { status: 'Downloading' });
    expect((await list('/api/queue/0')).map((e) => [e.name, e.status, e.position])).toEqual([
      ['Premium Facts', 'Downloading', null],
      ['Waiting Facts', 'Pending', 1],
    ]);
    expect((await status()).waiting_for_agent).toBe(false);
  });

  it("shows a Done version's IPA size and minimum iOS beside the store listing's, and when it was decrypted", async () => {
    await get(`/api/decrypt/KR/${APPS.free}`, user);
    const job = await claimFor(APPS.free);
    const ipa = await buildIpa({ bundleId: 'com.example.free', version: '1.0' });
    now = new Date(now.getTime() + 60_000);
    const done = await agent.call(
      'PUT',
      `/api/agent/jobs/${job.id}/ipa?app_ver_id=610001`,
      readFileSync(ipa),
    );
    expect(done.statusCode, done.body).toBe(200);

    const bytes = statSync(ipa).size;
    const expected = {
      name: 'Free Facts',
      // The sample IPA is a few kB: shown to the hundredth of a MB, never 0.
      size: Math.max(0.01, Math.round((bytes / 1024 / 1024) * 100) / 100),
      store_size: 64.49,
      require: '11.2',
      store_require: '7.0',
      decrypted_at: now.toISOString(),
    };
    expect(expected.size).toBeGreaterThan(0);
    const [latest] = await list('/api/latest/0');
    expect(latest).toMatchObject(expected);
    const [version] = await list(`/api/version/KR/${APPS.free}`);
    expect(version).toMatchObject(expected);
    // Before decryption there is only the listing: nothing to compare.
    const [searched] = await list(`/api/search/kr/${encodeURIComponent('Waiting Facts')}`);
    expect(searched).toMatchObject({
      size: 64.49,
      require: '7.0',
      store_size: null,
      store_require: null,
      decrypted_at: null,
    });
  });

  it("tells the requester and admins why an entry is Not, in the agent's words, and nobody else", async () => {
    await get(`/api/decrypt/KR/${APPS.unsupported}`, user);
    const job = await claimFor(APPS.unsupported);
    const reason = 'This app needs iOS 17 on the decrypting device.';
    await agent.call('POST', `/api/agent/jobs/${job.id}/fail`, { reason, unsupported: true });

    const search = `/api/search/kr/${encodeURIComponent('Unsupported Facts')}`;
    const versions = `/api/version/KR/${APPS.unsupported}`;
    const reasonsFor = async (cookie: string) =>
      [...(await list(search, cookie)), ...(await list(versions, cookie))].map((e: AppEntry) => [
        e.status,
        e.reason,
      ]);
    expect(await reasonsFor(user)).toEqual([
      ['Not', reason],
      ['Not', reason],
    ]);
    expect(await reasonsFor(admin)).toEqual([
      ['Not', reason],
      ['Not', reason],
    ]);
    expect(await reasonsFor(other)).toEqual([
      ['Not', null],
      ['Not', null],
    ]);
  });

  it('shows a paid app Not Support, with the reason, before anyone asks for it', async () => {
    const [paid] = await list(`/api/search/kr/${encodeURIComponent('Paid Facts')}`, other);
    expect(paid).toMatchObject({ status: 'Not', reason: 'Paid apps are not decrypted on this server.' });
    // Nothing was requested for it.
    expect((await list(`/api/version/KR/${APPS.paid}`, other)).length).toBe(0);
  });

  it('lists versions newest first by their number, whatever order the store ids have', async () => {
    // Store version ids are not in release order on every store (nor in a demo agent's history).
    for (const [appVerId, version] of [
      [610_501, '1.10'],
      [610_900, '1.9'],
      [610_200, '2.0'],
      [610_300, '1.10.1'],
    ] as const) {
      await catalog.insertVersion(t.database.db, {
        country: 'KR',
        appId: APPS.versions,
        appVerId,
        version,
        status: 'Done',
      });
    }
    const versions = await list(`/api/version/KR/${APPS.versions}`);
    expect(versions.map((e) => e.version)).toEqual(['2.0', '1.10.1', '1.10', '1.9']);
  });
});
