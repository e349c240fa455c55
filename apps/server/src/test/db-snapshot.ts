import { sql } from 'drizzle-orm';
import { queryRows, type Database } from '../db/client.js';

/** Every row of every table of the public schema, table by table, in a stable order. */
export type DatabaseSnapshot = Record<string, string[]>;

async function tableNames(db: Database): Promise<string[]> {
  const rows = await queryRows<{ table_name: string }>(
    db,
    sql`select table_name from information_schema.tables
        where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`,
  );
  return rows.map((r) => r.table_name);
}

export async function snapshotDatabase(db: Database): Promise<DatabaseSnapshot> {
  const snapshot: DatabaseSnapshot = {};
  for (const table of await tableNames(db)) {
    const rows = await queryRows<Record<string, unknown>>(db, sql`select * from ${sql.identifier(table)}`);
    snapshot[table] = rows.map((row) => JSON.stringify(row)).sort();
  }
  return snapshot;
}

/** The tables whose rows differ between two snapshots, with what was added and removed. */
export function changedTables(before: DatabaseSnapshot, after: DatabaseSnapshot) {
  const changes: Record<string, { added: string[]; removed: string[] }> = {};
  for (const table of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const was = new Set(before[table] ?? []);
    const is = new Set(after[table] ?? []);
    const added = [...is].filter((row) => !was.has(row));
    const removed = [...was].filter((row) => !is.has(row));
    if (added.length || removed.length) changes[table] = { added, removed };
  }
  return changes;
}

/**
 * A digest of each table's rows, in one query: cheap enough to take around every request of a
 * fuzz run, and enough to tell which tables a request changed. The query is kept as a function in
 * a schema of its own (not `public`, so no snapshot sees it): PostgreSQL then parses and plans its
 * forty-odd selects once rather than on every call, about eight times faster on PGlite.
 */
export async function createTableDigest(db: Database) {
  const tables = await tableNames(db);
  const digests = sql.join(
    tables.map(
      (table) =>
        sql`select ${sql.raw(`'${table}'`)}::text, md5(coalesce(string_agg(t::text, '|' order by t::text), '')) from ${sql.identifier(table)} t`,
    ),
    sql` union all `,
  );
  await db.execute(sql`create schema if not exists sideport_test`);
  await db.execute(
    sql`create or replace function sideport_test.table_digest() returns table(name text, digest text)
        language sql stable as $body$ ${digests} $body$`,
  );
  return async (): Promise<Record<string, string>> =>
    Object.fromEntries(
      (
        await queryRows<{ name: string; digest: string }>(db, sql`select * from sideport_test.table_digest()`)
      ).map((r) => [r.name, r.digest]),
    );
}

export const differingTables = (a: Record<string, string>, b: Record<string, string>) =>
  Object.keys({ ...a, ...b }).filter((table) => a[table] !== b[table]);
