import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { createTestApp, databaseKinds, signedInUser, type TestApp } from '../../test/harness.js';
import { makeAgent, storeApp, storeWith } from '../../test/decrypt-support.js';

const JOBS = 60;
const AGENTS = 20;

describe.each(databaseKinds)('claims on %s', (kind) => {
  let store: ItunesServer;
  let t: TestApp;

  beforeAll(async () => {
    store = await storeWith(
      Array.from({ length: JOBS }, (_, i) => storeApp(8000 + i, `com.example.claim${i}`)),
    );
    t = await createTestApp(kind, { env: { ITUNES_BASE_URL: store.url, FREE_DAILY_LIMIT: String(JOBS) } });
    await signedInUser(t, `claimer_${kind}`);
    for (let i = 0; i < JOBS; i++) await t.services.decrypt.requestApp(`claimer_${kind}`, 'KR', 8000 + i);
  });
  afterAll(async () => {
    await t.close();
    await store.close();
  });

  it(`hands each of ${JOBS} jobs to exactly one of ${AGENTS} agents claiming at once`, async () => {
    const admin = await signedInUser(t, `claimadmin_${kind}`, 1);
    const agents = await Promise.all(
      Array.from({ length: AGENTS }, (_, i) => makeAgent(t, admin, `agent-${i}`)),
    );
    const claimed = await Promise.all(
      agents.map(async (agent) => {
        const mine: string[] = [];
        for (;;) {
          const { statusCode, job } = await agent.claim();
          expect(statusCode).toBe(200);
          if (!job) return mine;
          mine.push(String(job.app_id));
        }
      }),
    );
    const all = claimed.flat();
    expect(all).toHaveLength(JOBS);
    expect(new Set(all).size).toBe(JOBS);
    // The queue shows each one as being worked.
    const queue = (await t.app.inject({ url: '/api/queue/0' })).json() as Array<{ status: string }>;
    expect(new Set(queue.map((e) => e.status))).toEqual(new Set(['Downloading']));
  });
});
