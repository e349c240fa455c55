/**
 * Catalogue benchmark: GET /api/latest/0 and a cached GET /api/search on PostgreSQL with 100k
 * catalogue rows and 1M version rows, against a plain Fastify JSON route measured in the same run.
 *
 *   npm run bench:catalog      (starts a throwaway PostgreSQL 15; or set BENCH_DATABASE_URL)
 *
 * Prints requests/s and p99 latency per route and the ratio to the plain route.
 * Targets (issue 5): at least 50% of the plain route's requests/s, p99 under 25 ms.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import pg from 'pg';
import { sql } from 'drizzle-orm';
import { buildApp } from '../../apps/server/src/app.js';
import { openDatabase } from '../../apps/server/src/db/client.js';
import { loadConfig } from '../../apps/server/src/platform/config.js';
import { benchDatabaseUrl, createDatabase } from '../lib.js';

const APPS = Number(process.env.BENCH_APPS ?? 100_000);
const VERSIONS = Number(process.env.BENCH_VERSIONS ?? 1_000_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const DURATION_S = Number(process.env.BENCH_SECONDS ?? 10);
const adminUrl = benchDatabaseUrl();

async function seed(database: Awaited<ReturnType<typeof openDatabase>>) {
  const started = performance.now();
  const countries = `(array['US','KR','AU','RU','DE','IN','SE','IL','IT'])`;
  await database.db.execute(
    sql.raw(`
    insert into apps (country, app_id, name, developer, version, icon_url, store_url, rating, rating_count,
                      bundle_id, minimum_os, size_bytes, price, fetched_at)
    select ${countries}[1 + i % 9], 100000000 + i, 'App number ' || i, 'Developer ' || (i % 5000),
           '1.' || (i % 50), 'https://is1-ssl.mzstatic.com/image/thumb/' || i || '/512x512bb.jpg',
           'https://apps.apple.com/app/id' || (100000000 + i), (i % 10) / 2.0, i % 100000,
           'com.example.app' || i, '14.0', 50000000 + i, 0, now()
    from generate_series(1, ${APPS}) as i`),
  );
  // 1M decrypt entries: most Done, some queued, across the apps above.
  await database.db.execute(
    sql.raw(`
    insert into versions (country, app_id, app_ver_id, version, status, premium, done_seq, done_at)
    select ${countries}[1 + (i % ${APPS}) % 9], 100000000 + (i % ${APPS}), 800000000 + i, '1.' || (i % 50),
           case when i % 50 = 0 then 'Pending' when i % 97 = 0 then 'Not' else 'Done' end,
           i % 200 = 0,
           case when i % 50 = 0 or i % 97 = 0 then null else nextval('version_done_seq') end,
           case when i % 50 = 0 or i % 97 = 0 then null else now() end
    from generate_series(1, ${VERSIONS}) as i`),
  );
  await database.db.execute(sql.raw('analyze'));
  return (performance.now() - started) / 1000;
}

async function load(url: string, headers: Record<string, string> = {}) {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: DURATION_S, headers });
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { rps: result.requests.average, p99: result.latency.p99, p50: result.latency.p50 };
}

const db = await createDatabase(adminUrl);
const database = await openDatabase({ url: db.url });
await database.migrate();
const seedS = await seed(database);
console.log(
  `seeded ${APPS.toLocaleString()} apps and ${VERSIONS.toLocaleString()} versions in ${seedS.toFixed(1)} s`,
);

const env = {
  LOG_LEVEL: 'silent',
  DATA_DIR: mkdtempSync(path.join(tmpdir(), 'sideport-bench-')),
  ITUNES_BASE_URL: 'http://127.0.0.1:9',
};
const config = loadConfig(env);
const { app } = await buildApp({ config, database });
const appUrl = await app.listen({ port: 0, host: '127.0.0.1' });

// A cached search: 50 store results remembered for the term, as after a first real search.
const signUp = await fetch(`${appUrl}/api/sign-up`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ id: 'benchuser', pw: 'b'.repeat(32) }),
});
const cookie = signUp.headers.getSetCookie()[0]!.split(';')[0]!;
await database.db.execute(
  sql.raw(`
  insert into search_cache (country, term, app_ids, fetched_at)
  select 'KR', 'app number', jsonb_agg(app_id order by app_id), now()
  from (select app_id from apps where country = 'KR' order by app_id limit 50) s`),
);

// The ceiling: a plain Fastify JSON route answering a page of the same size, same process.
const samplePage = await (await fetch(`${appUrl}/api/latest/0`)).json();
const plain = Fastify();
plain.get('/plain', async () => samplePage);
const plainUrl = await plain.listen({ port: 0, host: '127.0.0.1' });

// The same server with the per-process answer and session caches off: every request hits PostgreSQL.
const uncachedConfig = loadConfig({ ...env, LIST_CACHE_MS: '0', SESSION_CACHE_MS: '0' });
const uncached = await buildApp({ config: uncachedConfig, database });
const uncachedUrl = await uncached.app.listen({ port: 0, host: '127.0.0.1' });

const baseline = await load(`${plainUrl}/plain`);
const latest = await load(`${appUrl}/api/latest/0`);
const search = await load(`${appUrl}/api/search/kr/app%20number`, { cookie });
const latestDb = await load(`${uncachedUrl}/api/latest/0`);
const searchDb = await load(`${uncachedUrl}/api/search/kr/app%20number`, { cookie });

const row = (name: string, r: { rps: number; p99: number; p50: number }) =>
  `${name.padEnd(28)} ${r.rps.toFixed(0).padStart(8)} req/s   p50 ${String(r.p50).padStart(3)} ms   p99 ${String(r.p99).padStart(3)} ms   ratio ${(r.rps / baseline.rps).toFixed(2)}`;
console.log(
  `\n${CONNECTIONS} connections, ${DURATION_S} s each, one process (load generator included), 2 cores`,
);
console.log(row('plain Fastify JSON route', baseline));
console.log(row('GET /api/latest/0', latest));
console.log(row('GET /api/search (cached)', search));
console.log(row('  latest, no answer cache', latestDb));
console.log(row('  search, no answer cache', searchDb));
const ok = (r: typeof latest) => r.rps / baseline.rps >= 0.5 && r.p99 < 25;
console.log(
  `\ntarget (>= 0.50 of the plain route, p99 < 25 ms): latest ${ok(latest) ? 'met' : 'missed'}, search ${ok(search) ? 'met' : 'missed'}`,
);

await plain.close();
await uncached.app.close();
await app.close();
await database.close();
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`drop database ${db.name} with (force)`);
await admin.end();
