import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItunesServer } from './dev/itunes-server.js';
import { buildIpa, makeAgent, storeApp, storeWith, type AgentClient } from './test/decrypt-support.js';
import { until } from './test/agent-process.js';
import { createTestApp, signedInUser, WEB_CLIENT, type TestApp } from './test/harness.js';

/**
 * The S3-compatible store away (docs/architecture.md, When a part fails): s3rver is stopped under
 * a running server and started again on the same port and folder. An agent's upload meanwhile is
 * answered 503 with a sentence; the agent keeps its job, and the same upload is accepted once the
 * store is back.
 */
describe('the S3 store stopped and started under a running server', () => {
  const s3Dir = mkdtempSync(path.join(tmpdir(), 'sideport-s3-outage-'));
  let s3: S3rver;
  let port: number;
  let store: ItunesServer;
  let t: TestApp;
  let user: string;
  let admin: string;
  let agent: AgentClient;
  const startS3 = async (on: number) => {
    s3 = new S3rver({
      port: on,
      address: '127.0.0.1',
      directory: s3Dir,
      silent: true,
      configureBuckets: [{ name: 'ipas', configs: [] }],
    });
    return (await s3.run()).port;
  };

  beforeAll(async () => {
    port = await startS3(0);
    // s3rver's fixed credentials, found by the AWS SDK the usual way.
    process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
    process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
    store = await storeWith([storeApp(8901, 'com.example.s3outage', { version: '3.0' })]);
    t = await createTestApp('pglite', {
      env: {
        ITUNES_BASE_URL: store.url,
        STORAGE_URL: `s3://ipas/sideport?endpoint=http://127.0.0.1:${port}&region=us-east-1&forcePathStyle=true`,
        SIGN_IN_LIMIT_PER_ADDRESS: '10000',
      },
    });
    user = await signedInUser(t, 's3_user');
    admin = await signedInUser(t, 's3_admin', 1);
    agent = await makeAgent(t, admin);
  });
  afterAll(async () => {
    await t?.close();
    await store?.close();
    await s3?.close();
    rmSync(s3Dir, { recursive: true, force: true });
  });

  it('answers an upload 503 with a sentence while the store is away, and accepts it once it is back', async () => {
    expect(
      (await t.app.inject({ url: '/api/decrypt/KR/8901', headers: { ...WEB_CLIENT, cookie: user } }))
        .statusCode,
    ).toBe(200);
    const { job } = await agent.claim({ wait_seconds: 5 });
    expect(job?.app_id).toBe('8901');
    const ipa = readFileSync(
      await buildIpa({ bundleId: 'com.example.s3outage', version: '3.0', appVerId: '890100' }),
    );
    const upload = () => agent.call('PUT', `/api/agent/jobs/${job!.id}/ipa?app_ver_id=890100`, ipa);

    await s3.close();
    const refused = await upload();
    expect([refused.statusCode, refused.headers['retry-after'], refused.body]).toEqual([
      503,
      '30',
      'The file store is not answering right now. Please retry in a minute.',
    ]);
    // The job is still the agent's: the attempt is not counted, nothing is lost.
    expect((await agent.call('POST', `/api/agent/jobs/${job!.id}/heartbeat`, {})).statusCode).toBe(200);
    const metrics = await t.services.metrics.render();
    expect(metrics).toMatch(/sideport_dependency_faults_total\{part="storage"\} [1-9]/);
    expect(metrics).toContain('sideport_dependency_up{part="storage"} 0');
    // This process cannot serve files: out of readiness, with the store's sentence.
    const ready = await t.app.inject({ url: '/readyz' });
    expect([ready.statusCode, ready.headers['retry-after'], ready.body]).toEqual([
      503,
      '30',
      'The file store is not answering right now. Please retry in a minute.',
    ]);
    // The operator's checklist names the part that is down, first.
    const checklist = await t.app.inject({
      url: '/api/admin/setup',
      headers: { ...WEB_CLIENT, cookie: admin },
    });
    const items = checklist.json() as Array<{ key: string; state: string; detail: string }>;
    expect(items[0]).toMatchObject({
      key: 'parts',
      state: 'todo',
      detail: expect.stringMatching(/^The file store is failing since /),
    });

    await startS3(port);
    // Back in readiness by itself, the store named again as answering.
    await until('/readyz to answer 200', async () =>
      (await t.app.inject({ url: '/readyz' })).statusCode === 200 ? true : undefined,
    );
    expect((await t.app.inject({ url: '/readyz' })).json()).toEqual({
      status: 'ready',
      database: 'pglite',
      storage: 's3',
      parts_down: [],
    });
    const accepted = await upload();
    expect(accepted.statusCode, accepted.body).toBe(200);
    const versions = (
      await t.app.inject({ url: '/api/version/KR/8901', headers: { ...WEB_CLIENT, cookie: user } })
    ).json() as Array<{ app_ver_id: string; status: string }>;
    expect(versions).toEqual([expect.objectContaining({ app_ver_id: '890100', status: 'Done' })]);
  });
});
