import { sql } from 'drizzle-orm';
import { queryRows, type Database } from '../db/client.js';

/** Every row of every table of the public schema, table by table, in a stable order. */
export type DatabaseSnapshot = Record<string, string[]>;

export async function snapshotDatabase(db: Database): Promise<DatabaseSnapshot> {
  const tables = await queryRows<{ table_name: string }>(
    db,
    sql`select table_name from information_schema.tables
        where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`,
  );
  const snapshot: DatabaseSnapshot = {};
  for (const { table_name: table } of tables) {
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
