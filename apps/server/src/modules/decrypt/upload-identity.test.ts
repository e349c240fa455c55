import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { AdminQueueEntry } from '@sideport/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItunesServer } from '../../dev/itunes-server.js';
import {
  buildIpa,
  makeAgent,
  makePremium,
  storeApp,
  storeWith,
  type AgentClient,
} from '../../test/decrypt-support.js';
import { createTestApp, databaseKinds, signedInUser, WEB_CLIENT, type TestApp } from '../../test/harness.js';

const app = (n: number) => 7500 + n;
const bundleOf = (n: number) => `com.example.identity${n}`;

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

/**
 * An uploaded IPA must be the job's own app and version (docs/agent-protocol.md): its bundle id,
 * its version string and, when it carries an iTunesMetadata.plist, the store ids it names. For a
 * request of the current version, what the agent reported finding must agree with the IPA. A
 * contradiction fails the attempt with the reason, and nothing is stored.
 */
describe.each(databaseKinds)('an upload checked against its job on %s', (kind) => {
  let store: ItunesServer;
  let t: TestApp;
  let premium: string;
  let agent: AgentClient;
  let admin: string;

  beforeAll(async () => {
    store = await storeWith(
      [0, 1, 2, 3, 4, 5].map((n) =>
        storeApp(app(n), bundleOf(n), { version: '3.0', trackName: `Identity ${n}` }),
      ),
    );
    t = await createTestApp(kind, {
      env: {
        ITUNES_BASE_URL: store.url,
        LIST_CACHE_MS: '0',
        SIGN_IN_LIMIT_PER_ADDRESS: '10000',
        FREE_DAILY_LIMIT: '100',
        VERSIONS_WAIT_SECONDS: '10',
      },
    });
    premium = await signedInUser(t, `identity_premium_${kind}`);
    await makePremium(t, premium);
    admin = await signedInUser(t, `identity_admin_${kind}`, 1);
    agent = await makeAgent(t, admin);
  });
  afterAll(async () => {
    await t?.close();
    await store?.close();
  });

  const get = (url: string) => t.app.inject({ url, headers: { ...WEB_CLIENT, cookie: premium } });
  /** Claims until app n's job comes (jobs other tests left in the queue are failed out of the way). */
  async function claim(n: number) {
    for (let i = 0; i < 20; i++) {
      const { job } = await agent.claim({ wait_seconds: 5 });
      if (!job) break;
      if (job.app_id === String(app(n))) return job;
      await agent.call('POST', `/api/agent/jobs/${job.id}/fail`, {
        reason: 'not this test',
        unsupported: true,
      });
    }
    throw new Error(`no job for app ${app(n)}`);
  }
  /** Version 0.9 (store version id 95n109) requested from app n's history, and its job claimed. */
  async function versionJob(n: number) {
    const history = t.app.inject({
      method: 'POST',
      url: `/api/version/KR/${app(n)}`,
      headers: { ...WEB_CLIENT, cookie: premium },
    });
    const listing = await claim(n);
    const versions = [
      { app_ver_id: `95${n}110`, version: '3.0' },
      { app_ver_id: `95${n}109`, version: '0.9' },
    ];
    expect(
      (await agent.call('POST', `/api/agent/jobs/${listing.id}/versions`, { versions })).statusCode,
    ).toBe(204);
    expect((await history).statusCode).toBe(200);
    expect((await get(`/api/decrypt/KR/${app(n)}/95${n}109`)).json()).toMatchObject({
      status: 'Pending',
      version: '0.9',
    });
    return claim(n);
  }
  async function appJob(n: number) {
    expect((await get(`/api/decrypt/KR/${app(n)}`)).statusCode).toBe(200);
    return claim(n);
  }
  const upload = async (jobId: string, ipa: string, query = '') =>
    agent.call('PUT', `/api/agent/jobs/${jobId}/ipa${query}`, readFileSync(ipa));
  async function queued(n: number): Promise<AdminQueueEntry> {
    const list = (
      await t.app.inject({ url: '/api/admin/queue/0', headers: { ...WEB_CLIENT, cookie: admin } })
    ).json() as AdminQueueEntry[];
    return list.find((e) => e.app_id === String(app(n)))!;
  }
  /** The upload is refused with `reason` (422), the attempt fails with it, and nothing is stored. */
  async function expectRefused(n: number, jobId: string, ipa: string, query: string, reason: string) {
    const before = storedFiles(t.dataDir);
    const res = await upload(jobId, ipa, query);
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toBe(reason);
    expect(storedFiles(t.dataDir)).toEqual(before);
    expect(await queued(n)).toMatchObject({ status: 'Pending', attempts: 1, reason });
  }

  it("refuses an IPA of another version than a version job's, by its Info.plist", async () => {
    const job = await versionJob(0);
    const ipa = await buildIpa({ bundleId: bundleOf(0), version: '5.5.5' });
    await expectRefused(
      0,
      job.id,
      ipa,
      '',
      'The IPA is version 5.5.5 (CFBundleShortVersionString in its Info.plist), not the requested 0.9.',
    );
  });

  it("refuses an IPA whose iTunesMetadata.plist names another store version than a version job's", async () => {
    const job = await versionJob(1);
    const ipa = await buildIpa({ bundleId: bundleOf(1), version: '0.9', appVerId: '951999' });
    await expectRefused(
      1,
      job.id,
      ipa,
      '',
      "The IPA's iTunesMetadata.plist names store version 951999 (softwareVersionExternalIdentifier), not the requested 951109.",
    );
    // The right one is then accepted.
    const again = await claim(1);
    const right = await buildIpa({ bundleId: bundleOf(1), version: '0.9', appVerId: '951109' });
    const done = await upload(again.id, right);
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json()).toMatchObject({ status: 'Done', app_ver_id: '951109', version: '0.9' });
  });

  it("refuses an app-level upload whose iTunesMetadata.plist contradicts the agent's app_ver_id", async () => {
    const job = await appJob(2);
    const beat = await agent.call('POST', `/api/agent/jobs/${job.id}/heartbeat`, { app_ver_id: '952001' });
    expect(beat.statusCode).toBe(200);
    const ipa = await buildIpa({ bundleId: bundleOf(2), version: '3.0', appVerId: '952999' });
    await expectRefused(
      2,
      job.id,
      ipa,
      '',
      "The IPA's iTunesMetadata.plist names store version 952999 (softwareVersionExternalIdentifier), not the reported 952001.",
    );
  });

  it("refuses an app-level upload whose Info.plist contradicts the agent's version line", async () => {
    const job = await appJob(3);
    const beat = await agent.call('POST', `/api/agent/jobs/${job.id}/heartbeat`, { version: '3.1' });
    expect(beat.statusCode).toBe(200);
    const ipa = await buildIpa({ bundleId: bundleOf(3), version: '3.2' });
    await expectRefused(
      3,
      job.id,
      ipa,
      '?app_ver_id=953001',
      'The IPA is version 3.2 (CFBundleShortVersionString in its Info.plist), not the reported 3.1.',
    );
  });

  it('takes an app-level upload whose only store version id is its iTunesMetadata.plist', async () => {
    const job = await appJob(4);
    const ipa = await buildIpa({ bundleId: bundleOf(4), version: '3.0', appVerId: '954001' });
    const done = await upload(job.id, ipa, '?version=3.0');
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json()).toMatchObject({ status: 'Done', app_ver_id: '954001', version: '3.0' });
  });

  it('refuses an import that contradicts the version request it would answer, storing nothing', async () => {
    const job = await versionJob(5);
    const before = storedFiles(t.dataDir);
    const ipa = await buildIpa({ bundleId: bundleOf(5), version: '5.5.5', appVerId: '955109' });
    await expect(t.services.jobs.importIpa(ipa, { country: 'KR' })).rejects.toMatchObject({
      status: 422,
      message:
        'The IPA is version 5.5.5 (CFBundleShortVersionString in its Info.plist), not the requested 0.9.',
    });
    const stray = await buildIpa({ bundleId: bundleOf(5), version: '0.9', appVerId: '955109' });
    await expect(
      t.services.jobs.importIpa(stray, { country: 'KR', appId: app(5), appVerId: 955110 }),
    ).rejects.toMatchObject({
      status: 422,
      message:
        "The IPA's iTunesMetadata.plist names store version 955109 (softwareVersionExternalIdentifier), not the requested 955110.",
    });
    expect(storedFiles(t.dataDir)).toEqual(before);
    // The request still waits for its agent.
    expect((await agent.call('POST', `/api/agent/jobs/${job.id}/heartbeat`, {})).statusCode).toBe(200);
  });
});
