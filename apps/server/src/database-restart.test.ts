import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type Built } from './app.js';
import { openDatabase, queryRows, type DatabaseHandle } from './db/client.js';
import { sql } from 'drizzle-orm';
import { waitForEvent } from './platform/events.js';
import { isDatabaseFault } from './platform/faults.js';
import { loadConfig } from './platform/config.js';
import { until } from './test/agent-process.js';
import type { ItunesServer } from './dev/itunes-server.js';
import { buildIpa, makeAgent, storeApp, storeWith, type AgentClient } from './test/decrypt-support.js';
import { sessionCookie, signedInUser, WEB_CLIENT } from './test/harness.js';
import { noPostgresBinaries, startPgCluster, type PgCluster } from './test/pg-cluster.js';

/**
 * PostgreSQL restarted under a running server (docs/architecture.md, When a part fails): the
 * throwaway cluster is stopped with `pg_ctl stop -m fast`, which closes every connection as a
 * restart or a failover does, and started again at the same address (PG_FAULT_PORT, else a free
 * port). A decrypt an agent holds across the outage finishes after it, its attempt not counted.
 * Last, a failover: the primary dies and a streaming replica is promoted at its address.
 */
describe.skipIf(noPostgresBinaries)('PostgreSQL stopped and started under a running server', () => {
  let cluster: PgCluster;
  let database: DatabaseHandle;
  let built: Built;
  let dataDir: string;
  let cookie: string;
  let admin: string;
  let agent: AgentClient;
  let store: ItunesServer;

  beforeAll(async () => {
    cluster = await startPgCluster();
    store = await storeWith([storeApp(8911, 'com.example.pgrestart', { version: '2.0' })]);
    dataDir = mkdtempSync(path.join(tmpdir(), 'sideport-restart-'));
    database = await openDatabase({ url: cluster.url, connectTimeoutMs: 2000 });
    await database.migrate();
    const config = loadConfig({
      LOG_LEVEL: 'silent',
      DATA_DIR: dataDir,
      WEB_DIST_DIR: dataDir,
      DATABASE_URL: cluster.url,
      SESSION_CACHE_MS: '0',
      ITUNES_BASE_URL: store.url,
    });
    built = await buildApp({ config, database });
    await built.app.ready();
    const signUp = await built.app.inject({
      method: 'POST',
      url: '/api/sign-up',
      payload: { id: 'before', pw: 'a'.repeat(32) },
    });
    expect(signUp.statusCode).toBe(200);
    cookie = sessionCookie(signUp);
    admin = await signedInUser(built, 'restart_admin', 1);
    agent = await makeAgent(built, admin);
  }, 120_000);

  afterAll(async () => {
    await built?.app.close();
    await database?.close();
    await cluster?.dispose();
    await store?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('fails a transaction whose connection PostgreSQL closes between two queries, and the process carries on', async () => {
    // A client checked out and idle inside a transaction when the server stops: the chaos run's
    // dependencies scenario found an API process ending on that connection's unhandled 'error'.
    const failed = await database.db
      .transaction(async (tx) => {
        await tx.execute(sql`select 1`);
        await cluster.stop();
        // Once the server is seen gone, its end has reached the idle client too.
        await until('/readyz to answer 503', async () =>
          (await built.app.inject({ url: '/readyz' })).statusCode === 503 ? true : undefined,
        );
        await tx.execute(sql`select 1`);
      })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(isDatabaseFault(failed), String(failed)).toBe(true);
    await cluster.start();
    await until(
      'the database to answer again',
      async () => ((await built.app.inject({ url: '/readyz' })).statusCode === 200 ? true : undefined),
      60_000,
    );
  }, 120_000);

  it('answers 503 with a sentence and Retry-After while it is down, and serves again by itself once it is back', async () => {
    const { app, services } = built;
    // A decrypt an agent holds when the database goes away.
    const asked = await app.inject({ url: '/api/decrypt/KR/8911', headers: { cookie, ...WEB_CLIENT } });
    expect(asked.statusCode, asked.body).toBe(200);
    const { job } = await agent.claim({ wait_seconds: 5 });
    expect(job?.app_id).toBe('8911');
    const ipa = readFileSync(
      await buildIpa({ bundleId: 'com.example.pgrestart', version: '2.0', appVerId: '891100' }),
    );
    const upload = () => agent.call('PUT', `/api/agent/jobs/${job!.id}/ipa?app_ver_id=891100`, ipa);
    await cluster.stop();

    // A signed-in page, a sign-up and the readiness check: each a sentence, never a 500.
    const info = await app.inject({ url: '/api/info', headers: { cookie, ...WEB_CLIENT } });
    expect([info.statusCode, info.headers['content-type'], info.body]).toEqual([
      503,
      'text/plain; charset=utf-8',
      'The database is not answering right now. Please retry in a few seconds.',
    ]);
    expect(info.headers['retry-after']).toBe('5');
    const signUp = () =>
      app.inject({ method: 'POST', url: '/api/sign-up', payload: { id: 'during', pw: 'b'.repeat(32) } });
    const refused = await signUp();
    expect([refused.statusCode, refused.body]).toEqual([
      503,
      'The database is not answering right now. Please retry in a few seconds.',
    ]);
    const ready = await app.inject({ url: '/readyz' });
    expect([ready.statusCode, ready.headers['retry-after']]).toEqual([503, '5']);
    // The agent's upload is refused with the same sentence; the agent keeps the file and retries.
    const refusedUpload = await upload();
    expect([refusedUpload.statusCode, refusedUpload.headers['retry-after'], refusedUpload.body]).toEqual([
      503,
      '5',
      'The database is not answering right now. Please retry in a few seconds.',
    ]);

    // /metrics counts the fault by part, and says the part is down.
    const metrics = await services.metrics.render();
    expect(metrics).toMatch(/sideport_dependency_faults_total\{part="database"\} [1-9]/);
    expect(metrics).toContain('sideport_dependency_up{part="database"} 0');

    await cluster.start();
    // The pool replaces its dead connections: the next requests find the database again.
    await until(
      '/readyz to answer 200',
      async () => ((await app.inject({ url: '/readyz' })).statusCode === 200 ? true : undefined),
      60_000,
    );
    expect((await app.inject({ url: '/readyz' })).json()).toEqual({
      status: 'ready',
      database: 'postgres',
      storage: 'local',
      parts_down: [],
    });
    // Nothing lost, nothing half-made: the account made before is there, the refused sign-up
    // left nothing behind and succeeds when sent again.
    const again = await app.inject({ url: '/api/info', headers: { cookie, ...WEB_CLIENT } });
    expect(again.statusCode).toBe(200);
    expect((await signUp()).statusCode).toBe(200);

    // The decrypt resumes where it was: still the agent's, its attempt not counted, then Done.
    const entry = async () =>
      (
        (
          await app.inject({ url: '/api/admin/queue/0', headers: { ...WEB_CLIENT, cookie: admin } })
        ).json() as Array<{ app_id: string; attempts: number; lost_leases: number }>
      ).find((e) => e.app_id === '8911');
    expect(await entry()).toMatchObject({ attempts: 0, lost_leases: 0 });
    expect((await agent.call('POST', `/api/agent/jobs/${job!.id}/heartbeat`, {})).statusCode).toBe(200);
    const accepted = await upload();
    expect(accepted.statusCode, accepted.body).toBe(200);
    const versions = (
      await app.inject({ url: '/api/version/KR/8911', headers: { ...WEB_CLIENT, cookie } })
    ).json() as Array<{ app_ver_id: string; status: string }>;
    expect(versions).toEqual([expect.objectContaining({ app_ver_id: '891100', status: 'Done' })]);

    // Live events (LISTEN on a connection of its own) are heard again: a change one process
    // tells of reaches every tab.
    await eventsHeardAgain(services, 'an event to be heard again');
  }, 120_000);

  it('after a failover to a promoted replica at the same address, serves and writes again by itself, nothing committed lost', async () => {
    const { app, services } = built;
    const made = await app.inject({
      method: 'POST',
      url: '/api/sign-up',
      payload: { id: 'before_failover', pw: 'c'.repeat(32) },
    });
    expect(made.statusCode, made.body).toBe(200);
    const madeCookie = sessionCookie(made);

    await cluster.failover(async () => {
      const info = await app.inject({ url: '/api/info', headers: { cookie: madeCookie, ...WEB_CLIENT } });
      expect([info.statusCode, info.headers['retry-after'], info.body]).toEqual([
        503,
        '5',
        'The database is not answering right now. Please retry in a few seconds.',
      ]);
    });

    // The pool's connections to the dead primary are replaced by ones to the new primary.
    await until(
      '/readyz to answer 200 after the failover',
      async () => ((await app.inject({ url: '/readyz' })).statusCode === 200 ? true : undefined),
      60_000,
    );
    const promoted = await queryRows(database.db, sql`select pg_is_in_recovery() as standby`);
    expect(promoted).toEqual([{ standby: false }]);
    // What was committed before is there, and the promoted server takes writes.
    const info = await app.inject({ url: '/api/info', headers: { cookie: madeCookie, ...WEB_CLIENT } });
    expect(info.statusCode, info.body).toBe(200);
    const after = await app.inject({
      method: 'POST',
      url: '/api/sign-up',
      payload: { id: 'after_failover', pw: 'd'.repeat(32) },
    });
    expect(after.statusCode, after.body).toBe(200);
    // LISTEN is made again on the new primary: live events reach every tab.
    await eventsHeardAgain(services, 'an event to be heard after the failover');
  }, 120_000);
});

/** Waits until an event published on the bus comes back through the database's LISTEN. */
async function eventsHeardAgain(services: Built['services'], what: string) {
  await until(
    what,
    async () => {
      const heard = waitForEvent(services.bus, (e) => e.kind === 'sign-queued', 1000);
      await services.bus.publish({ kind: 'sign-queued' });
      return await heard;
    },
    60_000,
  );
}
