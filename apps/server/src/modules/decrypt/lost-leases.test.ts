import type { AdminQueueEntry } from '@sideport/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { makeAgent, storeApp, storeWith, type AgentClient } from '../../test/decrypt-support.js';
import { createTestApp, databaseKinds, signedInUser, WEB_CLIENT, type TestApp } from '../../test/harness.js';

const MAX_ATTEMPTS = 2;
const MAX_LOST_LEASES = 4;
const LEASE_SECONDS = 30;

/**
 * Failed attempts and lost leases are counted apart (docs/agent-protocol.md): an agent or server
 * killed mid-job says nothing of the app, so lost leases end a job only after the larger
 * DECRYPT_MAX_LOST_LEASES, while the command's own failures still end it at DECRYPT_MAX_ATTEMPTS.
 */
describe.each(databaseKinds)('failed attempts and lost leases on %s', (kind) => {
  let store: ItunesServer;
  let t: TestApp;
  let now = new Date('2026-11-23T10:00:00Z');
  let user: string;
  let admin: string;
  let agent: AgentClient;
  const app = (n: number) => 7300 + n;

  beforeAll(async () => {
    store = await storeWith(
      Array.from({ length: 6 }, (_, n) =>
        storeApp(app(n), `com.example.lost${n}`, { trackName: `Lost ${n}` }),
      ),
    );
    t = await createTestApp(kind, {
      env: {
        ITUNES_BASE_URL: store.url,
        LIST_CACHE_MS: '0',
        SIGN_IN_LIMIT_PER_ADDRESS: '10000',
        FREE_DAILY_LIMIT: '100',
        DECRYPT_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
        DECRYPT_MAX_LOST_LEASES: String(MAX_LOST_LEASES),
        DECRYPT_LEASE_SECONDS: String(LEASE_SECONDS),
      },
      clock: () => now,
    });
    user = await signedInUser(t, `lost_user_${kind}`);
    admin = await signedInUser(t, `lost_admin_${kind}`, 1);
    agent = await makeAgent(t, admin);
  });
  afterAll(async () => {
    await t.close();
    await store.close();
  });

  const request = async (n: number) => {
    const res = await t.app.inject({
      url: `/api/decrypt/KR/${app(n)}`,
      headers: { ...WEB_CLIENT, cookie: user },
    });
    expect(res.statusCode, res.body).toBe(200);
  };
  /** The next job, which must be app n's (each test queues one app at a time). */
  async function claim(n: number, by = agent) {
    const { job } = await by.claim();
    expect(job?.app_id).toBe(String(app(n)));
    return job!;
  }
  /** The agent goes quiet: its lease runs out and the sweep takes the job back. */
  async function loseLease() {
    now = new Date(now.getTime() + (LEASE_SECONDS + 1) * 1000);
    expect(await t.services.jobs.sweepExpiredLeases()).toBe(1);
  }
  const fail = (jobId: string, body: object) => agent.call('POST', `/api/agent/jobs/${jobId}/fail`, body);
  async function queued(n: number): Promise<AdminQueueEntry> {
    const list = (
      await t.app.inject({ url: '/api/admin/queue/0', headers: { ...WEB_CLIENT, cookie: admin } })
    ).json() as AdminQueueEntry[];
    return list.find((e) => e.app_id === String(app(n)))!;
  }

  it('keeps an entry Pending and claimable after DECRYPT_MAX_ATTEMPTS lost leases, and gives up at DECRYPT_MAX_LOST_LEASES saying why', async () => {
    await request(0);
    for (let lost = 1; lost < MAX_LOST_LEASES; lost++) {
      await claim(0);
      await loseLease();
      expect(await queued(0)).toMatchObject({
        status: 'Pending',
        attempts: 0,
        lost_leases: lost,
        reason: `The agent stopped answering before it finished (lost lease ${lost} of ${MAX_LOST_LEASES}).`,
      });
    }
    expect(MAX_LOST_LEASES - 1).toBeGreaterThanOrEqual(MAX_ATTEMPTS);

    const last = await claim(0);
    expect(last.attempt).toBe(MAX_LOST_LEASES);
    await loseLease();
    const reason = `The agent stopped answering before it finished: given up after ${MAX_LOST_LEASES} lost leases.`;
    expect(await queued(0)).toMatchObject({
      status: 'Not',
      attempts: 0,
      lost_leases: MAX_LOST_LEASES,
      reason,
    });
    expect((await agent.claim()).job).toBeNull();
    const again = await t.app.inject({
      url: `/api/decrypt/KR/${app(0)}`,
      headers: { ...WEB_CLIENT, cookie: user },
    });
    expect(again.statusCode).toBe(409);
    expect(again.body).toBe(`This version cannot be decrypted: ${reason.replace(/\.$/, '')}.`);
  });

  it('still ends an entry at DECRYPT_MAX_ATTEMPTS failures, the lost leases between them not counted as failures', async () => {
    await request(1);
    let job = await claim(1);
    expect((await fail(job.id, { reason: 'The store timed out.' })).json()).toEqual({ status: 'Pending' });
    await claim(1);
    await loseLease();
    expect(await queued(1)).toMatchObject({ status: 'Pending', attempts: 1, lost_leases: 1 });

    job = await claim(1);
    expect((await fail(job.id, { reason: 'The store timed out again.' })).json()).toEqual({ status: 'Not' });
    expect(await queued(1)).toMatchObject({
      status: 'Not',
      attempts: MAX_ATTEMPTS,
      lost_leases: 1,
      reason: 'The store timed out again.',
    });
  });

  it('counts a job handed back by a stopping agent, or taken from a revoked one, as a lost lease', async () => {
    await request(2);
    const job = await claim(2);
    const handedBack = await fail(job.id, {
      reason: 'The agent was stopped before it finished the job.',
      stopped: true,
    });
    expect(handedBack.json()).toEqual({ status: 'Pending' });
    expect(await queued(2)).toMatchObject({
      status: 'Pending',
      attempts: 0,
      lost_leases: 1,
      reason: `The agent was stopped before it finished the job (lost lease 1 of ${MAX_LOST_LEASES}).`,
    });

    const doomed = await makeAgent(t, admin, 'doomed');
    await claim(2, doomed);
    const revoked = await t.app.inject({
      method: 'DELETE',
      url: `/api/admin/agents/${doomed.id}`,
      headers: { ...WEB_CLIENT, cookie: admin },
    });
    expect(revoked.statusCode).toBe(204);
    expect(await queued(2)).toMatchObject({
      status: 'Pending',
      attempts: 0,
      lost_leases: 2,
      reason: `The agent working on it was revoked (lost lease 2 of ${MAX_LOST_LEASES}).`,
    });
    expect((await claim(2)).attempt).toBe(3);
  });
});
