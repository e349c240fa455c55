/**
 * Updates and notifications benchmark (issue 33):
 *  1. one update check of BENCH_APPS installed apps (default 10,000, half in KR, half in US) held
 *     by BENCH_USERS users (default 1,000, each app by 3 of them): the store calls it makes (one per
 *     100 apps of a country, whatever the users) and its time, then a second check within the
 *     interval (no call).
 *  2. BENCH_PUSHES notifications (default 10,000) queued for those users, each with one browser
 *     subscribed at the local push service (apps/server/src/test/push-service.ts, which checks the
 *     VAPID token and decrypts every push in this same process): the time to queue them, pushes
 *     sent per second, and the API's p99 (GET /api/notifications) while they are sent, against
 *     the same API idle in the same run.
 *
 *   npm run bench:updates      (PGlite in memory; BENCH_DATABASE_URL=postgres://... for PostgreSQL)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { sql } from 'drizzle-orm';
import { buildApp } from '../../apps/server/src/app.js';
import { openDatabase } from '../../apps/server/src/db/client.js';
import { startItunesServer } from '../../apps/server/src/dev/itunes-server.js';
import { loadConfig } from '../../apps/server/src/platform/config.js';
import { startPushService } from '../../apps/server/src/test/push-service.js';
import { createDatabase, dropDatabase, seconds, signUp } from '../lib.js';

const APPS = Number(process.env.BENCH_APPS ?? 10_000);
const USERS = Number(process.env.BENCH_USERS ?? 1_000);
const PUSHES = Number(process.env.BENCH_PUSHES ?? 10_000);
const HOLDERS_PER_APP = 3;
const work = mkdtempSync(path.join(tmpdir(), 'sideport-bench-updates-'));
const adminUrl = process.env.BENCH_DATABASE_URL;

const storeRecord = (appId: number, version: string) => ({
  wrapperType: 'software',
  kind: 'software',
  trackId: appId,
  trackName: `App ${appId}`,
  artistName: 'Bench',
  version,
  artworkUrl512: 'https://example.invalid/icon.png',
  trackViewUrl: `https://apps.apple.com/app/id${appId}`,
  bundleId: `com.example.bench${appId}`,
  minimumOsVersion: '15.0',
  price: 0,
});

async function p99(url: string, cookie: string, durationS: number) {
  const result = await autocannon({
    url,
    connections: 10,
    duration: durationS,
    headers: { cookie, 'x-sideport-client': 'web' },
  });
  return { p99: result.latency.p99, rps: result.requests.average, non2xx: result.non2xx };
}

async function main() {
  const created = adminUrl ? await createDatabase(adminUrl) : undefined;
  const database = await openDatabase(created ? { url: created.url } : { pgliteDir: null });
  await database.migrate();
  const appIds = Array.from({ length: APPS }, (_, i) => 500_000 + i);
  const records = appIds.map((id) => storeRecord(id, '1.0'));
  const store = await startItunesServer({ records });
  const push = await startPushService();

  const config = loadConfig({
    LOG_LEVEL: 'silent',
    DATA_DIR: path.join(work, 'data'),
    ...(created ? { DATABASE_URL: created.url } : {}),
    ITUNES_BASE_URL: store.url,
    UPDATE_CHECK_MINUTES: '60',
    PUSH_ALLOW_HTTP: 'true',
    SIGN_IN_LIMIT_PER_ADDRESS: '1000000',
    SIGN_WORKERS: '0',
    REGISTRATION_INTERVAL_SECONDS: '0',
    RECOVERY_CHECK_MINUTES: '0',
    ORPHAN_SWEEP_MINUTES: '0',
  });
  const built = await buildApp({ config, database });
  const baseUrl = await built.app.listen({ port: 0, host: '127.0.0.1' });
  const { db } = database;

  // Installed apps as signs leave them: users, each app's Done version, three users' artifacts of it.
  console.log(`seeding ${APPS} apps held by ${USERS} users ...`);
  await db.execute(
    sql.raw(
      `insert into users (id, password_hash) select 'bench' || u, 'x' from generate_series(1, ${USERS}) u`,
    ),
  );
  await db.execute(
    sql.raw(`
    insert into versions (country, app_id, app_ver_id, version, status, file_key, requested_at, updated_at, done_at)
    select case when i % 2 = 0 then 'KR' else 'US' end, 500000 + i, 900000000 + i, '1.0', 'Done',
           'ipa/' || i, now(), now(), now()
    from generate_series(0, ${APPS - 1}) i`),
  );
  await db.execute(
    sql.raw(`
    insert into sign_requests (user_id, source, app_id, app_ver_id, sign_type, status, state, title,
                               requested_at, updated_at, artifact_id, file_key, signed_at, udids, bundle_id)
    select 'bench' || (1 + (i * ${HOLDERS_PER_APP} + h) % ${USERS}), 'version', 500000 + i, 900000000 + i, 0, 'Done', 'idle',
           'App', now(), now(), 'a' || i || '-' || h, 'signed/' || i || '-' || h, now(), '[]'::jsonb, 'com.example.bench' || i
    from generate_series(0, ${APPS - 1}) i, generate_series(0, ${HOLDERS_PER_APP - 1}) h
    on conflict do nothing`),
  );

  // 1. The update check.
  for (const r of records) r.version = '2.0';
  const before = store.requests.length;
  const started = performance.now();
  const pass = await built.services.updates.runPass();
  const checkMs = performance.now() - started;
  const calls = store.requests.length - before;
  const again = await built.services.updates.runPass();
  const overview = await built.services.updates.overview();
  console.log(
    JSON.stringify({
      check: {
        apps: APPS,
        users: USERS,
        installs: APPS * HOLDERS_PER_APP,
        asked: pass.asked,
        storeCalls: calls,
        changed: pass.changed.length,
        time: seconds(checkMs),
        secondPassCalls: again.calls,
        updatesWaiting: overview.waiting,
      },
    }),
  );

  // 2. Notifications: one browser per user, then PUSHES notifications queued and sent.
  for (let u = 1; u <= USERS; u++) {
    const browser = push.subscribe();
    await db.execute(
      sql`insert into push_subscriptions (user_id, endpoint, p256dh, auth, created_at)
          values (${`bench${u}`}, ${browser.endpoint}, ${browser.keys.p256dh}, ${browser.keys.auth}, now())`,
    );
  }
  const cookie = await signUp(baseUrl, 'benchreader');
  const idle = await p99(`${baseUrl}/api/notifications`, cookie, 5);
  // Queued as the changes come (each its own transaction), then sent by the notify task meanwhile.
  const queueStarted = performance.now();
  // The API while notifications are queued and sent (the first 10 s of it).
  const loaded = p99(`${baseUrl}/api/notifications`, cookie, 10);
  for (let i = 0; i < PUSHES; i++) {
    await built.services.notifications.notify(`bench${1 + (i % USERS)}`, {
      kind: 'update-ready',
      key: `bench:${i}`,
      title: `Update ${i} is ready`,
      body: 'Install it on your iPhone.',
      url: '/my?tab=updates',
    });
    // Changes come from requests and events, with I/O between them; PGlite's in-process queries
    // alone would never give the event loop back (the sender's fetches, the bus) until the end.
    await new Promise((resolve) => setImmediate(resolve));
  }
  const queueMs = performance.now() - queueStarted;
  const sentWhileQueueing = push.received.length;
  while (push.received.length + push.refused.length < PUSHES) await new Promise((r) => setTimeout(r, 50));
  const allSentMs = performance.now() - queueStarted;
  const sendingMs = allSentMs - queueMs;
  const underLoad = await loaded;
  console.log(
    JSON.stringify({
      pushes: {
        queued: PUSHES,
        queueTime: seconds(queueMs),
        sent: push.received.length,
        sentWhileQueueing,
        refused: push.refused.length,
        queuedToAllSent: seconds(allSentMs),
        sendingAfterQueued: seconds(sendingMs),
        sentPerSecond: Math.round(push.received.length / (allSentMs / 1000)),
        apiIdle: idle,
        apiWhileSending: underLoad,
      },
    }),
  );

  await built.app.close();
  await database.close();
  await store.close();
  await push.close();
  if (created && adminUrl) await dropDatabase(adminUrl, created.name);
  rmSync(work, { recursive: true, force: true });
}

await main();
