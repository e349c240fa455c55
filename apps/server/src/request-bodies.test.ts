import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItunesServer } from './dev/itunes-server.js';
import { makeAgent, storeApp, storeWith, type AgentClient } from './test/decrypt-support.js';
import { changedTables, snapshotDatabase } from './test/db-snapshot.js';
import { createTestApp, databaseKinds, signedInUser, type TestApp } from './test/harness.js';
import { SAME_ORIGIN } from './test/route-suite.js';

const APP_IDS = Array.from({ length: 10 }, (_, i) => 6100 + i);

/** The files an upload left in DATA_DIR/tmp, where agent uploads are received. */
const tmpFiles = (t: TestApp) => {
  try {
    return readdirSync(path.join(t.dataDir, 'tmp'));
  } catch {
    return [];
  }
};

describe.each(databaseKinds)('agent uploads and request bodies on %s', (kind) => {
  let store: ItunesServer;
  let t: TestApp;
  let agent: AgentClient;
  let user: string;
  let asked = 0;

  /** A new decrypt job the agent holds, by its lease id: an upload to it reaches the reader. */
  async function newLease(): Promise<string> {
    const appId = APP_IDS[asked++]!;
    const res = await t.app.inject({
      url: `/api/decrypt/KR/${appId}`,
      headers: { cookie: user, ...SAME_ORIGIN },
    });
    expect(res.statusCode, res.body).toBe(200);
    const { job } = await agent.claim();
    expect(job?.app_id).toBe(String(appId));
    return job!.id;
  }

  beforeAll(async () => {
    store = await storeWith(APP_IDS.map((id) => storeApp(id, `com.example.bodies${id}`)));
    t = await createTestApp(kind, {
      env: { ITUNES_BASE_URL: store.url, LIST_CACHE_MS: '0', FREE_DAILY_LIMIT: '100' },
    });
    user = await signedInUser(t, `bodies_${kind}`);
    agent = await makeAgent(t, await signedInUser(t, `bodies_admin_${kind}`, 1));
  });
  afterAll(async () => {
    await t.close();
    await store.close();
  });

  it.each([
    ['JSON', 'application/json', '{"not":"an ipa"}'],
    ['text', 'text/plain', 'not an ipa'],
    ['a form', 'application/x-www-form-urlencoded', 'a=1'],
    ['an image type', 'image/png', 'PK'],
    ['no content type at all', undefined, 'PK'],
  ])(
    'refuses an upload sent as %s with 415, naming the content type it takes',
    async (_what, type, payload) => {
      const lease = await newLease();
      const before = await snapshotDatabase(t.database.db);
      const res = await t.app.inject({
        method: 'PUT',
        url: `/api/agent/jobs/${lease}/ipa`,
        headers: { authorization: `Bearer ${agent.token}`, ...(type ? { 'content-type': type } : {}) },
        payload,
      });
      expect(res.statusCode).toBe(415);
      expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(res.body).toBe('Send the IPA as the request body with Content-Type: application/octet-stream.');
      expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
      expect(tmpFiles(t)).toEqual([]);
    },
  );

  it('still takes the upload as application/octet-stream (with parameters too)', async () => {
    const lease = await newLease();
    const res = await agent.call('PUT', `/api/agent/jobs/${lease}/ipa`, Buffer.from('PK not a zip'), {
      'content-type': 'application/octet-stream; charset=binary',
    });
    // Read and checked: refused for what it is, not for how it was sent.
    expect(res.statusCode, res.body).toBe(422);
    expect(tmpFiles(t)).toEqual([]);
  });
});
