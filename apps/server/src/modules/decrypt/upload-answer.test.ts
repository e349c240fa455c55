import { createReadStream, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { buildIpa, makeAgent, storeApp, storeWith, type AgentClient } from '../../test/decrypt-support.js';
import { createTestApp, databaseKinds, signedInUser, WEB_CLIENT, type TestApp } from '../../test/harness.js';
import { runInSignProcess } from '../sign/run-task.js';
import { createSignCache } from '../sign/sign-cache.js';
import { createJobService, type JobService } from './jobs.js';

const app = (n: number) => 7400 + n;
const bundleOf = (n: number) => `com.example.answer${n}`;

/**
 * An agent's upload is answered once the version is Done: the sign digest cache is warmed after,
 * in the background, so the agent's heartbeats never meet a finished job long before its answer
 * (and one that does is told the job is finished, not that it was taken back).
 */
describe.each(databaseKinds)('the answer to an upload on %s', (kind) => {
  let store: ItunesServer;
  let t: TestApp;
  let user: string;
  let agent: AgentClient;
  const logged: Array<{ msg: string; err?: unknown }> = [];
  /** The server's own warm-up, held until the test lets it run; `failWith` makes it fail instead. */
  let gate: { open(): void; opened: Promise<void>; failWith?: Error };
  let warmed: number[] = [];
  let jobs: JobService;

  const newGate = (failWith?: Error) => {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    gate = { open, opened, ...(failWith ? { failWith } : {}) };
  };

  beforeAll(async () => {
    store = await storeWith([0, 1, 2].map((n) => storeApp(app(n), bundleOf(n), { version: '3.0' })));
    t = await createTestApp(kind, {
      env: { ITUNES_BASE_URL: store.url, SIGN_IN_LIMIT_PER_ADDRESS: '10000', FREE_DAILY_LIMIT: '100' },
    });
    user = await signedInUser(t, `answer_user_${kind}`);
    agent = await makeAgent(t, await signedInUser(t, `answer_admin_${kind}`, 1));
    const log = {
      info: () => {},
      warn: (obj: object, msg: string) => void logged.push({ msg, ...obj }),
    };
    const cache = createSignCache({
      files: t.services.files,
      dir: path.join(t.dataDir, 'sign-cache'),
      tmpDir: path.join(t.dataDir, 'tmp'),
      run: runInSignProcess,
      log,
    });
    // The server's job service over the same database, with the sign cache's warm-up behind a gate.
    jobs = createJobService({
      db: t.database.db,
      clock: () => new Date(),
      bus: t.services.bus,
      files: t.services.files,
      catalog: t.services.catalog,
      settings: {
        leaseSeconds: 60,
        maxAttempts: 3,
        maxLostLeases: 10,
        maxIpaBytes: 50 * 1024 * 1024,
        tmpDir: path.join(t.dataDir, 'tmp'),
      },
      log,
      onVersionDone: async (done) => {
        await gate.opened;
        if (gate.failWith) throw gate.failWith;
        await cache.warm(done);
        warmed.push(done.appVerId);
      },
    });
  });
  afterAll(async () => {
    gate?.open();
    await jobs?.settle();
    await t?.close();
    await store?.close();
  });

  const agentRef = () => ({ id: Number(agent.id), name: 'mac-mini' });
  async function uploadFor(n: number, appVerId: string) {
    const asked = await t.app.inject({
      url: `/api/decrypt/KR/${app(n)}`,
      headers: { ...WEB_CLIENT, cookie: user },
    });
    expect(asked.statusCode).toBe(200);
    const job = (await jobs.claim(agentRef(), ['decrypt'], 0))!;
    expect(job.app_id).toBe(String(app(n)));
    const ipa = await buildIpa({ bundleId: bundleOf(n), version: '3.0', appVerId });
    return {
      job,
      answer: await jobs.acceptUpload(agentRef(), job.id, createReadStream(ipa), { app_ver_id: appVerId }),
    };
  }
  const digests = (appVerId: string) => {
    try {
      return readdirSync(
        path.join(t.dataDir, 'sign-cache', 'versions', `${app(0)}-${appVerId}`, 'resource-digests'),
      );
    } catch {
      return [];
    }
  };

  it('answers Done before the digest cache is warmed, then warms it in the background', async () => {
    newGate();
    warmed = [];
    const { job, answer } = await uploadFor(0, '940000');
    // The warm-up has not run yet (its gate is shut), and the answer is already here.
    expect(answer).toMatchObject({ status: 'Done', app_ver_id: '940000', version: '3.0' });
    expect(warmed).toEqual([]);
    expect(digests('940000')).toEqual([]);
    const versions = (
      await t.app.inject({ url: `/api/version/KR/${app(0)}`, headers: { ...WEB_CLIENT, cookie: user } })
    ).json() as Array<{ status: string }>;
    expect(versions).toEqual([expect.objectContaining({ app_ver_id: '940000', status: 'Done' })]);

    // A heartbeat that crossed the answer is told the job is finished, not that it was taken back.
    const beat = await agent.call('POST', `/api/agent/jobs/${job.id}/heartbeat`, { progress: 100 });
    expect(beat.statusCode).toBe(410);
    expect(beat.headers['content-type']).toMatch(/^text\/plain/);
    expect(beat.body).toBe('This job is finished: the server has its result.');
    const failed = await agent.call('POST', `/api/agent/jobs/${job.id}/fail`, { reason: 'a late failure' });
    expect(failed.statusCode).toBe(410);
    expect(
      (
        await t.app.inject({ url: `/api/version/KR/${app(0)}`, headers: { ...WEB_CLIENT, cookie: user } })
      ).json(),
    ).toEqual([expect.objectContaining({ app_ver_id: '940000', status: 'Done' })]);

    gate.open();
    await jobs.settle();
    expect(warmed).toEqual([940000]);
    expect(digests('940000').filter((name) => name.endsWith('.json'))).toHaveLength(2);
  });

  it('logs a warm-up that fails, and the version stays Done', async () => {
    newGate(new Error('the signing process ran out of memory'));
    const { answer } = await uploadFor(1, '940001');
    expect(answer).toMatchObject({ status: 'Done', app_ver_id: '940001' });
    gate.open();
    await jobs.settle();
    expect(logged).toContainEqual(
      expect.objectContaining({
        msg: 'the work after a version became Done failed',
        appVerId: 940001,
        err: gate.failWith,
      }),
    );
    const versions = (
      await t.app.inject({ url: `/api/version/KR/${app(1)}`, headers: { ...WEB_CLIENT, cookie: user } })
    ).json() as unknown[];
    expect(versions).toEqual([expect.objectContaining({ app_ver_id: '940001', status: 'Done' })]);
  });

  it('answers an upload sent again after its answer was lost with 410, storing nothing more', async () => {
    newGate();
    gate.open();
    const { job } = await uploadFor(2, '940002');
    const ipa = await buildIpa({ bundleId: bundleOf(2), version: '3.0', appVerId: '940002' });
    const stored = () =>
      readdirSync(path.join(t.dataDir, 'files', 'ipa', String(app(2))), { recursive: true });
    const before = stored();
    const again = await agent.call(
      'PUT',
      `/api/agent/jobs/${job.id}/ipa?app_ver_id=940002`,
      readFileSync(ipa),
    );
    expect(again.statusCode).toBe(410);
    expect(again.body).toBe('This job is finished: the server has its result.');
    expect(stored()).toEqual(before);
  });
});
