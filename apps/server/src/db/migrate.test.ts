import { readFileSync } from 'node:fs';
import path from 'node:path';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createPostgresDatabase } from '../test/harness.js';
import { openDatabase } from './client.js';
import * as schema from './schema/index.js';

const journal = JSON.parse(
  readFileSync(path.resolve(import.meta.dirname, '../../drizzle/meta/_journal.json'), 'utf8'),
) as {
  entries: Array<{ tag: string }>;
};
const schemaTables = Object.values(schema as Record<string, unknown>)
  .filter((value): value is PgTable => value instanceof PgTable)
  .map((table) => getTableConfig(table).name)
  .sort();

/**
 * Several API processes started together on one empty PostgreSQL database (a scaled deploy's
 * first start) each migrate it; they take turns, so every one starts and the schema is whole.
 */
describe.skipIf(!process.env.TEST_DATABASE_URL)(
  'migrations started together on an empty PostgreSQL database',
  () => {
    it('all succeed, each migration applied once, every table there', async () => {
      const created = await createPostgresDatabase();
      // Each handle is a pool of its own, as each process has: separate connections, migrating at once.
      const handles = await Promise.all(Array.from({ length: 8 }, () => openDatabase({ url: created.url })));
      try {
        const outcomes = await Promise.allSettled(handles.map((h) => h.migrate()));
        const failures = outcomes.flatMap((o) =>
          o.status === 'rejected' ? [(o.reason as Error).message] : [],
        );
        expect(failures).toEqual([]);

        const client = new pg.Client({ connectionString: created.url });
        await client.connect();
        try {
          const applied = await client.query<{ n: number }>(
            'select count(*)::int as n from drizzle.__drizzle_migrations',
          );
          expect(applied.rows[0]!.n).toBe(journal.entries.length);
          const tables = await client.query<{ name: string }>(
            "select table_name as name from information_schema.tables where table_schema = 'public' order by 1",
          );
          expect(tables.rows.map((r) => r.name)).toEqual(schemaTables);
        } finally {
          await client.end();
        }
      } finally {
        await Promise.all(handles.map((h) => h.close()));
        await created.drop();
      }
    });
  },
);
