import pg from 'pg';
import { sql } from 'drizzle-orm';
const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL }); await admin.connect(); await admin.query('create database ex'); await admin.end();
const url = process.env.TEST_DATABASE_URL!.replace(/\/postgres$/, '/ex');
const { openDatabase } = await import('../../apps/server/src/db/client.js');
const q = await import('../../apps/server/src/modules/catalog/queries.js');
const d = await openDatabase({ url }); await d.migrate();
const pool = new pg.Pool({ connectionString: url });
await pool.query(`insert into apps (country, app_id, name, developer, version, icon_url, store_url, bundle_id, minimum_os, fetched_at) select 'KR', i, 'n','d','1','i','s','b','14', now() from generate_series(1,100000) i`);
await pool.query(`insert into versions (country, app_id, app_ver_id, version, status, done_seq) select 'KR', i % 100000, i, '1', 'Done', nextval('version_done_seq') from generate_series(1,1000000) i`);
await pool.query('analyze');
const origQuery = pool.query.bind(pool);
(pool as any).query = (...a: any[]) => { return origQuery(...a); };
let t = performance.now(); await q.maxDoneSeq(d.db); console.log('max', performance.now() - t);
t = performance.now(); await q.listLatest(d.db, 0, 1000000); console.log('list', performance.now() - t);
t = performance.now(); await q.listLatest(d.db, 0, 1000000); console.log('list', performance.now() - t);
// log queries through drizzle logger
const { drizzle } = await import('drizzle-orm/node-postgres');
const logged: any[] = [];
const db2 = drizzle(pool, { logger: { logQuery: (query, params) => logged.push([query, params]) } });
await q.listLatest(db2 as any, 0, 1000000);
for (const [query, params] of logged) { console.log(query, params); const r = await pool.query('explain analyze ' + query, params); console.log(r.rows.map((x: any) => x['QUERY PLAN']).join('\n')); }
await pool.end(); await d.close();
